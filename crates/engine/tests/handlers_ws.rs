//! WebSocket handlers (logs, stats, exec) against the in-process Arcane simulator, plus a tiny
//! scripted terminal for the exit-code path (the simulator's shell does not expand `$?`).

use std::time::Duration;

use arcane_engine::{
    ExecOptions, HandlerError, LogOptions, WsTarget, collect_logs, run_exec, sample_stats,
    sample_system_stats, ws_url,
};
use arcane_sim::hooks::HooksClient;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::fixtures::{guarded, spec_v2 as spec_path};

async fn sim() -> arcane_sim::RunningSim {
    arcane_sim::start(arcane_sim::SimConfig::new(spec_path()))
        .await
        .expect("simulator starts")
}

fn target(sim: &arcane_sim::RunningSim, path: &str) -> WsTarget {
    WsTarget {
        url: ws_url(&sim.base_url(), path).expect("ws url"),
        headers: vec![("X-API-Key".into(), sim.api_key().to_string())],
        tls: None,
        max_message_bytes: arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
    }
}

/// Short idle/first-frame waits: the simulator answers at once.
fn quick_logs(tail: u32) -> LogOptions {
    LogOptions {
        tail,
        idle: Duration::from_millis(300),
        first_frame: Duration::from_millis(1500),
        timeout: Duration::from_secs(10),
        ..LogOptions::default()
    }
}

/// The simulator's test hooks.
fn hooks(sim: &arcane_sim::RunningSim) -> HooksClient {
    HooksClient::new(sim.base_url()).expect("hooks client")
}

#[tokio::test]
async fn container_logs_all_then_idle_end_and_query() {
    arcane_engine::ensure_crypto_provider();
    let sim = sim().await;
    let t = target(&sim, "/environments/0/ws/containers/web-1/logs");
    let out = guarded(collect_logs(&t, &quick_logs(100))).await.unwrap();
    // stdout lines first, then stderr with Arcane's prefix; the open socket ended by idle time.
    assert_eq!(
        out.lines,
        vec![
            "web-1 starting",
            "web-1 ready to accept connections",
            "web-1 handled request GET /health 200",
            "[STDERR] web-1 warning: demo mode",
        ]
    );
    assert_eq!(out.truncated, None);
    let reqs = hooks(&sim).requests().await.unwrap();
    let q = reqs[0]["query"].as_str().unwrap();
    for part in [
        "follow=false",
        "tail=100",
        "timestamps=false",
        "format=text",
    ] {
        assert!(q.contains(part), "{q}");
    }
    // The API key is never in the request log's headers.
    assert!(!Value::from(reqs).to_string().contains(sim.api_key()));
    sim.shutdown().await;
}

#[tokio::test]
async fn tail_and_max_lines_are_honoured() {
    let sim = sim().await;
    let t = target(&sim, "/environments/0/ws/containers/web-1/logs");
    let out = guarded(collect_logs(&t, &quick_logs(2))).await.unwrap();
    assert_eq!(
        out.lines,
        vec![
            "web-1 handled request GET /health 200",
            "[STDERR] web-1 warning: demo mode"
        ]
    );
    let capped = LogOptions {
        max_lines: 1,
        ..quick_logs(100)
    };
    let out = guarded(collect_logs(&t, &capped)).await.unwrap();
    assert_eq!(out.lines, vec!["web-1 starting"]);
    assert!(out.truncated.as_deref().unwrap().contains("maxLines=1"));
    sim.shutdown().await;
}

#[tokio::test]
async fn project_and_swarm_service_logs() {
    let sim = sim().await;
    let t = target(
        &sim,
        "/environments/0/ws/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/logs",
    );
    let out = guarded(collect_logs(&t, &quick_logs(100))).await.unwrap();
    assert!(out.lines.contains(&"web-1 starting".to_string()), "{out:?}");
    assert!(out.lines.contains(&"api-1 starting".to_string()), "{out:?}");
    // Project text frames carry no [STDERR] prefix (docs/arcane-wire.md#websockets).
    assert!(out.lines.iter().all(|l| !l.starts_with("[STDERR]")));
    let t = target(&sim, "/environments/0/ws/swarm/services/edge-proxy/logs");
    let out = guarded(collect_logs(&t, &quick_logs(1))).await.unwrap();
    assert_eq!(out.lines, vec!["edge-proxy.2 | Configuration loaded"]);
    sim.shutdown().await;
}

#[tokio::test]
async fn no_log_lines_and_error_frame() {
    let sim = sim().await;
    let mut state = hooks(&sim).state().await.unwrap();
    for c in state["containers"].as_array_mut().unwrap() {
        if c["name"] == "web-1" {
            c["logs"] = json!([]);
            c["stderr"] = json!([]);
        }
    }
    hooks(&sim).set_state(&state).await.unwrap();
    let t = target(&sim, "/environments/0/ws/containers/web-1/logs");
    let out = guarded(collect_logs(&t, &quick_logs(100))).await.unwrap();
    assert!(out.lines.is_empty());

    let t = target(&sim, "/environments/0/ws/containers/nope/logs");
    let err = guarded(collect_logs(&t, &quick_logs(100)))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, HandlerError::Arcane(_)), "{err:?}");
    assert!(
        text.contains(
            "Failed to stream container logs: Error response from daemon: No such container: nope"
        ),
        "{text}"
    );
    assert!(
        text.contains("container.list") || text.contains("list action"),
        "{text}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn hostile_log_text_is_stripped() {
    let sim = sim().await;
    let mut state = hooks(&sim).state().await.unwrap();
    for c in state["containers"].as_array_mut().unwrap() {
        if c["name"] == "web-1" {
            c["logs"] = json!([
                "\u{1b}[31mred\u{1b}[0m text",
                "click \u{1b}]8;;http://evil.example\u{1b}\\here\u{1b}]8;;\u{1b}\\ now",
                "user \u{202e}nimda\u{202c} name",
                "progress 10%\rprogress 100%",
                "bell\u{7} and \u{1b}]0;title\u{7}done",
            ]);
            c["stderr"] = json!([]);
        }
    }
    hooks(&sim).set_state(&state).await.unwrap();
    let t = target(&sim, "/environments/0/ws/containers/web-1/logs");
    let out = guarded(collect_logs(&t, &quick_logs(100))).await.unwrap();
    assert_eq!(
        out.lines,
        vec![
            "red text",
            "click here now",
            "user nimda name",
            "progress 10%",
            "progress 100%",
            "bell and done",
        ]
    );
    for l in &out.lines {
        assert!(!l.chars().any(|c| c.is_control() && c != '\t'), "{l:?}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn container_and_system_stats() {
    let sim = sim().await;
    let t = target(&sim, "/environments/0/ws/containers/web-1/stats");
    let out = guarded(sample_stats(&t, 2, Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(out.samples.len(), 2);
    assert_eq!(out.truncated, None);
    for s in &out.samples {
        assert!(s.get("statsHistory").is_none(), "statsHistory dropped");
        assert!(s["memory_stats"]["usage"].is_u64());
        assert!(s["currentHistorySample"].is_object());
    }
    let t = target(&sim, "/environments/0/ws/containers/ghost/stats");
    let err = guarded(sample_stats(&t, 1, Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert!(matches!(err, HandlerError::Arcane(_)), "{err:?}");
    assert!(
        err.to_string().contains("Failed to stream container stats"),
        "{err}"
    );

    let t = target(&sim, "/environments/0/ws/system/stats");
    let out = guarded(sample_system_stats(
        &t,
        1,
        Duration::from_secs(1),
        Duration::from_secs(10),
    ))
    .await
    .unwrap();
    assert_eq!(out.samples.len(), 1);
    assert_eq!(out.samples[0]["hostname"], "arcane-sim");
    assert!(out.samples[0]["memoryTotal"].is_u64());
    let reqs = hooks(&sim).requests().await.unwrap();
    let last = reqs.last().unwrap().clone();
    assert_eq!(last["query"], "interval=1");
    sim.shutdown().await;
}

#[tokio::test]
async fn exec_output_against_the_simulator() {
    let sim = sim().await;
    let t = target(&sim, "/environments/0/ws/containers/web-1/terminal");
    let out = guarded(run_exec(&t, "echo hello world", &ExecOptions::default()))
        .await
        .unwrap();
    // Echoed input, prompts, the marker line and the exit line are gone.
    assert_eq!(out.output, "hello world");
    // The simulator's toy shell cannot expand $?, so no exit code (the presentation says so:
    // `present/text.rs`).
    assert_eq!(out.exit_code, None);
    let reqs = hooks(&sim).requests().await.unwrap();
    assert_eq!(reqs[0]["websocket"], true);
    sim.shutdown().await;
}

#[tokio::test]
async fn exec_error_frame_and_shell_param() {
    let sim = sim().await;
    // prometheus-1 is exited: Arcane's "Error creating exec" text frame, then an abrupt close.
    let t = target(&sim, "/environments/0/ws/containers/prometheus-1/terminal");
    let opts = ExecOptions {
        shell: Some("/bin/bash".into()),
        ..ExecOptions::default()
    };
    let err = guarded(run_exec(&t, "ls", &opts)).await.unwrap_err();
    assert!(matches!(err, HandlerError::Arcane(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("Error creating exec: failed to create exec"),
        "{text}"
    );
    assert!(text.contains("is not running"), "{text}");
    assert!(!text.contains('\r'));
    let reqs = hooks(&sim).requests().await.unwrap();
    assert_eq!(reqs[0]["query"], "shell=%2Fbin%2Fbash");
    sim.shutdown().await;
}

#[tokio::test]
async fn dropped_connection_and_auth_failures_are_clear_errors() {
    let sim = sim().await;
    hooks(&sim)
        .add_faults(&json!({"path": "/ws/containers/[^/]+/logs$", "kind": "drop"}))
        .await
        .unwrap();
    let t = target(&sim, "/environments/0/ws/containers/web-1/logs");
    let err = guarded(collect_logs(&t, &quick_logs(10)))
        .await
        .unwrap_err();
    assert!(matches!(err, HandlerError::Dropped(_)), "{err:?}");
    assert!(err.to_string().contains("Retry"), "{err}");

    // Wrong key: the 401 body's message is quoted, the key is not.
    let mut bad = target(&sim, "/environments/0/ws/containers/web-1/logs");
    bad.headers = vec![("X-API-Key".into(), "wrong-key-123".into())];
    let err = guarded(collect_logs(&bad, &quick_logs(10)))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, HandlerError::Rejected { status: 401, .. }),
        "{err:?}"
    );
    assert!(text.contains("API key"), "{text}");
    assert!(!text.contains("wrong-key-123"));
    assert!(!format!("{bad:?}").contains("wrong-key-123"));

    // Nothing listening: a connect error naming the URL and what to check.
    let addr = sim.local_addr();
    sim.shutdown().await;
    let t = WsTarget {
        url: format!("ws://{addr}/api/environments/0/ws/system/stats"),
        headers: vec![],
        tls: None,
        max_message_bytes: arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
    };
    let err = guarded(sample_stats(&t, 1, Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert!(matches!(err, HandlerError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("ARCANE_URL"));
}

/// A scripted terminal that behaves like a real shell for the marker line: echoes the input
/// with a prompt and answers `printf '\n__AMCP_%s_%s__\n' <nonce> "$?"` with exit status 3.
async fn scripted_terminal() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        ws.send(Message::Binary(b"/ # ".to_vec().into()))
            .await
            .unwrap();
        while let Some(Ok(m)) = ws.next().await {
            let input = match m {
                Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
                Message::Text(t) => t.as_str().to_string(),
                _ => break,
            };
            let mut out = String::new();
            for line in input.lines() {
                out.push_str(&format!("{line}\r\n"));
                if let Some(rest) = line.strip_prefix("printf '\\n__AMCP_%s_%s__\\n' ") {
                    let nonce = rest.split_whitespace().next().unwrap_or("");
                    out.push_str(&format!("\r\n__AMCP_{nonce}_3__\r\n/ # "));
                } else if line == "exit" {
                    out.push_str("");
                } else {
                    out.push_str("\u{1b}[1;34mbin\u{1b}[0m  etc\r\nls: /missing: No such file or directory\r\n/ # ");
                }
            }
            if ws
                .send(Message::Binary(out.into_bytes().into()))
                .await
                .is_err()
            {
                break;
            }
        }
    });
    (addr, task)
}

#[tokio::test]
async fn exec_exit_code_from_the_marker() {
    let (addr, task) = scripted_terminal().await;
    let t = WsTarget {
        url: format!("ws://{addr}/api/environments/0/ws/containers/web-1/terminal"),
        headers: vec![],
        tls: None,
        max_message_bytes: arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
    };
    let out = guarded(run_exec(&t, "ls / /missing", &ExecOptions::default()))
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(
        out.output,
        "bin  etc\nls: /missing: No such file or directory"
    );
    assert_eq!(out.truncated, None);
    task.abort();
}

#[tokio::test]
async fn exec_size_cap() {
    let (addr, task) = scripted_terminal().await;
    let t = WsTarget {
        url: format!("ws://{addr}/x"),
        headers: vec![],
        tls: None,
        max_message_bytes: arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
    };
    let opts = ExecOptions {
        max_bytes: 8,
        ..ExecOptions::default()
    };
    let out = guarded(run_exec(&t, "ls", &opts)).await.unwrap();
    assert!(out.truncated.as_deref().unwrap().contains("maxBytes=8"));
    assert!(out.output.len() <= 8);
    task.abort();
}
