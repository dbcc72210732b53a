//! Shared helpers of the `server_*` integration tests: an in-process simulator, the real
//! `arcane-mcp` binary spawned over stdio and spoken to with rmcp's client, and the
//! simulator's test hooks.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

/// `../shared/arcane` beside the repository, or `$ARCANE_SHARED_DIR`.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("ARCANE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/arcane"))
}

/// The Arcane 2.8.0 OpenAPI document the tests run against.
pub fn spec_path() -> PathBuf {
    shared_dir().join("openapi-v2.8.0.json")
}

/// The catalog the server builds from the test spec (same sources as the spawned binary).
pub fn catalog() -> arcane_mcp::catalog::Catalog {
    let sources = arcane_mcp::reload::Sources {
        spec: arcane_mcp::spec::SpecSource {
            explicit: Some(spec_path()),
            ..Default::default()
        },
        overrides_dir: None,
        catalog_dir: Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("catalog")),
    };
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
        arcane_mcp::http::ensure_crypto_provider();
        let mut config = arcane_sim::SimConfig::new(spec_path());
        config.arcane_version = version;
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

    /// A JSON test hook of the simulator, e.g. `/__sim/streams`.
    pub async fn hook(&self, path: &str) -> Value {
        let hooks = self.hooks();
        match path.strip_prefix("/__sim/") {
            Some("streams") => Value::from(hooks.streams().await.unwrap()),
            Some("requests") => Value::from(hooks.requests().await.unwrap()),
            Some("state") => hooks.state().await.unwrap(),
            Some("config") => hooks.config().await.unwrap(),
            _ => panic!("no JSON hook at {path}"),
        }
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

/// An MCP client session with a spawned `arcane-mcp`.
pub type Client = RunningService<RoleClient, ()>;

/// The `arcane-mcp` command against the simulator with `args` (surface, modes…).
pub fn command(sim_base: &str, api_key: &str, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "warn")
        .arg("--arcane-url")
        .arg(sim_base)
        .arg("--api-key")
        .arg(api_key)
        .arg("--spec")
        .arg(spec_path())
        .args(args);
    cmd
}

/// Spawns the binary and connects with a client handler.
pub async fn spawn_with<H: rmcp::ClientHandler>(
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

/// Spawns the binary against the simulator with `args` (surface, modes…) and connects.
pub async fn spawn(sim_base: &str, api_key: &str, args: &[&str]) -> Client {
    spawn_with((), sim_base, api_key, args).await
}

/// Calls a tool with JSON arguments.
pub async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
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
