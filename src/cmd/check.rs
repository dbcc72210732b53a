//! `arcane-mcp check`: validates everything the server would load — the OpenAPI document, the
//! declaration files, the built-in and the operator's overlays, and the catalog they build — and
//! reports each problem as `FILE:LINE: what is wrong — how to fix`. Meant for the CI of an
//! operator's overlay repository: any error, or any overlay entry matching nothing (unless
//! allowed), makes it fail.

use crate::load::sources::Sources;
use arcane_catalog::{BuildInput, UnmatchedOverlay, build_catalog};

/// What a check found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Errors: the server would refuse to start (or a reload would be refused).
    pub errors: Vec<String>,
    /// The operator's overlay entries that match nothing in this spec.
    pub unmatched: Vec<UnmatchedOverlay>,
    /// How many built-in entries match nothing: written for another Arcane version, not the
    /// operator's to fix, so they never fail a check (`catalog` lists them).
    pub built_in_unmatched: usize,
    /// `Arcane VERSION: N actions, M overlay entries applied` when the catalog was built.
    pub summary: Option<String>,
    /// What the catalog directory adds (`note: …`), so that files found in the working
    /// directory are not loaded unseen.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether the check fails (`allow_unmatched` downgrades unmatched entries to warnings).
    pub fn failed(&self, allow_unmatched: bool) -> bool {
        !self.errors.is_empty() || (!allow_unmatched && !self.unmatched.is_empty())
    }

    /// The report as printed: one problem per line, then a closing line.
    pub fn text(&self, allow_unmatched: bool) -> String {
        let mut out = String::new();
        for e in &self.errors {
            out.push_str(e);
            out.push('\n');
        }
        for u in &self.unmatched {
            if allow_unmatched {
                out.push_str("warning: ");
            }
            out.push_str(&u.to_string());
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str("note: ");
            out.push_str(n);
            out.push('\n');
        }
        if let Some(s) = &self.summary {
            out.push_str(s);
            out.push('\n');
        }
        let verdict = if self.failed(allow_unmatched) {
            "FAILED"
        } else {
            "ok"
        };
        out.push_str(&format!(
            "check {verdict}: {} error(s), {} unmatched overlay entr{}{}\n",
            self.errors.len(),
            self.unmatched.len(),
            if self.unmatched.len() == 1 {
                "y"
            } else {
                "ies"
            },
            if allow_unmatched && !self.unmatched.is_empty() {
                " (allowed)"
            } else {
                ""
            }
        ));
        out
    }
}

/// Loads and builds everything as the server would, collecting every problem it can find.
pub fn check(sources: &Sources) -> CheckReport {
    let mut report = CheckReport {
        notes: sources
            .catalog_dir_use()
            .map(|u| u.text())
            .into_iter()
            .collect(),
        ..CheckReport::default()
    };
    let lines = |e: anyhow::Error| -> Vec<String> {
        format!("{e:#}").lines().map(str::to_string).collect()
    };
    let spec = sources
        .load_spec()
        .map_err(|e| report.errors.extend(lines(e)))
        .ok();
    let layers = sources
        .layers()
        .map_err(|e| report.errors.extend(lines(e)))
        .ok();
    let (Some(spec), Some(layers)) = (spec, layers) else {
        return report;
    };
    match build_catalog(BuildInput {
        spec: &spec,
        layers: &layers,
    }) {
        Ok(cat) => {
            report.summary = Some(format!(
                "Arcane {} ({}): {} actions, {} overlay entries applied",
                cat.arcane_version,
                cat.spec_origin,
                cat.actions.len(),
                cat.applied_overlays
            ));
            // Notes, not failures: an unclassed write is asked (the safe default), and a
            // reclass is the operator's to make; both are said so that neither goes unseen.
            let unclassed: Vec<&str> = cat.unclassed().map(|a| a.id.as_str()).collect();
            if !unclassed.is_empty() {
                report.notes.push(format!(
                    "{} unclassed write{} (asked until an overlay gives {} an `impact`; docs/security.md#impact-classes): {}",
                    unclassed.len(),
                    if unclassed.len() == 1 { "" } else { "s" },
                    if unclassed.len() == 1 { "it" } else { "them" },
                    unclassed.join(", ")
                ));
            }
            for r in &cat.reclassed {
                report.notes.push(r.to_string());
            }
            let (built_in, own): (Vec<_>, Vec<_>) = cat
                .unmatched_overlays
                .into_iter()
                .partition(UnmatchedOverlay::is_built_in);
            report.unmatched = own;
            report.built_in_unmatched = built_in.len();
            if !built_in.is_empty() {
                report.notes.push(format!(
                    "{} built-in overlay entr{} for actions this Arcane spec lacks (written for another Arcane version; nothing to fix, not counted) — `arcane-mcp catalog` lists them",
                    built_in.len(),
                    if built_in.len() == 1 { "y is" } else { "ies are" }
                ));
            }
        }
        Err(e) => report.errors.extend(lines(e)),
    }
    report
}

/// `arcane-mcp check`: exit status 1 when the check finds a problem (every problem is
/// printed on stdout).
pub fn run(
    settings: &crate::config::ServeArgs,
    args: &crate::config::CheckArgs,
) -> anyhow::Result<std::process::ExitCode> {
    let url = settings.spec_url()?;
    let report = check(&Sources::from_args(&settings.source, url.as_deref()));
    crate::cmd::print::write_stdout(&report.text(args.allow_unmatched))?;
    Ok(if report.failed(args.allow_unmatched) {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}
