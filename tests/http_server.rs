//! Streamable HTTP through the real binary (`arcane-mcp --transport http`): the settings it
//! refuses, the gate (tokens, per-user keys, rate limits, sessions), the audit log, progress,
//! cancellation and list changes, confirmation by the person, and sessionless 2026-07-28
//! requests.

use crate::process_support::{
    HttpServer, INIT, cmd_in, demo, http_client, http_client_with, kill_2026, raw_post, repo,
    rpc_answer, stderr,
};
use crate::server_support;

use serde_json::{Value, json};
use server_support::{Sim, call, spec_path, text};

#[test]
fn http_refuses_unsafe_settings_with_what_to_do() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = cmd_in(
            &repo(),
            &[
                &["--arcane-url", "http://127.0.0.1:9", "--api-key", "k"],
                args,
            ]
            .concat(),
        );
        c.arg("--spec").arg(spec_path());
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(!out.status.success(), "{args:?} must not start");
        stderr(&out)
    };
    let err = run(&["--transport", "http", "--listen", "127.0.0.1:0"], &[]);
    assert!(
        err.contains("without authentication") && err.contains("ARCANE_MCP_AUTH_TOKEN"),
        "{err}"
    );
    let err = run(
        &[
            "--transport",
            "http",
            "--listen",
            "0.0.0.0:0",
            "--allow-unauthenticated",
        ],
        &[],
    );
    assert!(err.contains("loopback"), "{err}");
    let err = run(
        &["--transport", "http", "--listen", "0.0.0.0:0"],
        &[("ARCANE_MCP_AUTH_TOKEN", "secret-token-xyz")],
    );
    assert!(err.contains("ARCANE_MCP_ALLOWED_HOSTS"), "{err}");
    assert!(!err.contains("secret-token-xyz"), "{err}");
    let err = run(
        &[
            "--transport",
            "http",
            "--auth-token-file",
            "/nonexistent/tokens",
        ],
        &[],
    );
    assert!(err.contains("--auth-token-file"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_gate_refuses_strangers_and_serves_every_surface() {
    let sim = Sim::start().await;
    let tokens = "tok-one,tok-two";
    for surface in ["dynamic", "meta", "individual"] {
        let server = HttpServer::for_sim(
            &sim,
            &["--tool-surface", surface, "--max-request-bytes", "4096"],
            tokens,
        )
        .await;
        let base = server.base.clone();
        if surface == "dynamic" {
            // 401 without a token or with a wrong one, with the challenge.
            let (status, h, body) = raw_post(&base, &[], INIT.into()).await;
            assert_eq!(status, 401, "{body}");
            assert!(
                h["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer")
            );
            assert!(body.contains("Authorization: Bearer"), "{body}");
            let (status, h, _) =
                raw_post(&base, &[("authorization", "Bearer tok-three")], INIT.into()).await;
            assert_eq!(status, 401);
            assert!(
                h["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .contains("invalid_token")
            );
            // 403 for a foreign Origin or Host, even with a good token.
            let ok = ("authorization", "Bearer tok-two");
            let (status, _, body) = raw_post(
                &base,
                &[ok, ("origin", "https://evil.example")],
                INIT.into(),
            )
            .await;
            assert_eq!(status, 403, "{body}");
            let (status, _, body) =
                raw_post(&base, &[ok, ("host", "evil.example")], INIT.into()).await;
            assert_eq!(status, 403, "{body}");
            // 413 beyond the body limit; the server's own key policy refuses a client key.
            let (status, _, _) = raw_post(&base, &[ok], format!("{:5000}", INIT)).await;
            assert_eq!(status, 413);
            let (status, _, body) =
                raw_post(&base, &[ok, ("x-arcane-api-key", "mine")], INIT.into()).await;
            assert_eq!(status, 400, "{body}");
            assert!(body.contains("X-Arcane-API-Key"), "{body}");
            let (status, _, _) = raw_post(&base, &[ok], INIT.into()).await;
            assert_eq!(status, 200);
            // Health without a token; metrics with one.
            let http = reqwest::Client::new();
            let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
            assert_eq!(ready.status(), 200);
            let m = http.get(format!("{base}/metrics")).send().await.unwrap();
            assert_eq!(m.status(), 401);
        }
        let client = http_client(&base, "tok-one", &[]).await;
        let tools = client.list_all_tools().await.unwrap();
        let (tool, args) = server_support::shape(surface, "container.list", json!({}), false);
        assert!(tools.iter().any(|t| t.name == tool), "{surface}: {tool}");
        let r = call(&client, &tool, args).await;
        assert!(text(&r).contains("| web-1 |"), "{surface}: {}", text(&r));
        let res = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                "arcane://tools",
            ))
            .await
            .unwrap();
        assert_eq!(res.contents.len(), 1);
        // A name the list does not have is counted as `unknown`: clients cannot grow the table.
        let _ = client
            .call_tool(rmcp::model::CallToolRequestParams::new("no_such_tool_x1"))
            .await;
        client.cancel().await.unwrap();
        let metrics = reqwest::Client::new()
            .get(format!("{base}/metrics"))
            .bearer_auth("tok-two")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains(&format!(
                "arcane_mcp_tool_calls_total{{tool=\"{tool}\",outcome=\"ok\"}} 1"
            )),
            "{metrics}"
        );
        assert!(
            metrics.contains("arcane_mcp_tool_calls_total{tool=\"unknown\",outcome=\"error\"} 1")
                && !metrics.contains("no_such_tool_x1"),
            "{metrics}"
        );
        assert!(metrics.contains("arcane_mcp_tool_call_duration_seconds_count 2"));
        let log = server.stop().await;
        assert!(
            !log.contains("tok-one") && !log.contains("tok-two"),
            "{log}"
        );
    }
}

/// Each session's own Arcane key reaches Arcane with each of its requests, never another's:
/// 50 sessions at once with different keys, each marking its requests with its own search.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_per_user_keys_never_mix_across_50_sessions() {
    // Arcane with 50 users, each with its own key; its request log names the user of each
    // request.
    let users = (0..50)
        .map(|i| format!("user-{i}=user-key-{i}").parse().unwrap())
        .collect();
    let sim = Sim::start_with_users(users).await;
    // No server key at all: with client keys only, none is needed.
    let server = HttpServer::start(
        &sim.base(),
        None,
        &["--arcane-key-source", "client", "--rate-limit", "100000"],
        &[("ARCANE_MCP_AUTH_TOKEN", "team-token")],
    )
    .await;
    // Without a key the request is refused before anything reaches Arcane.
    let (status, _, body) = raw_post(
        &server.base,
        &[("authorization", "Bearer team-token")],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("X-Arcane-API-Key"), "{body}");
    let sessions = (0..50).map(|i| {
        let base = server.base.clone();
        async move {
            let key = format!("user-key-{i}");
            let client = http_client(&base, "team-token", &[("x-arcane-api-key", &key)]).await;
            for round in 0..3 {
                let r = call(
                    &client,
                    "arcane_execute_action",
                    json!({"action": "container.list", "params": {"search": format!("marker-{i}-{round}")}}),
                )
                .await;
                assert!(!server_support::is_error(&r), "{}", text(&r));
            }
            // A name looked up with this session's key (resource completion reads too).
            let r = call(
                &client,
                "arcane_execute_action",
                json!({"action": "container.get", "params": {"containerId": "web-1"}}),
            )
            .await;
            assert!(!server_support::is_error(&r), "{}", text(&r));
            client.cancel().await.unwrap();
        }
    });
    futures::future::join_all(sessions).await;
    // The readiness probe reads the public health route, without a user.
    let seen: Vec<Value> = sim
        .requests()
        .await
        .into_iter()
        .filter(|r| r["path"] != "/api/health")
        .collect();
    let mut marked = 0;
    for r in &seen {
        let (path, query, user) = (&r["path"], r["query"].as_str().unwrap(), &r["user"]);
        // Every request reached Arcane as one of the 50 users (never unauthenticated, never
        // as the simulator's own admin).
        let user = user
            .as_str()
            .unwrap_or_else(|| panic!("{path} {query}: {r}"));
        assert!(user.starts_with("user-"), "{path} {query} ran as {user}");
        if let Some(rest) = query.split("search=marker-").nth(1) {
            let session = rest.split('-').next().unwrap();
            assert_eq!(user, format!("user-{session}"), "{path} {query}");
            marked += 1;
        }
    }
    assert_eq!(marked, 150, "every marked request reached Arcane once");
    let users: std::collections::BTreeSet<_> = seen.iter().map(|r| r["user"].to_string()).collect();
    assert_eq!(users.len(), 50, "{users:?}");
    let log = server.stop().await;
    assert!(
        !log.contains("user-key-"),
        "a client key was logged:\n{log}"
    );
}

/// The audit log names each mutating call with its user's key fingerprint (never the key) and
/// its outcome: sent, failed, refused for want of confirmation, previewed in safe mode; reads
/// leave no line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_audit_log_has_a_line_per_mutating_call() {
    let sim = Sim::start_with_users(vec!["alice=alice-secret-key".parse().unwrap()]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let server = HttpServer::start(
        &sim.base(),
        Some("server-key-unused"),
        &[
            "--arcane-key-source",
            "either",
            "--audit-log",
            path.to_str().unwrap(),
        ],
        &[("ARCANE_MCP_AUTH_TOKEN", "team-token")],
    )
    .await;
    let client = http_client(
        &server.base,
        "team-token",
        &[("x-arcane-api-key", "alice-secret-key")],
    )
    .await;
    let run = |action: &str, params: Value, confirm: bool| {
        call(
            &client,
            "arcane_execute_action",
            json!({"action": action, "params": params, "confirm": confirm}),
        )
    };
    assert!(!server_support::is_error(
        &run("container.list", json!({}), false).await
    ));
    let refused = run("container.kill", json!({"containerId": "web-1"}), false).await;
    assert!(server_support::is_error(&refused));
    let done = run("container.restart", json!({"containerId": "web-1"}), true).await;
    assert!(!server_support::is_error(&done), "{}", text(&done));
    let failed = run("container.restart", json!({"containerId": "no-such"}), true).await;
    assert!(server_support::is_error(&failed));
    client.cancel().await.unwrap();
    // Every request reached Arcane as alice, not with the server's key.
    let seen = sim.requests().await;
    assert!(seen.iter().any(|r| r["method"] == "POST"), "{seen:?}");
    assert!(
        seen.iter()
            .filter(|r| r["path"] != "/api/health")
            .all(|r| r["user"] == "alice"),
        "{seen:?}"
    );
    let log = server.stop().await;
    assert!(!log.contains("alice-secret-key"), "{log}");

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("alice-secret-key"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["action"].as_str().unwrap().to_string(),
                l["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("container.kill".into(), "refused".into()),
            ("container.restart".into(), "ok".into()),
            ("container.restart".into(), "error".into()),
        ],
        "{text}"
    );
    let user = format!("key:{}", arcane_redact::fingerprint("alice-secret-key"));
    for l in &lines {
        assert_eq!(l["user"], user.as_str(), "{l}");
        assert!(l["session"].as_str().is_some_and(|s| !s.is_empty()), "{l}");
        assert_eq!(l["environment"], "0");
        assert!(l["durationMs"].is_u64());
    }
    assert_eq!(lines[0]["confirmed"], Value::Null);
    assert_eq!(lines[1]["confirmed"], "param");
    assert!(
        lines[1]["targets"]["containerId"].is_string(),
        "{}",
        lines[1]
    );

    // Safe mode: a preview line (through the one-shot command, which runs the same call path).
    let preview = dir.path().join("preview.jsonl");
    let out = demo(&[
        "call",
        "--safe-mode",
        "--audit-log",
        preview.to_str().unwrap(),
        "container.restart",
        "--param",
        "containerId=web-1",
        "--confirm",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&preview).unwrap().trim()).unwrap();
    assert_eq!(line["outcome"], "preview", "{line}");
    assert_eq!(line["user"], "server-key");
}

/// Records progress and list-changed notifications.
#[derive(Clone, Default)]
struct Notes(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Notes {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("progress {}", params.progress));
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.lock().unwrap().push("tools".into());
    }

    async fn on_resource_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push("resources".into());
    }
}

/// Over HTTP as over stdio: progress of a stream reaches the client, a cancelled call drops
/// the request to Arcane, and a hot reload sends list-changed to every open session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_progress_cancel_and_list_changed() {
    use std::time::Duration;
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server =
        HttpServer::for_sim(&sim, &["--overrides", dir.path().to_str().unwrap()], "tok").await;
    let notes = Notes::default();
    let client = http_client_with(notes.clone(), &server.base, "tok", &[]).await;
    let other = http_client(&server.base, "tok", &[]).await;
    let pull = json!({"action": "image.pull", "params": {"imageName": "redis:7.2-alpine"}});
    let r = call(&client, "arcane_execute_action", pull).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let progress = notes
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.starts_with("progress"))
        .count();
    assert!(progress >= 2, "{:?}", notes.0.lock().unwrap());

    sim.hooks().set_stream_pace_ms(300).await.unwrap();
    // Deploying is asked (changes-workload); this client cannot ask, so the model confirms.
    let up = json!({"action": "project.up", "params": {"projectId": "webshop"}, "confirm": true});
    let pending = client.call_tool(
        rmcp::model::CallToolRequestParams::new("arcane_execute_action")
            .with_arguments(up.as_object().unwrap().clone()),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(700), pending)
            .await
            .is_err()
    );
    let mut aborted = false;
    for _ in 0..100 {
        let streams = sim.hooks().streams().await.unwrap();
        aborted = streams
            .iter()
            .any(|s| s["path"].as_str().unwrap_or("").ends_with("/up") && s["aborted"] == true);
        if aborted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        aborted,
        "the cancelled call's request to Arcane was dropped"
    );

    std::fs::write(
        dir.path().join("maintenance.yaml"),
        "actions:\n  container.restart: {exclude: \"withdrawn for maintenance\"}\n",
    )
    .unwrap();
    // A generous guard against a hang, not a timing assertion.
    for _ in 0..600 {
        let seen = notes.0.lock().unwrap().clone();
        if seen.iter().any(|n| n == "tools") && seen.iter().any(|n| n == "resources") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = notes.0.lock().unwrap().clone();
    assert!(seen.contains(&"tools".to_string()), "{seen:?}");
    assert!(seen.contains(&"resources".to_string()), "{seen:?}");
    let r = call(
        &other,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"containerId": "web-1"}}),
    )
    .await;
    assert!(
        text(&r).contains("withdrawn for maintenance"),
        "{}",
        text(&r)
    );
    client.cancel().await.ok();
    other.cancel().await.ok();
    server.stop().await;
}

/// A caller's key that Arcane refuses is named as the caller's (the header), not the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_a_refused_client_key_is_named_as_the_callers() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--arcane-key-source", "either"], "tok").await;
    let client = http_client(&server.base, "tok", &[("x-arcane-api-key", "not-a-key")]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {}}),
    )
    .await;
    assert!(server_support::is_error(&r));
    let e = text(&r);
    assert!(e.contains("X-Arcane-API-Key"), "{e}");
    assert!(
        !e.contains("not-a-key") && !e.contains("ARCANE_API_KEY"),
        "{e}"
    );
    // The same server still serves a caller without a key of their own, with its own key.
    let plain = http_client(&server.base, "tok", &[]).await;
    let r = call(
        &plain,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {}}),
    )
    .await;
    assert!(!server_support::is_error(&r), "{}", text(&r));
    client.cancel().await.ok();
    plain.cancel().await.ok();
    server.stop().await;
}

/// Past the per-address rate, requests get 429 with Retry-After; an idle session is closed,
/// and a request naming it is told so (the client starts a new one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rate_limit_and_idle_session_expiry() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(
        &sim,
        &["--rate-limit", "30", "--session-idle-timeout", "1"],
        "tok",
    )
    .await;
    let auth = ("authorization", "Bearer tok");
    let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    // The idle session is closed: a later request naming it is refused. Each look is itself
    // activity, so looks are spaced beyond the idle time (a bounded number: a guard against a
    // hang, not a timing assertion).
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let mut closed = None;
    for _ in 0..15 {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let (status, _, body) = raw_post(
            &server.base,
            &[
                auth,
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            ping.into(),
        )
        .await;
        if status == 429 {
            continue;
        }
        if status != 200 {
            closed = Some((status, body));
            break;
        }
    }
    let (status, _) = closed.expect("the idle session was closed");
    assert_eq!(status, 404);
    // A burst of 30 is allowed; more within the same second are not.
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
        if status == 429 {
            assert!(headers.contains_key("retry-after"));
        }
        statuses.push(status);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    server.stop().await;
}

/// A client that shows elicitation forms and ticks (or not) the box.
#[derive(Clone)]
struct Ticks(bool);

impl rmcp::ClientHandler for Ticks {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("ticks", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"confirm": self.0})),
        )
    }
}

/// Over HTTP the confirmation form reaches the user too (a server-to-client request on the
/// session's stream): a ticked box runs the destructive call, an unticked one refuses it, and
/// the audit log says which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_destructive_call_is_confirmed_by_the_user() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let server = HttpServer::for_sim(&sim, &["--audit-log", path.to_str().unwrap()], "tok").await;
    let kill = json!({"action": "container.kill", "params": {"containerId": "web-1"}});
    for tick in [false, true] {
        let client = http_client_with(Ticks(tick), &server.base, "tok", &[]).await;
        let r = call(&client, "arcane_execute_action", kill.clone()).await;
        assert_eq!(r.is_error == Some(true), !tick, "{}", text(&r));
        client.cancel().await.ok();
    }
    server.stop().await;
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[0]["confirmed"], Value::Null);
    assert_eq!(lines[1]["outcome"], "ok");
    assert_eq!(lines[1]["confirmed"], "elicitation");
    assert_eq!(lines[1]["client"], "ticks");
}

/// 2026-07-28 clients send sessionless requests (protocol version and client data in each
/// request's `_meta`): served behind the same gate, without a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessionless_2026_07_28_requests_are_served() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": "arcane_execute_action",
            "arguments": {"action": "container.list", "params": {}},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
            }
        }
    });
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "arcane_execute_action"),
    ];
    let (status, _, _) = raw_post(&server.base, &headers, body.to_string()).await;
    assert_eq!(status, 401, "sessionless requests pass the gate too");
    let mut with_token = headers.to_vec();
    with_token.push(("authorization", "Bearer tok"));
    let (status, h, text) = raw_post(&server.base, &with_token, body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    assert!(!h.contains_key("mcp-session-id"), "no session: {h:?}");
    assert!(text.contains("web-1"), "{text}");
    server.stop().await;
}

/// A 2026-07-28 client over HTTP (`server/discover`, no session) hears a hot reload through
/// `subscriptions/listen`, as it does over stdio (`server_reload`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_2026_07_28_client_hears_list_changes_through_subscriptions() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::for_sim(
        &sim,
        &[
            "--tool-surface",
            "meta",
            "--overrides",
            dir.path().to_str().unwrap(),
        ],
        "tok",
    )
    .await;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.base))
        .auth_header("tok");
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("a 2026-07-28 client discovers the server over HTTP");
    let before = client.list_all_tools().await.unwrap();
    assert!(before.iter().any(|t| t.name == "arcane_volume"));
    let mut sub = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen accepted over HTTP");
    let mut overlay = String::from("actions:\n");
    let catalog = crate::server_support::catalog();
    for id in &catalog.domain("volume").unwrap().actions {
        overlay.push_str(&format!("  {id}: {{exclude: \"managed elsewhere\"}}\n"));
    }
    std::fs::write(dir.path().join("no-volumes.yaml"), overlay).unwrap();
    loop {
        let n = tokio::time::timeout(std::time::Duration::from_secs(60), sub.next())
            .await
            .expect("list_changed arrives (hang guard)")
            .unwrap()
            .expect("subscription open");
        if matches!(n, ServerNotification::ToolListChangedNotification(_)) {
            break;
        }
    }
    let after = client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), before.len() - 1);
    assert!(!after.iter().any(|t| t.name == "arcane_volume"));
    client.cancel().await.ok();
    server.stop().await;
}

/// 2026-07-28 clients that declared elicitation are asked by an incomplete result: the call
/// answers with the question and a sealed request state, and runs only when retried with that
/// state and an accepted, ticked answer. A declined answer, an altered state, a state used
/// twice, made for another call or for another caller are refused with nothing sent; a client
/// that declared no elicitation keeps the `confirm: true` rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_2026_07_28_confirmation_takes_a_round_trip() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let server = HttpServer::for_sim(
        &sim,
        &["--audit-log", audit.to_str().unwrap()],
        "tok,other-tok",
    )
    .await;
    let base = server.base.clone();
    // One sessionless tools/call; `extra` holds requestState / inputResponses of a retry.
    let post = |token: &'static str, container: &'static str, forms: bool, extra: Value| {
        let base = base.clone();
        async move { kill_2026(&base, token, container, forms, extra).await.0 }
    };
    let answer = |action: &str, tick: bool, state: &Value| {
        json!({
            "requestState": state,
            "inputResponses": {"confirm": {"action": action, "content": {"confirm": tick}}}
        })
    };
    let refused = |r: &Value, what: &str| {
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(what) && text.contains("nothing was sent"),
            "{text}"
        );
    };

    // Asked: the question names the action and its target; nothing is sent yet.
    let asked = post("tok", "web-1", true, json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("container.kill") && message.contains("web-1"),
        "{message}"
    );
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    let state = asked["requestState"].clone();
    assert!(state.as_str().is_some_and(|s| !s.is_empty()), "{asked}");
    assert_eq!(sim.kills().await, 0);

    // An altered state is refused (a flipped character in the middle of the seal).
    let mut altered = state.as_str().unwrap().to_string().into_bytes();
    let mid = altered.len() / 2;
    altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
    let altered = Value::String(String::from_utf8(altered).unwrap());
    refused(
        &post("tok", "web-1", true, answer("accept", true, &altered)).await,
        "does not belong to it",
    );
    // The state of web-1's question does not confirm a kill of another container, nor a call
    // by another token holder.
    refused(
        &post("tok", "api-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    refused(
        &post("other-tok", "web-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    assert_eq!(sim.kills().await, 0);

    // Accepted with the box ticked: it runs, once.
    let done = post("tok", "web-1", true, answer("accept", true, &state)).await;
    assert_ne!(done["isError"], true, "{done}");
    assert_ne!(done["resultType"], "input_required", "{done}");
    assert_eq!(sim.kills().await, 1);
    // The same yes again is refused: one answer runs one call.
    refused(
        &post("tok", "web-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    assert_eq!(sim.kills().await, 1);

    // Declined, or accepted without the tick: refused.
    for (action, tick, why) in [
        ("decline", false, "declined"),
        ("accept", false, "did not tick the box"),
        ("cancel", false, "cancelled"),
    ] {
        let asked = post("tok", "web-1", true, json!({})).await;
        let state = asked["requestState"].clone();
        refused(
            &post("tok", "web-1", true, answer(action, tick, &state)).await,
            why,
        );
    }
    assert_eq!(sim.kills().await, 1);

    // A client without elicitation: not asked; the `confirm: true` rule.
    let plain = post("tok", "web-1", false, json!({})).await;
    assert_eq!(plain["isError"], true, "{plain}");
    assert!(
        plain["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"confirm\": true"),
        "{plain}"
    );
    assert_eq!(sim.kills().await, 1);
    server.stop().await;
    // The audit log has a line per finished call, none for a question: the one yes ran it,
    // every other retry (and the call without elicitation) was refused.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcomes: Vec<(&str, &Value)> = lines
        .iter()
        .map(|l| (l["outcome"].as_str().unwrap(), &l["confirmed"]))
        .collect();
    let ran = ("ok", &json!("elicitation"));
    let no = ("refused", &Value::Null);
    assert_eq!(outcomes, [no, no, no, ran, no, no, no, no, no], "{lines:?}");
}

/// The open-confirmation quota counts the caller the HTTP gate authenticated, not the bytes of
/// its `Authorization` header: once a token holds its 100 open questions, `bearer`, `BEARER`,
/// extra blanks or a tab before the same token open no more, while another token still can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_confirmation_quota_is_the_tokens_however_the_header_is_spelt() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--rate-limit", "100000"], "tok,other-tok").await;
    let base = server.base.clone();
    let ask = |auth: String| {
        let base = base.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "arcane_execute_action",
                "arguments": {"action": "container.kill", "params": {"containerId": "web-1"}},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
                }
            }});
            let headers = [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "arcane_execute_action"),
                ("authorization", auth.as_str()),
            ];
            let (status, _, text) = raw_post(&base, &headers, body.to_string()).await;
            assert_eq!(status, 200, "{text}");
            rpc_answer(&text)["result"].clone()
        }
    };
    for _ in 0..100 {
        let r = ask("Bearer tok".into()).await;
        assert_eq!(r["resultType"], "input_required", "{r}");
    }
    for spelling in [
        "Bearer tok",
        "bearer tok",
        "BEARER  tok",
        "Bearer\ttok",
        "Bearer    tok",
    ] {
        let r = ask(spelling.into()).await;
        assert_eq!(r["isError"], true, "{spelling:?}: {r}");
        let t = r["content"][0]["text"].as_str().unwrap();
        assert!(t.contains("confirmations waiting"), "{spelling:?}: {t}");
    }
    let r = ask("Bearer other-tok".into()).await;
    assert_eq!(r["resultType"], "input_required", "another token: {r}");
    assert!(crate::server_support::writes(&sim.requests().await).is_empty());
    server.stop().await;
}

/// `DELETE /mcp` ends the session and answers 204 No Content (the Streamable HTTP transport's
/// success; clients such as the official Python SDK take rmcp's 202 for a failure): the session
/// is gone afterwards, for requests and for a second DELETE alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_delete_ends_the_session_with_204() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let auth = ("authorization", "Bearer tok");
    let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let in_session = [
        auth,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, _) = raw_post(&server.base, &in_session, initialized.into()).await;
    assert_eq!(status, 202);
    let delete = || async {
        let mut r = reqwest::Client::new().delete(format!("{}/mcp", server.base));
        for (k, v) in in_session {
            r = r.header(k, v);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    };
    assert_eq!(delete().await, (204, String::new()));
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, _, body) = raw_post(&server.base, &in_session, ping.into()).await;
    assert_eq!(status, 404, "the session is gone: {body}");
    assert_eq!(delete().await.0, 404, "a second DELETE finds no session");
    server.stop().await;
}
