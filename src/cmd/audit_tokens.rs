//! `arcane-mcp audit-tokens`: what each surface's tool definitions cost in a model's context.
//!
//! Measured as a client passes them to a model: each tool's name, description and input schema
//! (compact JSON); titles, annotations, icons and output schemas are not counted. Tokens are
//! o200k (tiktoken-rs embeds its BPE, so this works offline).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::surface;
use crate::surface::Surface;
use arcane_catalog::Catalog;
use arcane_catalog::Policy;

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
            if let Some(line) = drifted(&b.surface, name, now_v, base_v) {
                out.push(line);
            }
        }
    }
    out
}

/// A line when `now` is more than [`MAX_DRIFT`] away from `base`.
fn drifted(subject: &str, name: &str, now: f64, base: f64) -> Option<String> {
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

/// `audit-tokens`: measure, print, then write or check the baseline.
pub fn definitions(
    catalog: &Catalog,
    baseline: Option<&Path>,
    write: bool,
    json: bool,
) -> Result<()> {
    let audit = measure(catalog)?;
    crate::cmd::print::write_stdout(&if json {
        serde_json::to_string_pretty(&audit)? + "\n"
    } else {
        table(&audit)
    })?;
    check_baseline(&audit, baseline, write, "tool-definition sizes", drift)
}

/// Writes the figures to the baseline, or compares them with it.
fn check_baseline<T: Serialize + serde::de::DeserializeOwned>(
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

/// What one read action's result costs: the text a model reads against the compact JSON of its
/// `structuredContent` (what a client that forwards the JSON would pass instead).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResultFigures {
    pub action: String,
    /// `object` or `list`.
    pub kind: String,
    /// The rendering of the value (the text without its closing next steps).
    pub text_tokens: usize,
    /// The closing next steps, which carry no field of the value.
    pub next_steps_tokens: usize,
    pub structured_tokens: usize,
    /// Text tokens over structured tokens.
    pub ratio: f64,
}

/// The result figures of the main read actions on the demo world.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResultsAudit {
    pub arcane_version: String,
    pub results: Vec<ResultFigures>,
}

/// The main read actions: each list, and the full item of its first row (`get` action and the
/// parameter that names the item).
pub const RESULT_ACTIONS: [(&str, &str, &str); 6] = [
    ("container.list", "container.get", "containerId"),
    ("image.list", "image.get", "imageId"),
    ("project.list", "project.get", "projectId"),
    ("volume.list", "volume.get", "volumeName"),
    ("network.list", "network.get", "networkId"),
    ("environment.list", "environment.get", "environmentId"),
];

/// How the closing next steps start in a result's text (`present::next_steps`).
const NEXT_STEPS: &str = "\n\n**Next steps**\n";

/// Tokens of a result's text blocks (the value's rendering, then its next steps) and of its
/// compact `structuredContent`.
pub fn result_tokens(
    bpe: &tiktoken_rs::CoreBPE,
    result: &rmcp::model::CallToolResult,
) -> Result<(usize, usize, usize)> {
    let text = crate::present::result_text(result);
    if result.is_error == Some(true) {
        bail!("the call failed: {text}");
    }
    let structured = match &result.structured_content {
        Some(v) => serde_json::to_string(v)?,
        None => String::new(),
    };
    let (value, next_steps) = match text.find(NEXT_STEPS) {
        Some(i) => text.split_at(i),
        None => (text.as_str(), ""),
    };
    Ok((
        bpe.encode_ordinary(value).len(),
        bpe.encode_ordinary(next_steps).len(),
        bpe.encode_ordinary(&structured).len(),
    ))
}

/// Runs the main read actions against the in-process simulator's demo world (the dynamic
/// surface, as `demo call` does) and measures their results.
#[cfg(feature = "demo")]
pub fn measure_results(serve: &crate::config::ServeArgs) -> Result<ResultsAudit> {
    use serde_json::{Map, Value};

    let bpe = tiktoken_rs::o200k_base().context("loading the o200k tokenizer")?;
    let runtime = crate::app::runtime()?;
    let (sim, app) = crate::cmd::demo::simulator::start(serve, &runtime)?;
    let server = app.server();
    let arcane_version = app.live.load().catalog.arcane_version.clone();
    let call = |action: &str, params: Map<String, Value>| {
        let (tool, args) = crate::cmd::call::tool_call(&app.live.load(), action, params, false);
        runtime.block_on(server.call(&tool, Some(&args), &arcane_engine::CallContext::default()))
    };
    let mut results = Vec::new();
    let mut figures = |action: &str, kind: &str, r: &rmcp::model::CallToolResult| -> Result<()> {
        let (text_tokens, next_steps_tokens, structured_tokens) =
            result_tokens(&bpe, r).with_context(|| format!("measuring {action}"))?;
        results.push(ResultFigures {
            action: action.into(),
            kind: kind.into(),
            text_tokens,
            next_steps_tokens,
            structured_tokens,
            ratio: round2(text_tokens as f64 / structured_tokens.max(1) as f64),
        });
        Ok(())
    };
    let outcome = (|| -> Result<()> {
        for (list, get, param) in RESULT_ACTIONS {
            let listed = call(list, Map::new());
            figures(list, "list", &listed)?;
            let first = listed
                .structured_content
                .as_ref()
                .and_then(|v| v.get("items"))
                .and_then(|items| items.get(0))
                .and_then(|item| item.get("id").or_else(|| item.get("name")))
                .cloned()
                .with_context(|| format!("{list} returned no item to read with {get}"))?;
            let id = match first {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let mut params = Map::new();
            params.insert(param.into(), Value::String(id));
            figures(get, "object", &call(get, params))?;
        }
        Ok(())
    })();
    runtime.block_on(sim.shutdown());
    outcome?;
    Ok(ResultsAudit {
        arcane_version,
        results,
    })
}

#[cfg(not(feature = "demo"))]
pub fn measure_results(_: &crate::config::ServeArgs) -> Result<ResultsAudit> {
    bail!(
        "audit-tokens --results runs the demo world, and this arcane-mcp was built without the \
         `demo` feature; rebuild with default features"
    )
}

#[cfg(feature = "demo")]
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A table of the result figures.
pub fn results_table(a: &ResultsAudit) -> String {
    let mut out = format!(
        "Results on the demo world (o200k tokens of the text, without its next steps, vs the \
         compact structuredContent), Arcane {}\n\n\
         | action | kind | text | next steps | JSON | text/JSON |\n\
         |---|---|---:|---:|---:|---:|\n",
        a.arcane_version
    );
    for r in &a.results {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.action, r.kind, r.text_tokens, r.next_steps_tokens, r.structured_tokens, r.ratio
        ));
    }
    out
}

/// Compares result figures with a baseline: every token count that drifted more than
/// [`MAX_DRIFT`], and every action missing from the measurement.
pub fn results_drift(now: &ResultsAudit, base: &ResultsAudit) -> Vec<String> {
    let mut out = Vec::new();
    for b in &base.results {
        let Some(n) = now.results.iter().find(|r| r.action == b.action) else {
            out.push(format!("{}: missing from the measurement", b.action));
            continue;
        };
        for (name, now_v, base_v) in [
            ("text tokens", n.text_tokens, b.text_tokens),
            ("JSON tokens", n.structured_tokens, b.structured_tokens),
        ] {
            if let Some(line) = drifted(&b.action, name, now_v as f64, base_v as f64) {
                out.push(line);
            }
        }
    }
    out
}

/// `audit-tokens --results`: measure, print, then write or check the baseline.
pub fn results(
    serve: &crate::config::ServeArgs,
    baseline: Option<&Path>,
    write: bool,
    json: bool,
) -> Result<()> {
    let audit = measure_results(serve)?;
    crate::cmd::print::write_stdout(&if json {
        serde_json::to_string_pretty(&audit)? + "\n"
    } else {
        results_table(&audit)
    })?;
    check_baseline(&audit, baseline, write, "result sizes", results_drift)
}

/// `arcane-mcp audit-tokens [--results]`.
pub fn run(
    settings: &crate::config::ServeArgs,
    args: &crate::config::AuditArgs,
) -> Result<std::process::ExitCode> {
    if args.results {
        results(
            settings,
            args.baseline.as_deref(),
            args.write_baseline,
            args.json,
        )?;
    } else {
        let url = settings.spec_url()?;
        let cat =
            crate::load::sources::Sources::from_args(&settings.source, url.as_deref()).build()?;
        definitions(
            &cat,
            args.baseline.as_deref(),
            args.write_baseline,
            args.json,
        )?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}
