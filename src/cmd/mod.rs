//! The operator's one-shot commands, `call` and `find` (also under `demo`), and the `demo`
//! server. Each goes through the code an MCP client reaches: a call is handed to
//! [`ArcaneServer::call`](crate::mcp::handler::ArcaneServer::call) as the `tools/call` of the active
//! surface, a search is parsed as an `arcane_find_action` call and answered by
//! [`crate::present::find::find`]. What is printed is the text a model gets.

pub mod audit_tokens;
pub mod catalog;
pub mod check;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::app::{self, App};
use crate::config::{CallArgs, DemoArgs, DemoCommand, FindArgs, ServeArgs, Surface};
use crate::present::error_result;
use crate::load::reload::Sources;
use crate::load::snapshot::Snapshot;
use crate::surface::{self, Call, EXECUTE_TOOL, FIND_TOOL};
use arcane_catalog::Catalog;
use arcane_engine::CallContext;

/// Where `demo` looks for Arcane's OpenAPI document when neither `--spec` nor
/// `ARCANE_MCP_SPEC` names one, before it serves the built-in one: the catalog directory, as
/// the server does (an operator who pinned a spec there gets the demo of that spec).
pub fn demo_spec_candidates(catalog_dir: &Path) -> Vec<PathBuf> {
    vec![
        catalog_dir.join("openapi.json"),
        catalog_dir.join("openapi.yaml"),
    ]
}

/// The document `demo` serves, to the MCP side and to its simulator alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoSpec {
    /// `--spec` / `ARCANE_MCP_SPEC`, or a candidate of [`demo_spec_candidates`] that exists.
    File(PathBuf),
    /// Arcane 2.8.0's document, built into the binary (`arcane_sim::builtin_spec`): the demo
    /// needs no file, so it runs from any directory.
    Builtin,
}

impl std::fmt::Display for DemoSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoSpec::File(p) => write!(f, "{}", p.display()),
            DemoSpec::Builtin => f.write_str(demo::BUILTIN_NAME),
        }
    }
}

/// The spec `demo` serves: `--spec` / `ARCANE_MCP_SPEC`, else the first candidate that exists,
/// else the built-in document.
pub fn demo_spec(args: &ServeArgs) -> DemoSpec {
    if let Some(p) = &args.source.spec {
        return DemoSpec::File(p.clone());
    }
    demo_spec_candidates(&args.source.catalog_dir)
        .into_iter()
        .find(|p| p.is_file())
        .map_or(DemoSpec::Builtin, DemoSpec::File)
}

/// The catalog sources of `demo`: the resolved spec, never a fetch from Arcane.
fn demo_sources(args: &ServeArgs) -> Result<(DemoSpec, Sources)> {
    let spec = demo_spec(args);
    let mut source = args.source.clone();
    source.spec = match &spec {
        DemoSpec::File(p) => Some(p.clone()),
        DemoSpec::Builtin => None,
    };
    let mut sources = source.sources(None);
    if spec == DemoSpec::Builtin {
        sources.spec.builtin = Some(demo::builtin()?);
    }
    Ok((spec, sources))
}

/// Builds the snapshot a search needs (no Arcane connection).
fn snapshot(args: &ServeArgs, sources: &Sources) -> Result<Snapshot> {
    // The find tool exists on the dynamic surface; results name actions as it does.
    let cache = args.catalog_cache();
    let (catalog, _) = crate::load::cache::load_or_build(sources, cache.as_ref())?;
    Snapshot::build(catalog, Surface::Dynamic, app::policy(args))
}

/// `arcane-mcp call`: one action against the configured Arcane.
pub fn run_call(settings: &ServeArgs, args: &CallArgs) -> Result<ExitCode> {
    let (base_url, auth) = crate::connection(settings)?;
    let sources = settings.source.sources(Some(&base_url));
    let app = App::build(settings, sources, base_url, auth)?;
    let result = app::runtime()?.block_on(call(&app, args))?;
    print(&result, args.json)
}

/// `arcane-mcp find`: a search of the catalog.
pub fn run_find(settings: &ServeArgs, args: &FindArgs) -> Result<ExitCode> {
    let url = settings.spec_url()?;
    let sources = settings.source.sources(url.as_deref());
    let snap = snapshot(settings, &sources)?;
    print(&find(&snap, &args.words, args.limit), args.json)
}

/// `arcane-mcp demo [call|find]`.
pub fn run_demo(settings: &ServeArgs, args: &DemoArgs) -> Result<ExitCode> {
    match &args.command {
        Some(DemoCommand::Find(f)) => {
            let snap = snapshot(settings, &demo_sources(settings)?.1)?;
            print(&find(&snap, &f.words, f.limit), f.json)
        }
        Some(DemoCommand::Call(c)) => demo::call(settings, c),
        None => demo::serve(settings).map(|()| ExitCode::SUCCESS),
    }
}

/// Runs one call through the MCP server's own entry point, shaped as the active surface's
/// `tools/call`.
pub async fn call(app: &App, args: &CallArgs) -> Result<CallToolResult> {
    let (tool, arguments) = {
        let snap = app.live.load();
        let params = params(&snap.catalog, &args.action, args)?;
        tool_call(&snap, &args.action, params, args.confirm)
    };
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
    let result = app.server().call(&tool, Some(&arguments), &ctx).await;
    drop(ctx);
    let _ = printer.await;
    Ok(result)
}

/// A search, parsed as an `arcane_find_action` call.
pub fn find(snap: &Snapshot, words: &[String], limit: usize) -> CallToolResult {
    let mut args = Map::new();
    args.insert("query".into(), Value::String(words.join(" ")));
    args.insert("limit".into(), Value::from(limit));
    match surface::parse_call(Surface::Dynamic, &snap.catalog, FIND_TOOL, Some(&args)) {
        Ok(Call::Find { query, limit }) => crate::present::find::find(snap, &query, limit),
        Ok(Call::Execute { .. }) => error_result(format!("{FIND_TOOL} did not parse as a search")),
        Err(text) => error_result(text),
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

/// Prints a result as the model gets it: its text blocks (or structuredContent with `json`)
/// on stdout; other blocks are named on stderr. Exit status 1 when the result is an error.
pub fn print(result: &CallToolResult, json: bool) -> Result<ExitCode> {
    let mut text = String::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&t.text);
            }
            ContentBlock::ResourceLink(r) => {
                eprintln!("(the result also links the resource {})", r.uri)
            }
            ContentBlock::Resource(_) => {
                eprintln!("(the result also embeds a resource for the user)")
            }
            _ => eprintln!("(the result also carries a media block)"),
        }
    }
    let out = match (&result.structured_content, json) {
        (Some(sc), true) => serde_json::to_string_pretty(sc)?,
        _ => text,
    };
    write_stdout(&format!("{}\n", out.trim_end_matches('\n')))?;
    Ok(if result.is_error == Some(true) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes what a command prints to stdout: every subcommand's output goes through here. A
/// reader that stopped early (`arcane-mcp catalog --json | head`) closes the pipe; that is not
/// a failure of the command, which ends quietly (`println!` would panic on it).
pub fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => bail!("writing to stdout: {e}"),
        _ => Ok(()),
    }
}

/// The simulator side of `demo` (only in builds with the `demo` feature).
#[cfg(feature = "demo")]
pub(crate) mod demo {
    use super::*;

    /// How the banner and logs name the built-in document.
    pub const BUILTIN_NAME: &str = arcane_sim::BUILTIN_SPEC_NAME;

    /// The built-in Arcane 2.8.0 document, as a catalog source.
    pub fn builtin() -> Result<crate::load::spec::Builtin> {
        Ok(crate::load::spec::Builtin {
            name: arcane_sim::BUILTIN_SPEC_NAME,
            identity: arcane_sim::BUILTIN_SPEC_DEFLATED,
            text: arcane_sim::builtin_spec,
        })
    }

    /// A simulator with its demo world on a free loopback port, with a key of this run.
    async fn start_sim(spec: &DemoSpec) -> Result<arcane_sim::RunningSim> {
        arcane_engine::ensure_crypto_provider();
        let mut config = match spec {
            DemoSpec::File(path) => arcane_sim::SimConfig::new(path),
            DemoSpec::Builtin => arcane_sim::SimConfig::builtin(),
        };
        config.api_key = demo_key();
        arcane_sim::start(config)
            .await
            .map_err(|e| anyhow::anyhow!("starting the demo simulator: {e:#}"))
    }

    /// A key only this process knows, so that other local programs cannot drive the demo.
    fn demo_key() -> String {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("demo-{:016x}", h.finish())
    }

    fn app_against(
        sim: &arcane_sim::RunningSim,
        args: &ServeArgs,
        sources: Sources,
    ) -> Result<App> {
        let auth = arcane_engine::Auth::ApiKey(sim.api_key().to_string());
        App::build(args, sources, sim.base_url(), auth)
    }

    /// The simulator with its demo world and an app against it, as `demo` serves them.
    pub fn start(
        serve: &ServeArgs,
        runtime: &tokio::runtime::Runtime,
    ) -> Result<(arcane_sim::RunningSim, App)> {
        let (spec, sources) = demo_sources(serve)?;
        let sim = runtime.block_on(start_sim(&spec))?;
        let app = app_against(&sim, serve, sources)?;
        Ok((sim, app))
    }

    pub fn call(settings: &ServeArgs, args: &CallArgs) -> Result<ExitCode> {
        let runtime = app::runtime()?;
        let (sim, app) = start(settings, &runtime)?;
        let result = runtime.block_on(super::call(&app, args));
        runtime.block_on(sim.shutdown());
        print(&result?, args.json)
    }

    pub fn serve(args: &ServeArgs) -> Result<()> {
        let (spec, sources) = demo_sources(args)?;
        let runtime = app::runtime()?;
        let sim = runtime.block_on(start_sim(&spec))?;
        let app = app_against(&sim, args, sources)?;
        banner(&app, &spec, args);
        let served = match args.http.transport {
            crate::config::Transport::Http => crate::transport::http::Settings::from_args(&args.http)
                .and_then(|settings| runtime.block_on(crate::transport::http::serve(app, settings))),
            crate::config::Transport::Stdio => runtime.block_on(app.serve_stdio()),
        };
        runtime.block_on(sim.shutdown());
        served
    }

    fn banner(app: &App, spec: &DemoSpec, args: &ServeArgs) {
        let (format, transport, listen) = (args.log_format, args.http.transport, args.http.listen);
        let snap = app.live.load();
        let what = format!(
            "DEMO: serving MCP on {} against a SIMULATED Arcane {} (in-process, a demo Docker \
             world in memory; nothing real is touched). Spec: {}; {} actions on the {} surface.",
            match transport {
                crate::config::Transport::Stdio => "stdio".to_string(),
                crate::config::Transport::Http => format!("http://{listen}/mcp"),
            },
            snap.catalog.arcane_version,
            spec,
            snap.catalog.actions.len(),
            snap.surface.as_str(),
        );
        match format {
            crate::config::LogFormat::Json => tracing::info!(demo = true, "{what}"),
            crate::config::LogFormat::Text => eprintln!(
                "arcane-mcp {what}\n  Add `arcane-mcp demo` to an MCP client as a stdio server, \
                 or try it in a terminal:\n    arcane-mcp demo call container.list\n    \
                 arcane-mcp demo find \"restart container\"\n  For a real Arcane, set ARCANE_URL \
                 and ARCANE_API_KEY and run arcane-mcp without `demo`."
            ),
        }
    }
}

#[cfg(not(feature = "demo"))]
mod demo {
    use super::*;

    const MISSING: &str = "this arcane-mcp was built without the `demo` feature (no simulator \
        inside); rebuild with default features, e.g. cargo install --path .";

    pub const BUILTIN_NAME: &str = "built-in Arcane document (not in this build)";

    /// Builds without the simulator carry no built-in document either (it lives in the
    /// simulator's crate): `demo find` needs `--spec` there.
    pub fn builtin() -> Result<crate::load::spec::Builtin> {
        bail!("{MISSING} — or pass --spec PATH (Arcane serves its document at /api/openapi.json)")
    }

    pub fn call(_: &ServeArgs, _: &CallArgs) -> Result<ExitCode> {
        bail!(MISSING)
    }

    pub fn serve(_: &ServeArgs) -> Result<()> {
        bail!(MISSING)
    }
}
