//! What each surface's tool definitions cost in a model's context.
//!
//! Measured as a client passes them to a model: each tool's name, description and input schema
//! (compact JSON); titles, annotations, icons and output schemas are not counted.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use arcane_catalog::{Catalog, Policy};
use arcane_mcp::surface::{self, Surface};

use crate::baseline::drifted;
use crate::tokens::tokens;

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
    let policy = Policy::default();
    let actions = catalog.actions.len();
    let mut surfaces = Vec::new();
    for s in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        let tools = surface::tools(s, catalog, &policy);
        let (mut bytes, mut count) = (0, 0);
        for t in &tools {
            let schema = serde_json::to_string(t.input_schema.as_ref())?;
            let description = t.description.as_deref().unwrap_or("");
            bytes += t.name.len() + description.len() + schema.len();
            count += tokens(&format!("{}\n{description}\n{schema}", t.name));
        }
        surfaces.push(SurfaceFigures {
            surface: s.as_str().into(),
            tools: tools.len(),
            bytes,
            tokens: count,
            bytes_per_action: round1(bytes as f64 / actions.max(1) as f64),
            tokens_per_action: round1(count as f64 / actions.max(1) as f64),
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

/// Compares with a baseline: every figure that drifted more than [`crate::baseline::MAX_DRIFT`].
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
            if let Some(line) = drifted(&b.surface, name, now_v, base_v) {
                out.push(line);
            }
        }
    }
    out
}
