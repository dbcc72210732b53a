//! MCP tasks (docs/tasks.md) with rmcp's client, which speaks the 2026-07-28 tasks extension
//! (`io.modelcontextprotocol/tasks`): a long-running call answered at once with a task, its
//! progress, status, result, cancellation, failure, TTL and limits, its confirmation before
//! anything is sent, and its audit lines.

use crate::fixtures::guarded;
use crate::server_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    DetailedTask, ErrorCode, GetTaskParams, Implementation, ProgressNotificationParam, TaskPayload,
    TaskStatus,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use server_support::*;

/// A client that declares the tasks extension (and, when it has an answer, form elicitation),
/// recording progress and questions.
#[derive(Clone, Default)]
struct TaskClient {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    answer: Option<rmcp::model::ElicitationAction>,
    asked: Arc<Mutex<usize>>,
}

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let caps = match self.answer {
            Some(_) => ClientCapabilities::builder()
                .enable_elicitation()
                .enable_tasks()
                .build(),
            None => ClientCapabilities::builder().enable_tasks().build(),
        };
        ClientConfig::new(caps, Implementation::new("tasker", "1"))
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // rmcp 3.11 hands a notification's `_meta` over in its context's extensions.
        if params.meta.is_none() {
            params.meta = context
                .extensions
                .get::<rmcp::model::NotificationMetaObject>()
                .cloned()
                .or_else(|| (!context.meta.0.0.is_empty()).then_some(context.meta));
        }
        self.progress.lock().unwrap().push(params);
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        *self.asked.lock().unwrap() += 1;
        let action = self.answer.clone().expect("asked only when declared");
        let tick = action == rmcp::model::ElicitationAction::Accept;
        Ok(rmcp::model::ElicitResult::new(action).with_content(json!({"confirm": tick})))
    }
}

type Tasker = RunningService<RoleClient, TaskClient>;

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string()).with_arguments(args.as_object().unwrap().clone())
}

/// Calls `tool` and expects a task; returns its ID.
async fn start(client: &Tasker, tool: &str, args: Value) -> String {
    match guarded(client.call_tool_once(params(tool, args)))
        .await
        .unwrap()
    {
        CallToolResponse::Task(t) => {
            assert_eq!(t.task.status, TaskStatus::Working);
            assert!(t.task.poll_interval_ms.is_some_and(|ms| ms > 0), "{t:?}");
            t.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls `tasks/get` until the task ends (within the hang guard).
async fn settle(client: &Tasker, id: &str) -> DetailedTask {
    guarded(async {
        loop {
            let t = client.get_task(GetTaskParams::new(id)).await.unwrap().task;
            if t.status().is_terminal() {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

fn pull(image: &str) -> Value {
    json!({"action": "image.pull", "params": {"imageName": image}})
}

async fn spawn_tasker(sim: &Sim, handler: TaskClient, args: &[&str]) -> Tasker {
    spawn_with(handler, &sim.base(), sim.sim.api_key(), args).await
}

/// A slow pull returns a task at once; progress names the task; `tasks/get` moves to
/// `completed` with the very result the plain call returns (a client without tasks, against a
/// simulator in the same state), and the status message is the last progress line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_pull_is_a_task_whose_result_is_the_plain_calls() {
    let plain_sim = Sim::start().await;
    plain_sim.hooks().set_stream_pace_ms(150).await.unwrap();
    let plain_client = spawn(&plain_sim.base(), plain_sim.sim.api_key(), &[]).await;
    let plain = call(
        &plain_client,
        "arcane_execute_action",
        pull("redis:7.2-alpine"),
    )
    .await;
    assert!(!is_error(&plain), "{}", text(&plain));

    let sim = Sim::start().await;
    sim.hooks().set_stream_pace_ms(150).await.unwrap();
    let handler = TaskClient::default();
    let client = spawn_tasker(&sim, handler.clone(), &[]).await;
    let id = start(&client, "arcane_execute_action", pull("redis:7.2-alpine")).await;
    let done = settle(&client, &id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("expected completed: {done:?}");
    };
    // The plain call's CallToolResult, byte for byte, with the `resultType` every result of
    // the 2026-07-28 shape carries in front.
    let mut expected = serde_json::Map::new();
    expected.insert("resultType".into(), json!("complete"));
    expected.extend(
        serde_json::to_value(&plain)
            .unwrap()
            .as_object()
            .unwrap()
            .clone(),
    );
    assert_eq!(
        serde_json::to_string(result).unwrap(),
        serde_json::to_string(&expected).unwrap(),
        "the task's result is the plain call's, byte for byte"
    );
    let progress = handler.progress.lock().unwrap().clone();
    assert!(progress.len() >= 2, "progress while it ran: {progress:?}");
    for p in &progress {
        let meta = p
            .meta
            .as_ref()
            .unwrap_or_else(|| panic!("progress names its task: {progress:?}"));
        assert_eq!(
            meta.0.get("io.modelcontextprotocol/related-task"),
            Some(&json!({"taskId": id})),
            "{p:?}"
        );
    }
    let last = progress.last().and_then(|p| p.message.clone());
    assert_eq!(done.task.status_message, last, "status message = last line");
    // A plain read is no task even for a client that speaks them: it answers at once.
    match client
        .call_tool_once(params(
            "arcane_execute_action",
            json!({"action": "container.list"}),
        ))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => assert!(!is_error(&r)),
        other => panic!("an instant action is answered plainly: {other:?}"),
    }
    client.cancel().await.ok();
    plain_client.cancel().await.ok();
}

/// `tasks/cancel` mid-pull closes the request to Arcane (the simulator sees its stream
/// aborted) and the task ends `cancelled`, its status message saying what may have happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_stream_and_ends_cancelled() {
    let sim = Sim::start().await;
    sim.hooks().set_stream_pace_ms(400).await.unwrap();
    let client = spawn_tasker(&sim, TaskClient::default(), &[]).await;
    let id = start(&client, "arcane_execute_action", pull("redis:7.2-alpine")).await;
    // Until the pull's stream is open.
    guarded(async {
        while sim.hooks().streams().await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    let done = settle(&client, &id).await;
    assert_eq!(done.status(), TaskStatus::Cancelled, "{done:?}");
    let message = done.task.status_message.clone().unwrap_or_default();
    assert!(message.contains("cancel"), "{message}");
    // The simulator learns of the closed connection at its next paced write, so the task may
    // end before it does: wait (under the hang guard) for the stream to read aborted, and never
    // completed.
    let closed = |streams: &[Value]| {
        streams
            .iter()
            .any(|s| s["path"].as_str().unwrap_or("").ends_with("/pull") && s["aborted"] == true)
    };
    let streams = guarded(async {
        loop {
            let streams = sim.hooks().streams().await.unwrap();
            if closed(&streams) || streams.iter().any(|s| s["completed"] == true) {
                break streams;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(closed(&streams), "the stream was closed: {streams:?}");
    client.cancel().await.ok();
}

/// A stream that ends with an error ends the task `failed`, its error's message the plain
/// call's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_stream_ends_failed_with_the_plain_calls_text() {
    // Two simulators in the same state: the error names the activity, counted per simulator.
    let fault = json!({"path": "/images/pull$", "kind": "stream_error",
        "body": {"error": "failed to initiate image pull for nope: denied"}});
    let plain_sim = Sim::start().await;
    plain_sim.fault(fault.clone()).await;
    let plain_client = spawn(&plain_sim.base(), plain_sim.sim.api_key(), &[]).await;
    let plain = err(&call(&plain_client, "arcane_execute_action", pull("nope")).await);
    let sim = Sim::start().await;
    sim.fault(fault).await;
    let client = spawn_tasker(&sim, TaskClient::default(), &[]).await;
    let id = start(&client, "arcane_execute_action", pull("nope")).await;
    let done = settle(&client, &id).await;
    let TaskPayload::Failed { error } = &done.payload else {
        panic!("expected failed: {done:?}");
    };
    assert_eq!(error["message"], json!(plain), "{error:?}");
    assert!(plain.contains("denied"), "{plain}");
    client.cancel().await.ok();
    plain_client.cancel().await.ok();
}

/// `--task-ttl-max` is the TTL each task carries; a finished task is forgotten after it, and
/// a task of the same caller counts against `--max-tasks` while it runs, with a clear error
/// that sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_and_limits() {
    let sim = Sim::start().await;
    let client = spawn_tasker(
        &sim,
        TaskClient::default(),
        &["--task-ttl-max", "1", "--max-tasks", "1"],
    )
    .await;
    let id = start(&client, "arcane_execute_action", pull("redis:7.2-alpine")).await;
    let got = client.get_task(GetTaskParams::new(&id)).await.unwrap().task;
    assert_eq!(got.task.ttl_ms, Some(1000));
    settle(&client, &id).await;
    // Forgotten once its TTL has passed: -32602, as a task that never was.
    let gone = guarded(async {
        loop {
            match client.get_task(GetTaskParams::new(&id)).await {
                Err(rmcp::ServiceError::McpError(e)) => return e,
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await;
    assert_eq!(gone.code, ErrorCode::INVALID_PARAMS, "{gone:?}");

    // One running task at most for this caller.
    sim.reset().await;
    sim.hooks().set_stream_pace_ms(300).await.unwrap();
    let first = start(&client, "arcane_execute_action", pull("redis:7.2-alpine")).await;
    guarded(async {
        while sim.hooks().streams().await.unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let before = sim.requests().await.len();
    let refused = match client
        .call_tool_once(params("arcane_execute_action", pull("nginx:1.27-alpine")))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => err(&r),
        other => panic!("expected a refusal: {other:?}"),
    };
    assert!(refused.contains("--max-tasks 1"), "{refused}");
    let after = sim.requests().await;
    assert!(
        writes(&after[before..]).is_empty(),
        "nothing sent: {:?}",
        &after[before..]
    );
    client
        .cancel_task(CancelTaskParams::new(&first))
        .await
        .unwrap();
    settle(&client, &first).await;
    client.cancel().await.ok();
}

/// A destructive task asks the person before anything is sent: a decline sends nothing and
/// makes no task; an accept runs it as a task. The audit log has the task's start and its
/// outcome, and a cancellation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_task_is_confirmed_first_and_audited() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let args = ["--audit-log", log.to_str().unwrap()];
    let prune = json!({"action": "system.prune",
        "params": {"images": {"mode": "dangling"}, "containers": {"mode": "stopped"}},
        "confirm": true});

    let declining = TaskClient {
        answer: Some(Decline),
        ..Default::default()
    };
    let client = spawn_tasker(&sim, declining.clone(), &args).await;
    let r = match client
        .call_tool_once(params("arcane_execute_action", prune.clone()))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => r,
        other => panic!("a declined call is no task: {other:?}"),
    };
    assert!(text(&r).contains("declined"), "{}", text(&r));
    assert_eq!(*declining.asked.lock().unwrap(), 1);
    assert!(writes(&sim.requests().await).is_empty(), "nothing sent");
    client.cancel().await.ok();

    let accepting = TaskClient {
        answer: Some(Accept),
        ..Default::default()
    };
    let client = spawn_tasker(&sim, accepting.clone(), &args).await;
    let id = start(&client, "arcane_execute_action", prune).await;
    assert_eq!(*accepting.asked.lock().unwrap(), 1);
    let done = settle(&client, &id).await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert_eq!(
        writes(&sim.requests().await).len(),
        1,
        "the prune was sent once"
    );

    // A cancelled pull's outcome.
    sim.hooks().set_stream_pace_ms(400).await.unwrap();
    let pulled = start(&client, "arcane_execute_action", pull("redis:7.2-alpine")).await;
    guarded(async {
        while !sim
            .hooks()
            .streams()
            .await
            .unwrap()
            .iter()
            .any(|s| s["path"].as_str().unwrap_or("").ends_with("/pull"))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    client
        .cancel_task(CancelTaskParams::new(&pulled))
        .await
        .unwrap();
    settle(&client, &pulled).await;
    client.cancel().await.ok();

    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |task: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["task"] == task)
            .map(|l| l["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(of(&id), ["started", "ok"], "{lines:?}");
    assert_eq!(of(&pulled), ["started", "cancelled"], "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l["outcome"] == "refused" && l["task"].is_null()),
        "the declined prune: {lines:?}"
    );
}

/// Over HTTP a task is its caller's: another token can neither see, read nor cancel it; it
/// keeps running when the session that started it closes, and a new session of the same
/// caller reads its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_task_is_its_callers_and_outlives_its_session() {
    use crate::process_support::{HttpServer, http_client_with};
    let sim = Sim::start().await;
    sim.hooks().set_stream_pace_ms(100).await.unwrap();
    let server = HttpServer::for_sim(&sim, &[], "alice-token,bob-token").await;
    let alice = http_client_with(TaskClient::default(), &server.base, "alice-token", &[]).await;
    let id = match guarded(
        alice.call_tool_once(params("arcane_execute_action", pull("redis:7.2-alpine"))),
    )
    .await
    .unwrap()
    {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    };
    // Alice's session closes while the pull runs.
    alice.cancel().await.ok();

    let bob = http_client_with(TaskClient::default(), &server.base, "bob-token", &[]).await;
    for e in [
        bob.get_task(GetTaskParams::new(&id)).await.unwrap_err(),
        bob.cancel_task(CancelTaskParams::new(&id))
            .await
            .unwrap_err(),
    ] {
        match e {
            rmcp::ServiceError::McpError(e) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
                assert!(e.message.contains("unknown task"), "{e:?}");
            }
            other => panic!("{other}"),
        }
    }
    bob.cancel().await.ok();

    let again = http_client_with(TaskClient::default(), &server.base, "alice-token", &[]).await;
    let done = guarded(async {
        loop {
            let t = again.get_task(GetTaskParams::new(&id)).await.unwrap().task;
            if t.status().is_terminal() {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("expected completed: {done:?}");
    };
    assert_eq!(result["isError"], json!(false), "{result:?}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Pull image"),
        "{result:?}"
    );
    again.cancel().await.ok();
    server.stop().await;
}

/// A 2026-07-28 client (no session; its capabilities in each request's `_meta`) is asked by an
/// incomplete answer (`input_required`) before anything is sent; its retry with the person's
/// yes is the call that becomes a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_destructive_task_is_asked_by_a_round_trip_first() {
    let sim = Sim::start().await;
    let handler = TaskClient {
        answer: Some(rmcp::model::ElicitationAction::Accept),
        ..Default::default()
    };
    let client = server_support::spawn_speaking(
        handler,
        rmcp::service::ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        },
        &sim.base(),
        sim.sim.api_key(),
        &[],
    )
    .await;
    let prune = json!({"action": "system.prune",
        "params": {"images": {"mode": "dangling"}}, "confirm": true});
    let mut request = params("arcane_execute_action", prune);
    let question = match client.call_tool_once(request.clone()).await.unwrap() {
        CallToolResponse::InputRequired(q) => q,
        other => panic!("asked first: {other:?}"),
    };
    assert!(writes(&sim.requests().await).is_empty(), "nothing sent yet");
    let answers: rmcp::model::InputResponses = question
        .input_requests
        .clone()
        .unwrap_or_default()
        .into_keys()
        .map(|k| (k, json!({"action": "accept", "content": {"confirm": true}})))
        .collect();
    assert!(!answers.is_empty(), "{question:?}");
    request.input_responses = Some(answers);
    request.request_state = question.request_state.clone();
    let id = match client.call_tool_once(request).await.unwrap() {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("the confirmed retry is a task: {other:?}"),
    };
    let done = settle(&client, &id).await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert_eq!(
        writes(&sim.requests().await).len(),
        1,
        "sent once, after the yes"
    );
    client.cancel().await.ok();
}

// ---- the 2025-11-25 form (the Python SDK's task client: e2e_sdk.rs) --------------------

/// A session whose protocol lines the test writes and reads itself (the 2025-11-25 form's
/// requests, which rmcp's client cannot send): the server in-process behind the stdio
/// transport's own line reader.
struct RawSession {
    reader: tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl RawSession {
    async fn open(sim: &Sim, protocol: &str, args: &[&str]) -> (RawSession, Value) {
        let io = server_support::serve_in_process(&sim.base(), sim.sim.api_key(), args).await;
        let (r, w) = tokio::io::split(io);
        let mut s = RawSession {
            reader: tokio::io::BufReader::new(r),
            writer: w,
        };
        let init = s
            .request(
                "init",
                "initialize",
                json!({"protocolVersion": protocol, "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}),
            )
            .await;
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (s, serde_json::from_str(&init).unwrap())
    }

    /// A connection that has sent nothing yet: for 2026-07-28 requests, which need no
    /// `initialize`.
    async fn bare(sim: &Sim) -> RawSession {
        let io = server_support::serve_in_process(&sim.base(), sim.sim.api_key(), &[]).await;
        let (r, w) = tokio::io::split(io);
        RawSession {
            reader: tokio::io::BufReader::new(r),
            writer: w,
        }
    }

    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// Sends a request and returns the line of its answer as written.
    async fn request(&mut self, id: &str, method: &str, params: Value) -> String {
        use tokio::io::AsyncBufReadExt;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        guarded(async {
            loop {
                let mut line = String::new();
                assert!(self.reader.read_line(&mut line).await.unwrap() > 0, "EOF");
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id {
                    return line.trim_end().to_string();
                }
            }
        })
        .await
    }
}

/// The `result` of an answer's line, as its bytes were written.
fn raw_result<'a>(line: &'a str, id: &str) -> &'a str {
    let prefix = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"result\":");
    line.strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or_else(|| panic!("a result: {line}"))
}

/// `tasks/result` answers the very bytes the plain call answers (on a simulator in the same
/// state), with only the `io.modelcontextprotocol/related-task` `_meta` the 2025-11-25 spec
/// requires added at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_task_result_is_the_plain_calls_byte_for_byte() {
    let call = json!({"name": "arcane_execute_action", "arguments": pull("redis:7.2-alpine")});
    let plain_sim = Sim::start().await;
    plain_sim.hooks().set_stream_pace_ms(50).await.unwrap();
    let (mut plain, _) = RawSession::open(&plain_sim, "2025-11-25", &[]).await;
    let line = plain.request("c", "tools/call", call.clone()).await;
    let expected = raw_result(&line, "c").to_string();

    let sim = Sim::start().await;
    sim.hooks().set_stream_pace_ms(50).await.unwrap();
    let (mut s, _) = RawSession::open(&sim, "2025-11-25", &[]).await;
    let mut asked = call.clone();
    asked["task"] = json!({"ttl": 30000});
    let created: Value = serde_json::from_str(&s.request("c", "tools/call", asked).await).unwrap();
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 30000, "{created}");
    let id = task["taskId"].as_str().unwrap();
    let line = s.request("r", "tasks/result", json!({"taskId": id})).await;
    let got = raw_result(&line, "r");
    assert!(!expected.contains("\"_meta\""), "{expected}");
    let related = format!(
        ",\"_meta\":{{\"io.modelcontextprotocol/related-task\":{{\"taskId\":\"{id}\"}}}}}}"
    );
    assert_eq!(
        got,
        format!("{}{related}", &expected[..expected.len() - 1]),
        "the plain call's bytes, the related task added"
    );
    // The same task through the 2025-11-25 tasks/get, completed.
    let got: Value =
        serde_json::from_str(&s.request("g", "tasks/get", json!({"taskId": id})).await).unwrap();
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["ttl"], 30000, "{got}");
    // A `task` that is no object is refused before anything runs.
    let bad = s
        .request(
            "b",
            "tools/call",
            json!({"name": "arcane_execute_action", "arguments": pull("x"), "task": 5}),
        )
        .await;
    let bad: Value = serde_json::from_str(&bad).unwrap();
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// A 2025-11-25 session sees the `tasks` capability and `execution.taskSupport: "optional"` on
/// the tools that take a task (every execute tool of the dynamic and meta surfaces, the
/// individual tools of long-running actions only); an older session sees neither, exactly as
/// before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_support_is_declared_to_2025_11_25_sessions_only() {
    let sim = Sim::start().await;
    let cat = server_support::catalog();
    for surface in ["dynamic", "meta", "individual"] {
        let (mut s, init) =
            RawSession::open(&sim, "2025-11-25", &["--tool-surface", surface]).await;
        assert_eq!(
            init["result"]["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
            "{init}"
        );
        let listed: Value =
            serde_json::from_str(&s.request("l", "tools/list", json!({})).await).unwrap();
        let tools = listed["result"]["tools"].as_array().unwrap();
        assert!(listed["result"].get("resultType").is_none(), "{listed}");
        for t in tools {
            let name = t["name"].as_str().unwrap();
            let takes = match surface {
                "dynamic" => name == "arcane_execute_action",
                "meta" => true,
                _ => cat
                    .actions
                    .iter()
                    .any(|a| a.request.long_running && a.individual_tool_name() == name),
            };
            let expected = if takes {
                json!({"taskSupport": "optional"})
            } else {
                Value::Null
            };
            assert_eq!(
                t.get("execution").cloned().unwrap_or(Value::Null),
                expected,
                "{surface}: {name}"
            );
        }
        assert!(
            tools.iter().any(|t| t.get("execution").is_some()),
            "{surface}: some tool takes a task"
        );
        let (mut old, init) =
            RawSession::open(&sim, "2025-06-18", &["--tool-surface", surface]).await;
        assert!(
            init["result"]["capabilities"].get("tasks").is_none(),
            "{init}"
        );
        if surface == "dynamic" {
            // A `task` field from such a session is ignored: the call is answered plainly.
            let answered: Value = serde_json::from_str(
                &old.request(
                    "c",
                    "tools/call",
                    json!({"name": "arcane_execute_action",
                        "arguments": {"action": "container.list"}, "task": {"ttl": 5000}}),
                )
                .await,
            )
            .unwrap();
            assert_eq!(answered["result"]["isError"], false, "{answered}");
            assert!(answered["result"].get("task").is_none(), "{answered}");
        }
        let listed: Value =
            serde_json::from_str(&old.request("l", "tools/list", json!({})).await).unwrap();
        let before = listed["result"]["tools"].as_array().unwrap();
        assert!(
            before.iter().all(|t| t.get("execution").is_none()),
            "{surface}"
        );
        // Apart from `execution`, the 2025-11-25 list is the older one, tool for tool.
        let without: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.as_object_mut().unwrap().remove("execution");
                t
            })
            .collect();
        assert!(without == *before, "{surface}: the same tools");
    }
}

/// Which protocol has which tasks methods: 2025-11-25 all four of its core form; 2026-07-28 the
/// extension's `tasks/get`, `tasks/update` and `tasks/cancel` only (SEP-2663 removed
/// `tasks/result` and `tasks/list`); an older protocol none. A method a protocol lacks is
/// "method not found", not an unknown task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_protocol_answers_only_its_own_tasks_methods() {
    let sim = Sim::start().await;
    let code = |line: String| -> Value {
        let v: Value = serde_json::from_str(&line).unwrap();
        v["error"]["code"].clone()
    };
    let task = json!({"taskId": "no-such-task"});

    let (mut old, _) = RawSession::open(&sim, "2025-06-18", &[]).await;
    for method in ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] {
        let params = if method == "tasks/list" {
            json!({})
        } else {
            task.clone()
        };
        assert_eq!(
            code(old.request("o", method, params).await),
            -32601,
            "2025-06-18: {method}"
        );
    }

    let (mut core, _) = RawSession::open(&sim, "2025-11-25", &[]).await;
    let listed: Value =
        serde_json::from_str(&core.request("l", "tasks/list", json!({})).await).unwrap();
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        assert_eq!(
            code(core.request("c", method, task.clone()).await),
            -32602,
            "2025-11-25: {method} of an unknown task"
        );
    }

    let mut new = RawSession::bare(&sim).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    for method in ["tasks/result", "tasks/list"] {
        let mut params = if method == "tasks/list" {
            json!({})
        } else {
            task.clone()
        };
        params["_meta"] = meta.clone();
        let line = new.request("n", method, params).await;
        assert_eq!(code(line.clone()), -32601, "2026-07-28: {method}: {line}");
    }
    // The extension's own tasks/get is there: an unknown task, not an unknown method.
    let mut params = task.clone();
    params["_meta"] = meta.clone();
    let line = new.request("g", "tasks/get", params).await;
    assert_eq!(code(line.clone()), -32602, "2026-07-28: tasks/get: {line}");
}

/// A long change run as a task is kept in the history (`--history`, docs/undo.md) when it
/// completes, with the call that takes it back filled from its answer: the backup the task
/// made, deleted by its ID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_run_as_a_task_is_kept_in_the_history_when_it_completes() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.jsonl");
    let args = ["--history", file.to_str().unwrap()];
    let client = spawn_tasker(&sim, TaskClient::default(), &args).await;
    let backup =
        json!({"action": "volume_backup.create", "params": {"volumeName": "webshop_db-data"}});
    let id = start(&client, "arcane_execute_action", backup).await;
    let done = settle(&client, &id).await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    let text = std::fs::read_to_string(&file).expect("the history file");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["action"], "volume_backup.create", "{text}");
    let undo = &lines[0]["undo"];
    assert_eq!(undo["kind"], "call", "{text}");
    assert_eq!(undo["action"], "volume_backup.delete", "{text}");
    let made = undo["params"]["backupId"]
        .as_str()
        .expect("the backup's ID");
    assert!(
        sim.state().await.to_string().contains(made),
        "the backup {made} is in the simulator"
    );
    client.cancel().await.ok();
}
