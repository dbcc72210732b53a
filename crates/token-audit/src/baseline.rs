//! The committed baselines (`benches/*-baseline.json`): written, or compared with a drift
//! allowance.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest accepted drift from the baseline, as a fraction.
pub const MAX_DRIFT: f64 = 0.15;

/// A line when `now` is more than [`MAX_DRIFT`] away from `base`.
pub fn drifted(subject: &str, name: &str, now: f64, base: f64) -> Option<String> {
    let rel = if base == 0.0 {
        if now == 0.0 { 0.0 } else { 1.0 }
    } else {
        (now - base).abs() / base
    };
    (rel > MAX_DRIFT).then(|| {
        format!(
            "{subject} {name}: {now} vs baseline {base} ({:+.1}%)",
            (now - base) / base.max(f64::MIN_POSITIVE) * 100.0
        )
    })
}

/// Writes the figures to the baseline, or compares them with it.
pub fn check<T: Serialize + DeserializeOwned>(
    figures: &T,
    baseline: Option<&Path>,
    write: bool,
    what: &str,
    drift: fn(&T, &T) -> Vec<String>,
) -> Result<()> {
    let Some(path) = baseline else {
        if write {
            bail!("--write-baseline needs --baseline PATH");
        }
        return Ok(());
    };
    if write {
        std::fs::write(path, serde_json::to_string_pretty(figures)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("baseline written to {}", path.display());
        return Ok(());
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let base: T =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let drifted = drift(figures, &base);
    if drifted.is_empty() {
        eprintln!(
            "within {:.0}% of the baseline {}",
            MAX_DRIFT * 100.0,
            path.display()
        );
        Ok(())
    } else {
        bail!(
            "{what} drifted more than {:.0}% from {}:\n  {}\n(if intended, refresh it with --write-baseline)",
            MAX_DRIFT * 100.0,
            path.display(),
            drifted.join("\n  ")
        )
    }
}
