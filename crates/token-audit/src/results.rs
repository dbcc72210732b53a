//! What the main read results cost a model: the text it reads against the compact JSON of the
//! result's `structuredContent` (what a client that forwards the JSON would pass instead), on
//! the demo world.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use arcane_mcp::config::ServeArgs;

use crate::baseline::drifted;
use crate::tokens::tokens;

/// What one read action's result costs.
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

/// The figures of one result, from its text blocks (the value's rendering, then its next
/// steps) and its `structuredContent`.
fn figures(action: &str, kind: &str, text: &str, structured: Option<&Value>) -> ResultFigures {
    let structured = structured.map_or_else(String::new, Value::to_string);
    let (value, next_steps) = text.split_at(text.find(NEXT_STEPS).unwrap_or(text.len()));
    let (text_tokens, structured_tokens) = (tokens(value), tokens(&structured));
    ResultFigures {
        action: action.into(),
        kind: kind.into(),
        text_tokens,
        next_steps_tokens: tokens(next_steps),
        structured_tokens,
        ratio: round2(text_tokens as f64 / structured_tokens.max(1) as f64),
    }
}

/// Runs the main read actions against the in-process simulator's demo world (on the surface
/// the settings name, as `arcane-mcp demo call` does) and measures their results.
pub fn measure_results(serve: &ServeArgs) -> Result<ResultsAudit> {
    let runtime = arcane_mcp::app::runtime()?;
    let (sim, app) = arcane_mcp::cmd::demo::simulator::start(serve, &runtime)?;
    let server = app.server();
    let arcane_version = app.live.load().catalog.arcane_version.clone();
    // One call as a model makes it: its figures, and its structuredContent.
    let call = |action: &str, kind: &str, params: Map<String, Value>| {
        let (tool, args) =
            arcane_mcp::cmd::call::tool_call(&app.live.load(), action, params, false);
        let result = runtime.block_on(server.call(
            &tool,
            Some(&args),
            &arcane_engine::CallContext::default(),
        ));
        let text = arcane_mcp::present::blocks::result_text(&result);
        if result.is_error == Some(true) {
            bail!("measuring {action}: the call failed: {text}");
        }
        let structured = result.structured_content;
        Ok((
            figures(action, kind, &text, structured.as_ref()),
            structured,
        ))
    };
    let mut results = Vec::new();
    let outcome = (|| -> Result<()> {
        for (list, get, param) in RESULT_ACTIONS {
            let (listed, structured) = call(list, "list", Map::new())?;
            results.push(listed);
            let first = structured
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
            let params = Map::from_iter([(param.to_string(), Value::String(id))]);
            results.push(call(get, "object", params)?.0);
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
/// [`crate::baseline::MAX_DRIFT`], and every action missing from the measurement.
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
