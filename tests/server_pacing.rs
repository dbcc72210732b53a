//! The limit of calls in flight (`--max-calls-in-flight`, `src/mcp/pacing.rs`): at most N
//! `tools/call` calls of a session run at once, each until its answer is written; the others
//! wait before they run; `ping`, `tools/list` and `arcane_find_action` never wait; a cancelled
//! or failed call gives its slot back, and a call cancelled while waiting never reaches Arcane.
//! The client here writes and reads the protocol's lines itself, so the order of what it sends
//! is the order the server reads.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::server_support::*;

/// A session whose lines the test writes and reads; answers are kept by their `id` until
/// asked for, whatever order they come in.
struct Lines {
    reader: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    answers: HashMap<String, Value>,
}

impl Lines {
    async fn open(sim: &Sim, args: &[&str]) -> Lines {
        let io = serve_in_process(&sim.base(), sim.sim.api_key(), args).await;
        let (r, w) = tokio::io::split(io);
        let mut lines = Lines {
            reader: BufReader::new(r),
            writer: w,
            answers: HashMap::new(),
        };
        lines
            .send(
                json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "pacing-test", "version": "1"}}}),
            )
            .await;
        lines.answer("\"init\"").await;
        lines
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        lines
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn call(&mut self, id: impl Into<Value>, action: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "id": id.into(), "method": "tools/call",
            "params": {"name": "arcane_execute_action", "arguments": {"action": action}}}),
        )
        .await;
    }

    async fn cancel(&mut self, id: impl Into<Value>) {
        self.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id.into(), "reason": "test"}}),
        )
        .await;
    }

    /// Sends a ping and reads until its answer: everything sent before it has been read and
    /// dispatched by the server.
    async fn ping(&mut self, id: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        let pong = self.answer(&format!("{id:?}")).await;
        assert_eq!(pong["result"], json!({}), "{pong}");
    }

    /// The answer to `id` (as JSON text: `1`, `"p"`), reading lines until it comes.
    async fn answer(&mut self, id: &str) -> Value {
        guarded(async {
            loop {
                if let Some(a) = self.answers.remove(id) {
                    return a;
                }
                let mut line = String::new();
                let n = self.reader.read_line(&mut line).await.unwrap();
                assert!(n > 0, "the server closed the session");
                let message: Value = serde_json::from_str(&line).unwrap();
                if let Some(id) = message.get("id") {
                    self.answers.insert(id.to_string(), message);
                }
            }
        })
        .await
    }

    /// Whether an answer to `id` has been read so far.
    fn answered(&self, id: &str) -> bool {
        self.answers.contains_key(id)
    }
}

/// The requests the simulator has seen whose path ends with `suffix`.
async fn seen(sim: &Sim, suffix: &str) -> usize {
    sim.requests()
        .await
        .iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
        .count()
}

/// Waits until the simulator has seen `n` requests ending with `suffix`.
async fn until_seen(sim: &Sim, suffix: &str, n: usize) {
    guarded(async {
        while seen(sim, suffix).await < n {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
}

fn is_error(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_the_limit_wait_and_every_slot_comes_back() {
    let sim = Sim::start().await;
    // The first two image lists hang at "Arcane" until cancelled; nothing else is slowed.
    sim.fault(json!({"method": "GET", "path": "/images$", "kind": "delay", "delayMs": 600_000, "times": 2}))
        .await;
    let mut s = Lines::open(&sim, &["--max-calls-in-flight", "2"]).await;

    // Two calls hold both slots.
    s.call(1, "image.list").await;
    s.call(2, "image.list").await;
    until_seen(&sim, "/images", 2).await;
    // Three more wait for a slot; the ping behind them is answered all the same, and so are a
    // search and the tool list.
    for id in 3..=5 {
        s.call(id, "container.list").await;
    }
    s.ping("p1").await;
    s.send(
        json!({"jsonrpc": "2.0", "id": "find", "method": "tools/call", "params": {
        "name": "arcane_find_action", "arguments": {"query": "restart a container"}}}),
    )
    .await;
    let found = s.answer("\"find\"").await;
    assert!(!is_error(&found), "{found}");
    s.send(json!({"jsonrpc": "2.0", "id": "tools", "method": "tools/list"}))
        .await;
    let tools = s.answer("\"tools\"").await;
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(2));
    // A second call under an ID still in flight is refused, not run.
    s.call(1, "container.list").await;
    let refused = s.answer("1").await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already used")),
        "{refused}"
    );
    assert_eq!(
        seen(&sim, "/containers").await,
        0,
        "no call beyond the limit reached Arcane"
    );
    for id in ["3", "4", "5"] {
        assert!(!s.answered(id), "call {id} ran beyond the limit");
    }

    // A waiting call cancelled never reaches Arcane; cancelling the two hanging calls gives
    // their slots to the others.
    s.cancel(4).await;
    s.ping("p2").await;
    s.cancel(1).await;
    s.cancel(2).await;
    for id in ["3", "5"] {
        let a = s.answer(id).await;
        assert!(!is_error(&a), "{a}");
    }
    s.ping("p3").await;
    assert_eq!(seen(&sim, "/containers").await, 2, "call 4 never ran");
    for id in ["1", "2", "4"] {
        assert!(!s.answered(id), "cancelled call {id} was answered");
    }

    // Failed calls give their slots back too: a second burst, a few of its calls failing at
    // Arcane, completes through the two slots.
    sim.fault(json!({"method": "GET", "path": "/containers$", "kind": "status", "status": 500, "times": 3}))
        .await;
    for id in 10..30 {
        s.call(id, "container.list").await;
    }
    let mut failed = 0;
    for id in 10..30 {
        let a = s.answer(&id.to_string()).await;
        assert!(a.get("result").is_some(), "{a}");
        failed += usize::from(is_error(&a));
    }
    assert_eq!(failed, 3);
    assert_eq!(seen(&sim, "/containers").await, 22);
}

/// Each HTTP session's transport is paced as stdio's is: with one slot, a call hanging at
/// Arcane holds the next call back (a ping and the tool list still answer) until it is
/// cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_session_is_paced_too() {
    use rmcp::model::{CallToolRequest, ClientRequest, PingRequest};
    use rmcp::service::PeerRequestOptions;

    let sim = Sim::start().await;
    sim.fault(json!({"method": "GET", "path": "/images$", "kind": "delay", "delayMs": 600_000, "times": 1}))
        .await;
    let server = crate::process_support::HttpServer::for_sim(
        &sim,
        &["--max-calls-in-flight", "1"],
        "pacing-token",
    )
    .await;
    let client = crate::process_support::http_client(&server.base, "pacing-token", &[]).await;
    let peer = client.peer().clone();
    let run = |action: &str| {
        let mut args = serde_json::Map::new();
        args.insert("action".into(), action.into());
        ClientRequest::CallToolRequest(CallToolRequest::new(
            rmcp::model::CallToolRequestParams::new("arcane_execute_action").with_arguments(args),
        ))
    };
    let hanging = peer
        .send_cancellable_request(run("image.list"), PeerRequestOptions::no_options())
        .await
        .unwrap();
    until_seen(&sim, "/images", 1).await;
    let waiting = peer
        .send_cancellable_request(run("container.list"), PeerRequestOptions::no_options())
        .await
        .unwrap();
    guarded(peer.send_request(ClientRequest::PingRequest(PingRequest::default())))
        .await
        .unwrap();
    assert_eq!(guarded(peer.list_all_tools()).await.unwrap().len(), 2);
    assert_eq!(seen(&sim, "/containers").await, 0, "the second call waited");

    hanging.cancel(Some("test".into())).await.unwrap();
    let answer = guarded(waiting.await_response()).await.unwrap();
    assert!(
        matches!(answer, rmcp::model::ServerResult::CallToolResult(ref r) if r.is_error != Some(true)),
        "{answer:?}"
    );
    assert_eq!(seen(&sim, "/containers").await, 1);
    drop(client);
    server.stop().await;
}
