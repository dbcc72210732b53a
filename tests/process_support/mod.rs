//! The server as a separate process: the `arcane-mcp` binary with a clean environment
//! (`cmd_in`, `demo`), the Streamable HTTP server it runs (`HttpServer`) and the ways a test
//! speaks to that server — an rmcp client session (`http_client`), raw POSTs to `/mcp`, and
//! sessionless 2026-07-28 calls. The in-process server and the stdio client are
//! `server_support`'s.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rmcp::ServiceExt;
use serde_json::{Value, json};

use crate::server_support::{Sim, spec_path};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_arcane-mcp");

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with a clean environment (PATH only), in `dir`.
pub(crate) fn cmd_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args)
        .stdin(Stdio::null());
    c
}

/// `arcane-mcp demo …` on the test spec.
pub(crate) fn demo(args: &[&str]) -> Output {
    let mut full = vec!["demo"];
    full.extend_from_slice(args);
    cmd_in(&repo(), &full)
        .env("ARCANE_MCP_SPEC", spec_path())
        .output()
        .expect("arcane-mcp runs")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A free loopback port (bound and released; the server binds it right after).
///
/// Chosen below Linux's ephemeral range (32768–60999): a port the kernel hands out for
/// `:0` is also what it hands out as the source port of the tests' many outgoing
/// connections, so between release and bind another test's connection could take it
/// ("Address already in use" in a run of the whole suite). Ports here are never given out
/// that way. A port is handed out once per process: a port checked free but not yet bound by
/// its test's server is still free to the next check, and two parallel tests once got the same
/// one this way.
pub(crate) fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static HANDED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..2_000 {
        let n = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(97));
        let port = 20_000 + (n % 12_000) as u16;
        let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
        if !handed.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.push(port);
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `arcane-mcp --transport http` against an Arcane at `arcane`, killed when dropped.
pub(crate) struct HttpServer {
    child: tokio::process::Child,
    pub(crate) base: String,
}

impl HttpServer {
    /// Starts the server with `args` and `env` (key: `--api-key` when given) and waits until
    /// `/healthz` answers; panics with the server's stderr if it exits first.
    pub(crate) async fn start(
        arcane: &str,
        key: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_at(free_port(), arcane, key, args, env).await
    }

    /// [`HttpServer::start`] on a port chosen beforehand (an OAuth public URL names it).
    pub(crate) async fn start_at(
        port: u16,
        arcane: &str,
        key: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.current_dir(repo())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ARCANE_MCP_LOG", "warn")
            .args(["--arcane-url", arcane, "--spec"])
            .arg(spec_path())
            .args(["--transport", "http", "--listen", &listen])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(k) = key {
            cmd.args(["--api-key", k]);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("arcane-mcp spawns");
        let base = format!("http://{listen}");
        let http = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(
                    child.stderr.as_mut().unwrap(),
                    &mut err,
                )
                .await;
                panic!("arcane-mcp exited ({status}) before serving:\n{err}");
            }
            if http
                .get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return HttpServer { child, base };
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("arcane-mcp did not serve /healthz within 10 s");
    }

    /// Starts the server against the simulator, with its key, the bearer token `token` and
    /// `args`.
    pub(crate) async fn for_sim(sim: &Sim, args: &[&str], token: &str) -> Self {
        let env = [("ARCANE_MCP_AUTH_TOKEN", token)];
        Self::start(&sim.base(), Some(sim.sim.api_key()), args, &env).await
    }

    /// Stops the server and returns what it logged.
    pub(crate) async fn stop(mut self) -> String {
        let _ = self.child.start_kill();
        let out = self.child.wait_with_output().await.unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// An MCP client session over Streamable HTTP with a bearer token and extra headers.
pub(crate) async fn http_client(
    base: &str,
    token: &str,
    headers: &[(&'static str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    http_client_with((), base, token, headers).await
}

/// [`http_client`] with a client handler (progress, list-changed…).
pub(crate) async fn http_client_with<H: rmcp::ClientHandler>(
    handler: H,
    base: &str,
    token: &str,
    headers: &[(&'static str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let custom = headers
        .iter()
        .map(|(k, v)| {
            (
                http::HeaderName::from_static(k),
                http::HeaderValue::from_str(v).unwrap(),
            )
        })
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .auth_header(token)
        .custom_headers(custom);
    handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP session over HTTP starts")
}

pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// One sessionless `tools/call` of `arcane_execute_action` in the 2026-07-28 protocol (the
/// client named `client` in `_meta`, `confirm: true`) with `token`: status, headers and body.
pub(crate) async fn post_call_2026(
    base: &str,
    token: &str,
    client: &str,
    action: &str,
    params: Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {
            "name": "arcane_execute_action",
            "arguments": {"action": action, "params": params, "confirm": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"}
            }
        }
    });
    post_execute(base, token, &body).await
}

/// A sessionless 2026-07-28 `tools/call` of `arcane_execute_action` (`body`, the whole
/// JSON-RPC request) with `token`: its status, headers and body.
async fn post_execute(
    base: &str,
    token: &str,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let auth = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "arcane_execute_action"),
        ("authorization", auth.as_str()),
    ];
    raw_post(base, &headers, body.to_string()).await
}

/// A raw `initialize` POST to `/mcp` with extra headers; its status, headers and body.
pub(crate) async fn raw_post(
    base: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        // Appended: a name given twice is sent twice.
        map.append(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    raw_post_headers(base, map, body).await
}

/// [`raw_post`] with headers that need not be text (bytes a client may send).
pub(crate) async fn raw_post_headers(
    base: &str,
    headers: reqwest::header::HeaderMap,
    body: String,
) -> (u16, reqwest::header::HeaderMap, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let h = r.headers().clone();
    (status, h, r.text().await.unwrap_or_default())
}

/// A sessionless 2026-07-28 `container.kill` of `container` with `token`, by a client that
/// shows forms (`forms`) or not, with `extra` (`requestState`, `inputResponses` of a retry) in
/// its params; the call's result and the response's headers.
pub(crate) async fn kill_2026(
    base: &str,
    token: &str,
    container: &str,
    forms: bool,
    extra: Value,
) -> (Value, reqwest::header::HeaderMap) {
    let caps = if forms {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    let mut params = json!({
        "name": "arcane_execute_action",
        "arguments": {"action": "container.kill", "params": {"containerId": container}},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let (status, h, text) = post_execute(base, token, &body).await;
    assert_eq!(status, 200, "{text}");
    (rpc_answer(&text)["result"].clone(), h)
}

/// The JSON-RPC answer of a POST to `/mcp`, whether sent as JSON or as an event stream.
pub(crate) fn rpc_answer(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}
