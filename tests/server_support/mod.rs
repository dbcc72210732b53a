//! Shared helpers of the server tests: an in-process simulator and its test hooks, and an
//! MCP client session with `arcane-mcp` — in-process over `tokio::io::duplex` (`spawn`, built
//! from the same arguments and by the same calls as the binary's `serve`), or the real binary
//! spawned over stdio (`spawn_process`) where only a separate process shows what a test checks.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

/// The Arcane 2.8.0 OpenAPI document the tests run against.
pub use crate::fixtures::spec_v2 as spec_path;

/// The hang guard (`fixtures::GUARD`: generous, never a timing assertion).
pub use crate::fixtures::guarded;

/// The catalog the server builds from the test spec (same sources as the spawned binary).
/// The 2.8.0 document with the built-in overlays and an operator's overlay directory.
pub fn with_operator_overlays(dir: &std::path::Path) -> arcane_mcp::load::sources::Sources {
    arcane_mcp::load::sources::Sources::of_spec(spec_path()).with_overrides(dir.to_path_buf())
}

pub fn catalog() -> arcane_catalog::Catalog {
    let sources = arcane_mcp::load::sources::Sources::of_spec(spec_path())
        .with_catalog_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("catalog"));
    sources.build().expect("the test catalog builds")
}

/// A running simulator and an HTTP client for its hooks.
pub struct Sim {
    pub sim: arcane_sim::RunningSim,
    pub http: reqwest::Client,
}

impl Sim {
    /// A simulator imitating the released Arcane (2.8.x).
    pub async fn start() -> Sim {
        Sim::start_as(arcane_sim::ArcaneVersion::V2_8).await
    }

    /// A simulator imitating `version` (2.8.x, or main where it differs on the wire).
    pub async fn start_as(version: arcane_sim::ArcaneVersion) -> Sim {
        let mut config = arcane_sim::SimConfig::new(spec_path());
        config.arcane_version = version;
        Sim::start_with(config).await
    }

    /// A simulator accepting these users' keys besides its own (the request log names the user
    /// of each request).
    pub async fn start_with_users(users: Vec<arcane_sim::SimUser>) -> Sim {
        let mut config = arcane_sim::SimConfig::new(spec_path());
        config.users = users;
        Sim::start_with(config).await
    }

    async fn start_with(config: arcane_sim::SimConfig) -> Sim {
        arcane_engine::ensure_crypto_provider();
        let sim = arcane_sim::start(config).await.expect("simulator starts");
        Sim {
            sim,
            http: reqwest::Client::new(),
        }
    }

    /// Switches a running simulator to another Arcane (`"2.8"` or `"main"`).
    pub async fn set_version(&self, version: &str) {
        let version: arcane_sim::ArcaneVersion = version.parse().unwrap();
        self.hooks().set_version(version).await.unwrap();
    }

    pub fn base(&self) -> String {
        self.sim.base_url()
    }

    /// The simulator's typed hooks client, over this wrapper's HTTP client.
    pub fn hooks(&self) -> arcane_sim::hooks::HooksClient {
        arcane_sim::hooks::HooksClient::with_client(self.http.clone(), self.base())
    }

    /// Every request under `/api` since the last reset (excluding the spec fetch).
    pub async fn requests(&self) -> Vec<Value> {
        self.hooks()
            .requests()
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r["path"] != "/api/openapi.json")
            .collect()
    }

    /// How many container kills reached Arcane (what the confirmation tests count).
    pub async fn kills(&self) -> usize {
        self.requests()
            .await
            .iter()
            .filter(|r| r["method"] == "POST" && r["path"].as_str().unwrap().ends_with("/kill"))
            .count()
    }

    pub async fn reset(&self) {
        self.hooks().reset().await.unwrap();
    }

    pub async fn fault(&self, fault: Value) {
        if let Err(e) = self.hooks().add_faults(&fault).await {
            panic!("fault accepted: {e}");
        }
    }

    /// Replaces the simulator's state (and its reset seed).
    pub async fn set_state(&self, state: Value) {
        self.hooks().set_state(&state).await.unwrap();
    }

    pub async fn state(&self) -> Value {
        self.hooks().state().await.unwrap()
    }

    /// A container of the simulator's state by name.
    pub async fn container(&self, name: &str) -> Option<Value> {
        self.state().await["containers"]
            .as_array()?
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
    }
}

/// An MCP client session with `arcane-mcp` (in-process or spawned).
pub type Client = RunningService<RoleClient, ()>;

/// The arguments of an `arcane-mcp` run against the simulator, after the program name.
pub fn serve_args(sim_base: &str, api_key: &str, args: &[&str]) -> Vec<std::ffi::OsString> {
    let mut all: Vec<std::ffi::OsString> = vec![
        "--arcane-url".into(),
        sim_base.into(),
        "--api-key".into(),
        api_key.into(),
        "--spec".into(),
        spec_path().into(),
        // The catalog cache in the build's scratch directory, never the user's: every server
        // of the suite after the first reads the catalog from it.
        "--catalog-cache-dir".into(),
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("catalog-cache")
            .into(),
    ];
    all.extend(args.iter().map(Into::into));
    all
}

/// The `arcane-mcp` command against the simulator with `args` (surface, modes…).
pub fn command(sim_base: &str, api_key: &str, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "warn")
        .args(serve_args(sim_base, api_key, args));
    cmd
}

/// Builds the server in-process from the binary's arguments (the calls `arcane_mcp::serve`
/// makes), serves one session on one end of a `tokio::io::duplex` pipe, and connects a client
/// with `handler` on the other. The session ends when the client is dropped or cancelled.
/// Unlike `command`, it runs in the test process's environment, where clap reads the
/// `ARCANE_*` settings as the binary would: leave them unset when running the tests.
pub async fn spawn_with<H: rmcp::ClientHandler>(
    handler: H,
    sim_base: &str,
    api_key: &str,
    args: &[&str],
) -> RunningService<RoleClient, H> {
    spawn_speaking(
        handler,
        rmcp::service::ClientLifecycleMode::Initialize,
        sim_base,
        api_key,
        args,
    )
    .await
}

/// [`spawn_with`] with a client of the given lifecycle (e.g. the 2026-07-28 protocol's
/// `server/discover` and self-contained requests).
pub async fn spawn_speaking<H: rmcp::ClientHandler>(
    handler: H,
    lifecycle: rmcp::service::ClientLifecycleMode,
    sim_base: &str,
    api_key: &str,
    args: &[&str],
) -> RunningService<RoleClient, H> {
    let client_io = serve_in_process(sim_base, api_key, args).await;
    rmcp::service::serve_client_with_lifecycle(handler, client_io, lifecycle)
        .await
        .expect("MCP session starts")
}

/// Builds the server in-process as [`spawn_with`] does and serves one session on a
/// `tokio::io::duplex` pipe; returns the client's end, for tests that write and read the
/// protocol's lines themselves.
pub async fn serve_in_process(
    sim_base: &str,
    api_key: &str,
    args: &[&str],
) -> tokio::io::DuplexStream {
    use arcane_mcp::config::{Cli, Command};
    use clap::Parser;

    let argv = std::iter::once("arcane-mcp".into()).chain(serve_args(sim_base, api_key, args));
    let cli =
        Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("server arguments {args:?}: {e}"));
    let settings = match cli.command {
        None | Some(Command::Serve) => cli.serve,
        Some(_) => panic!("{args:?} is not a serving command: spawn it with `command`"),
    };
    // Building is blocking (a spec may be fetched), as in the binary, which builds before its
    // runtime starts.
    let app = tokio::task::spawn_blocking(move || {
        let (base_url, auth) = arcane_mcp::app::connection(&settings)?;
        let sources =
            arcane_mcp::load::sources::Sources::from_args(&settings.source, Some(&base_url));
        arcane_mcp::app::App::build(&settings, sources, base_url, auth)
    })
    .await
    .expect("the build does not panic")
    .expect("the server builds");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    // Through the stdio transport's own line reader, as the binary serves stdin and stdout.
    let (read, write) = tokio::io::split(server_io);
    let lines = arcane_mcp::transport::jsonrpc::Lines::new(read, write);
    tokio::spawn(async move {
        if let Err(e) = app.serve_on(lines, "an in-process pipe").await {
            panic!("in-process server: {e:#}");
        }
    });
    client_io
}

/// Runs the server in-process against the simulator with `args` (surface, modes…) and
/// connects.
pub async fn spawn(sim_base: &str, api_key: &str, args: &[&str]) -> Client {
    spawn_with((), sim_base, api_key, args).await
}

/// Spawns the real binary and connects over its stdio with a client handler.
pub async fn spawn_process_with<H: rmcp::ClientHandler>(
    handler: H,
    sim_base: &str,
    api_key: &str,
    args: &[&str],
) -> RunningService<RoleClient, H> {
    let (transport, _) = TokioChildProcess::builder(command(sim_base, api_key, args))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("arcane-mcp spawns");
    handler.serve(transport).await.expect("MCP session starts")
}

/// Spawns the real binary against the simulator with `args` and connects over its stdio.
pub async fn spawn_process(sim_base: &str, api_key: &str, args: &[&str]) -> Client {
    spawn_process_with((), sim_base, api_key, args).await
}

/// Calls a tool with JSON arguments, from a client with any handler.
pub async fn call<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let args: Map<String, Value> = match args {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .expect("tools/call answers (errors are isError results, not protocol errors)")
}

pub async fn tools(client: &Client) -> Vec<Tool> {
    client.list_all_tools().await.expect("tools/list answers")
}

/// The text of a result's text blocks.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| match c {
            rmcp::model::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

/// Asserts a successful result and returns its structuredContent.
pub fn ok(r: &CallToolResult) -> Value {
    assert!(!is_error(r), "expected success, got error: {}", text(r));
    r.structured_content.clone().expect("structuredContent")
}

/// Asserts an isError result without structuredContent and returns its text.
pub fn err(r: &CallToolResult) -> String {
    assert!(is_error(r), "expected an error, got: {}", text(r));
    assert!(
        r.structured_content.is_none(),
        "errors carry no structuredContent"
    );
    text(r)
}

/// How each surface calls an action: (tool name, arguments).
pub fn shape(surface: &str, id: &str, params: Value, confirm: bool) -> (String, Value) {
    let (domain, name) = id.split_once('.').unwrap();
    match surface {
        "dynamic" => (
            "arcane_execute_action".into(),
            json!({"action": id, "params": params, "confirm": confirm}),
        ),
        "meta" => (
            format!("arcane_{domain}"),
            json!({"action": name, "params": params, "confirm": confirm}),
        ),
        _ => {
            let mut p = params.as_object().cloned().unwrap_or_default();
            if confirm {
                p.insert("confirm".into(), Value::Bool(true));
            }
            (format!("arcane_{domain}_{name}"), Value::Object(p))
        }
    }
}

/// Mutating requests in a request log (anything but GET/HEAD).
pub fn writes(log: &[Value]) -> Vec<&Value> {
    log.iter()
        .filter(|r| !matches!(r["method"].as_str(), Some("GET" | "HEAD")))
        .collect()
}
