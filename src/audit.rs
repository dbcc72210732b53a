//! `arcane-mcp audit-tokens`: what each surface's tool definitions cost in a model's context.
//!
//! Measured as a client passes them to a model: each tool's name, description and input schema
//! (compact JSON); titles, annotations, icons and output schemas are not counted. Tokens are
//! o200k (tiktoken-rs embeds its BPE, so this works offline).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::config::Surface;
use crate::policy::Policy;
use crate::surface;

/// Largest accepted drift from the baseline, as a fraction.
pub const MAX_DRIFT: f64 = 0.15;

/// The figures of one surface.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceFigures {
    pub surface: String,
    pub tools: usize,
    pub bytes: usize,
    pub tokens: usize,
    /// Per served action (the catalog's size is what the surface must make reachable).
    pub bytes_per_action: f64,
    pub tokens_per_action: f64,
}

/// The figures of every surface over one catalog.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    pub arcane_version: String,
    pub actions: usize,
    pub surfaces: Vec<SurfaceFigures>,
}

/// Measures every surface over a catalog (nothing withdrawn).
pub fn measure(catalog: &Catalog) -> Result<Audit> {
    let bpe = tiktoken_rs::o200k_base().context("loading the o200k tokenizer")?;
    let policy = Policy::default();
    let actions = catalog.actions.len();
    let mut surfaces = Vec::new();
    for s in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        let tools = surface::tools(s, catalog, &policy);
        let (mut bytes, mut tokens) = (0, 0);
        for t in &tools {
            let schema = serde_json::to_string(t.input_schema.as_ref())?;
            let text = format!(
                "{}\n{}\n{}",
                t.name,
                t.description.as_deref().unwrap_or(""),
                schema
            );
            bytes += t.name.len() + t.description.as_deref().map_or(0, str::len) + schema.len();
            tokens += bpe.encode_ordinary(&text).len();
        }
        surfaces.push(SurfaceFigures {
            surface: s.as_str().into(),
            tools: tools.len(),
            bytes,
            tokens,
            bytes_per_action: round1(bytes as f64 / actions.max(1) as f64),
            tokens_per_action: round1(tokens as f64 / actions.max(1) as f64),
        });
    }
    Ok(Audit {
        arcane_version: catalog.arcane_version.clone(),
        actions,
        surfaces,
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// A table of the figures.
pub fn table(a: &Audit) -> String {
    let mut out = format!(
        "Tool definitions (name + description + input schema), Arcane {}, {} actions\n\n\
         | surface | tools | bytes | o200k tokens | bytes/action | tokens/action |\n\
         |---|---:|---:|---:|---:|---:|\n",
        a.arcane_version, a.actions
    );
    for s in &a.surfaces {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            s.surface, s.tools, s.bytes, s.tokens, s.bytes_per_action, s.tokens_per_action
        ));
    }
    out
}

/// Compares with a baseline: every figure that drifted more than [`MAX_DRIFT`].
pub fn drift(now: &Audit, base: &Audit) -> Vec<String> {
    let mut out = Vec::new();
    for b in &base.surfaces {
        let Some(n) = now.surfaces.iter().find(|s| s.surface == b.surface) else {
            out.push(format!("{}: missing from the measurement", b.surface));
            continue;
        };
        let figures = [
            ("bytes", n.bytes as f64, b.bytes as f64),
            ("tokens", n.tokens as f64, b.tokens as f64),
            ("bytes/action", n.bytes_per_action, b.bytes_per_action),
            ("tokens/action", n.tokens_per_action, b.tokens_per_action),
        ];
        for (name, now_v, base_v) in figures {
            let rel = if base_v == 0.0 {
                if now_v == 0.0 { 0.0 } else { 1.0 }
            } else {
                (now_v - base_v).abs() / base_v
            };
            if rel > MAX_DRIFT {
                out.push(format!(
                    "{} {name}: {now_v} vs baseline {base_v} ({:+.1}%)",
                    b.surface,
                    (now_v - base_v) / base_v.max(f64::MIN_POSITIVE) * 100.0
                ));
            }
        }
    }
    out
}

/// `audit-tokens`: measure, print, then write or check the baseline.
pub fn run(catalog: &Catalog, baseline: Option<&Path>, write: bool, json: bool) -> Result<()> {
    let audit = measure(catalog)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&audit)?);
    } else {
        print!("{}", table(&audit));
    }
    let Some(path) = baseline else {
        if write {
            bail!("--write-baseline needs --baseline PATH");
        }
        return Ok(());
    };
    if write {
        std::fs::write(path, serde_json::to_string_pretty(&audit)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("baseline written to {}", path.display());
        return Ok(());
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let base: Audit =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let drifted = drift(&audit, &base);
    if drifted.is_empty() {
        eprintln!(
            "within {:.0}% of the baseline {}",
            MAX_DRIFT * 100.0,
            path.display()
        );
        Ok(())
    } else {
        bail!(
            "tool-definition sizes drifted more than {:.0}% from {}:\n  {}\n(if intended, refresh it with --write-baseline)",
            MAX_DRIFT * 100.0,
            path.display(),
            drifted.join("\n  ")
        )
    }
}
