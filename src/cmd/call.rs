//! `arcane-mcp call`: one action against the configured Arcane, through the server's own
//! `tools/call` entry point, shaped as the active surface's call.

use std::process::ExitCode;

use anyhow::{Result, bail};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::app::{self, App};
use crate::cmd::print::print;
use crate::config::{CallArgs, ServeArgs};
use crate::load::snapshot::Snapshot;
use crate::load::sources::Sources;
use crate::surface::{self, EXECUTE_TOOL, Surface};
use arcane_catalog::Catalog;
use arcane_engine::CallContext;

/// `arcane-mcp call`: one action against the configured Arcane.
pub fn run(settings: &ServeArgs, args: &CallArgs) -> Result<ExitCode> {
    let (base_url, auth) = crate::app::connection(settings)?;
    let sources = Sources::from_args(&settings.source, Some(&base_url));
    let app = App::build(settings, sources, base_url, auth)?;
    let result = app::runtime()?.block_on(call(&app, args))?;
    print(&result, args.json)
}

/// Runs one call through the MCP server's own entry point, shaped as the active surface's
/// `tools/call`.
pub async fn call(app: &App, args: &CallArgs) -> Result<CallToolResult> {
    let params = params(&app.live.load().catalog, &args.action, args)?;
    Ok(call_with(app, &args.action, params, args.confirm).await)
}

/// [`call`] of `action` with parameters already made (`arcane-mcp undo` runs a recorded call).
pub async fn call_with(
    app: &App,
    action: &str,
    params: Map<String, Value>,
    confirm: bool,
) -> CallToolResult {
    let (tool, arguments) = tool_call(&app.live.load(), action, params, confirm);
    // Progress of long calls (pull, build, up) goes to stderr as it comes, as a client with a
    // progress token would get it.
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<arcane_engine::Progress>(arcane_engine::PROGRESS_QUEUE);
    let printer = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            if let Some(m) = p.message {
                eprintln!("[{}] {m}", p.progress);
            }
        }
    });
    let ctx = CallContext {
        progress: Some(tx),
        ..CallContext::default()
    };
    let mut result = app.server().call(&tool, Some(&arguments), &ctx).await;
    drop(ctx);
    let _ = printer.await;
    if !confirm {
        for_the_shell(&mut result);
    }
    result
}

/// A person at a shell confirms with a flag, not with the model's `"confirm": true`: the
/// refusal of an unconfirmed call says so in their terms.
fn for_the_shell(result: &mut CallToolResult) {
    if result.is_error != Some(true) {
        return;
    }
    for c in &mut result.content {
        if let rmcp::model::ContentBlock::Text(t) = c
            && t.text.contains("so it needs \"confirm\": true")
        {
            t.text = t
                .text
                .replace(
                    "so it needs \"confirm\": true",
                    "so it runs only with --confirm",
                )
                .replace(
                    "Ask the user, then call again with confirm set to true.",
                    "Add --confirm to the command once you are sure.",
                );
        }
    }
}

/// The parameters of a call: `--params` JSON, then each `--param NAME=VALUE`. A value is JSON
/// when the action's parameter does not take a string (`limit=5`, `force=true`), text
/// otherwise, so that IDs like `123` stay strings.
pub fn params(catalog: &Catalog, action: &str, args: &CallArgs) -> Result<Map<String, Value>> {
    let mut out = match &args.params {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!("--params must be a JSON object, e.g. --params '{{\"limit\": 5}}'"),
            Err(e) => bail!("--params is not valid JSON ({e}); e.g. --params '{{\"limit\": 5}}'"),
        },
    };
    let action = catalog.resolve(action);
    for entry in &args.param {
        let Some((name, raw)) = entry.split_once('=') else {
            bail!("--param {entry:?} needs NAME=VALUE, e.g. --param containerId=web-1");
        };
        let name = name.trim();
        if name.is_empty() {
            bail!("--param {entry:?} has no name before '='");
        }
        let typed = action
            .and_then(|a| a.param(name))
            .is_some_and(|p| !takes_string(&p.schema));
        let value = if typed {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
        } else {
            Value::String(raw.to_string())
        };
        out.insert(name.to_string(), value);
    }
    Ok(out)
}

/// Whether a parameter's schema takes a string (or declares no type).
fn takes_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        _ => true,
    }
}

/// The `tools/call` (tool name, arguments) that runs `action` on the snapshot's surface. A name
/// the catalog does not know is passed on as given, so the answer is the one a model would get.
pub fn tool_call(
    snap: &Snapshot,
    action: &str,
    params: Map<String, Value>,
    confirm: bool,
) -> (String, Map<String, Value>) {
    let resolved = snap.catalog.resolve(action);
    let wrapped = |name: &str| {
        let mut m = Map::new();
        m.insert("action".into(), Value::String(name.to_string()));
        m.insert("params".into(), Value::Object(params.clone()));
        m.insert("confirm".into(), Value::Bool(confirm));
        m
    };
    match (snap.surface, resolved) {
        (Surface::Dynamic, _) => (EXECUTE_TOOL.to_string(), wrapped(action)),
        (Surface::Meta, Some(a)) => (surface::tool_name(Surface::Meta, a), wrapped(&a.name)),
        (Surface::Meta, None) => {
            let domain = action.split('.').next().unwrap_or(action);
            (format!("arcane_{domain}"), wrapped(action))
        }
        (Surface::Individual, found) => {
            let tool = found
                .map(|a| surface::tool_name(Surface::Individual, a))
                .unwrap_or_else(|| action.replace('.', "_"));
            let mut args = params.clone();
            if confirm {
                args.entry("confirm").or_insert(Value::Bool(true));
            }
            (tool, args)
        }
    }
}
