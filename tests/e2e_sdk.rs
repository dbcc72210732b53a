//! End-to-end (`scripts/e2e.sh`): the official MCP SDKs of other languages
//! as clients of the real binary — the Python SDK (`tests/python/`, pinned as [`PY_MCP`]) and the
//! TypeScript SDK (`tests/typescript/`, pinned by its package-lock) — over stdio and Streamable
//! HTTP: every surface, prompts, live resources, the flat profile's results against their
//! output schemas, and the 2025-11-25 form of MCP tasks. A missing SDK fails the test, saying
//! what to install.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::process_support::{BIN, HttpServer, repo};
use crate::server_support::{self, Sim, spec_path};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// ---- over stdio ------------------------------------------------------------------------------

/// The Python SDK pinned for this test (`scripts/e2e.sh` installs it).
pub(crate) const PY_MCP: &str = "mcp==1.26.0";

/// Runs a script of `tests/typescript/` with the real binary (and `extra`) and reads the JSON
/// report it prints, the way [`python_script`] does for the Python SDK.
fn typescript_script(script: &str, extra: &[&std::ffi::OsStr]) -> Value {
    let dir = repo().join("tests/typescript");
    let install = "npm ci --prefix tests/typescript --no-audit --no-fund";
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "this test needs the MCP TypeScript SDK: run `{install}` (Node.js 18 or later)"
    );
    let out = Command::new("node")
        .arg(dir.join(script))
        .arg(BIN)
        .args(extra)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("this test needs Node.js ({e}); then `{install}`"));
    assert!(
        out.status.success(),
        "the TypeScript client failed:\n{}",
        stderr(&out)
    );
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

/// Runs a script of `tests/python/` with the binary and `extra` arguments; its one JSON line.
fn python_script(script: &str, extra: &[&std::ffi::OsStr]) -> Value {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs Python 3 ({python}: {e}); install it and then `{python} -m pip install '{PY_MCP}'`")
        });
    assert!(
        probe.status.success(),
        "this test needs the MCP Python SDK: run `{python} -m pip install '{PY_MCP}'` ({})",
        String::from_utf8_lossy(&probe.stderr).trim()
    );
    let out = Command::new(&python)
        .arg(repo().join("tests/python").join(script))
        .arg(BIN)
        .args(extra)
        .current_dir(repo())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the Python client failed:\n{}",
        stderr(&out)
    );
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

/// The Python SDK adds `arcane-mcp demo` as a client config would, with no `--spec` and from a
/// directory with no spec in it (the built-in document).
#[test]
fn python_sdk_client_is_answered_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let report = python_script("mcp_client.py", &[dir.path().as_os_str()]);
    let cat = server_support::catalog();
    for (surface, tools) in [
        ("dynamic", 2),
        ("meta", cat.domains.len()),
        ("individual", cat.actions.len()),
    ] {
        let r = &report[surface];
        assert_eq!(r["server"], "arcane-mcp", "{surface}: {r}");
        assert!(r["has_tool"].as_bool().unwrap(), "{surface}: {r}");
        assert_eq!(r["tools"], tools, "{surface}: {r}");
        assert_eq!(r["is_error"], false, "{surface}: {r}");
        assert!(r["text"].as_str().unwrap().contains("| web-1 |"), "{r}");
        assert_eq!(r["structured_items"], 7, "{surface}: {r}");
    }
    assert!(
        report["dynamic"]["find"]
            .as_str()
            .unwrap()
            .contains("container.restart")
    );
    assert_eq!(report["dynamic"]["resource"], 1);
}

/// What both SDKs' prompt scripts (`tests/python/prompts.py`, `tests/typescript/prompts.mjs`)
/// must report: on every surface and profile the catalog's prompts (under `--read-only` those
/// whose actions all read), each naming only served actions, arguments completed from the
/// simulator's names, a clear error for a missing argument; an operator's prompt added while
/// the server runs with `prompts/list_changed`, and a broken entry keeping the last good one.
fn assert_prompts_report(sdk: &str, report: &Value) {
    let cat = server_support::catalog();
    let all: Vec<&str> = cat.prompts.iter().map(|p| p.name.as_str()).collect();
    let reading: Vec<&str> = cat
        .prompts
        .iter()
        .filter(|p| p.actions().iter().all(|id| !cat.get(id).unwrap().safety.mutating))
        .map(|p| p.name.as_str())
        .collect();
    assert!(all.len() >= 11 && !reading.is_empty(), "{all:?}");
    for run in [
        "dynamic",
        "meta",
        "individual",
        "individual-flat",
        "dynamic-read-only",
    ] {
        let r = &report[run];
        let listed: Vec<&str> = r["prompts"]
            .as_object()
            .unwrap_or_else(|| panic!("{sdk} {run}: {r}"))
            .keys()
            .map(String::as_str)
            .collect();
        let want = if run.ends_with("read-only") {
            &reading
        } else {
            &all
        };
        assert_eq!(&listed, want, "{sdk} {run}");
        assert_eq!(r["list_changed"], true, "{sdk} {run}");
        assert_eq!(r["completions"], true, "{sdk} {run}");
        assert_eq!(r["unserved"], json!([]), "{sdk} {run}");
        for (name, p) in r["prompts"].as_object().unwrap() {
            assert!(p["named"].as_u64().unwrap() > 0, "{sdk} {run} {name}: {p}");
            assert_eq!(p["roles"], json!(["user"]), "{sdk} {run} {name}");
            assert!(
                !p["text"].as_str().unwrap().contains("{{"),
                "{sdk} {run} {name}"
            );
        }
        let missing = r["missing_error"].as_str().unwrap_or_default();
        assert!(
            missing.contains("argument `container` is required")
                || (run.ends_with("read-only") && missing.contains("is not served here")),
            "{sdk} {run}: {missing}"
        );
    }
    let args = &report["individual"]["prompts"];
    let has = |prompt: &str, arg: &str, value: &str| {
        args[prompt]["arguments"][arg]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == value))
    };
    assert!(
        has("troubleshoot-container", "container", "web-1"),
        "{sdk}: {args}"
    );
    assert!(
        has("update-project-images", "project", "webshop"),
        "{sdk}: {args}"
    );
    assert!(
        has("host-attention", "environment", "local"),
        "{sdk}: {args}"
    );
    assert!(
        has("back-up-volume", "volume", "webshop_db-data"),
        "{sdk}: {args}"
    );
    let reload = &report["reload"];
    assert_eq!(reload["added"], json!(["restart-web"]), "{sdk}: {reload}");
    assert!(
        reload["text"]
            .as_str()
            .unwrap()
            .ends_with("Restart `web-1` with `container.restart`."),
        "{sdk}: {reload}"
    );
    let failed = reload["failure_logged"][0].as_str().unwrap_or_default();
    assert!(
        failed.contains("ours.yaml:4: prompt `restart-web`: the template uses `{{nobody}}`"),
        "{sdk}: {reload}"
    );
    assert_eq!(reload["kept"], true, "{sdk}: {reload}");
}

/// Prompts with the Python SDK over stdio.
#[test]
fn python_sdk_gets_prompts_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let report = python_script("prompts.py", &[dir.path().as_os_str()]);
    assert_prompts_report("Python", &report);
}

/// Prompts with the TypeScript SDK over stdio.
#[test]
fn typescript_sdk_gets_prompts_on_every_surface() {
    let report = typescript_script("prompts.mjs", &[]);
    assert_prompts_report("TypeScript", &report);
}

/// Live resources with the Python SDK over stdio (`tests/python/live.py`): subscribed to a
/// container, its project and the dashboard of `demo`, it hears the container stopped and the
/// project taken down, and reads the new state.
#[test]
fn python_sdk_hears_live_resources_over_stdio() {
    assert_live_report("Python", &python_script("live.py", &[]));
}

/// The same with the TypeScript SDK over stdio (`tests/typescript/live.mjs`).
#[test]
fn typescript_sdk_hears_live_resources_over_stdio() {
    let report = typescript_script("live.mjs", &[]);
    assert_live_report("TypeScript", &report);
}

/// What both SDKs' live-resource scripts must report: each step heard, only what was
/// subscribed to.
fn assert_live_report(sdk: &str, r: &Value) {
    assert_eq!(r["subscribe"], true, "{sdk}: {r}");
    assert_eq!(r["stopped"], true, "{sdk}: {r}");
    assert_eq!(r["container_heard"], true, "{sdk}: {r}");
    assert_eq!(r["dashboard_heard_after_stop"], true, "{sdk}: {r}");
    assert_eq!(r["container_state"], "exited", "{sdk}: {r}");
    assert_eq!(r["down"], true, "{sdk}: {r}");
    assert_eq!(r["dashboard_heard_after_down"], true, "{sdk}: {r}");
    assert_eq!(r["project_heard_after_down"], true, "{sdk}: {r}");
    assert_eq!(
        r["heard"],
        json!([
            "arcane://container/web-1",
            "arcane://dashboard",
            "arcane://project/webshop"
        ]),
        "{sdk}: {r}"
    );
}

/// Live resources over HTTP with two Python SDK callers (`tests/python/live_http.py`), each
/// with its own token and session: one client stream for both, reconnected after the
/// simulator cut it, closed after the last subscription (B's ended with its session); each
/// caller hears its own subscriptions only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_live_resources_over_http_never_cross() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let sim = Sim::start().await;
    let server = HttpServer::start(
        &sim.base(),
        Some(sim.sim.api_key()),
        &[
            "--auth-token",
            "tok-a",
            "--auth-token",
            "tok-b",
            "--subscription-poll-ms",
            "250",
        ],
        &[],
    )
    .await;
    let out = tokio::process::Command::new(&python)
        .arg(repo().join("tests/python/live_http.py"))
        .args([
            format!("{}/mcp", server.base),
            "tok-a".into(),
            "tok-b".into(),
            sim.base(),
        ])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "the Python client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["subscribe"], true, "{r}");
    assert_eq!(r["reconnected"], true, "{r}");
    for k in [
        "a_heard_web",
        "a_heard_dashboard",
        "b_heard_dashboard",
        "b_heard_api",
    ] {
        assert_eq!(r[k], true, "{k}: {r}");
    }
    assert_eq!(r["streams_while_subscribed"], json!([1, 1]), "{r}");
    assert_eq!(r["streams_after_b_left"], json!([1, 1]), "{r}");
    assert_eq!(r["closed_after_the_last"], true, "{r}");
    assert_eq!(r["stream_requests"], 2, "{r}");
    assert_eq!(
        r["a"],
        json!(["arcane://container/web-1", "arcane://dashboard"]),
        "{r}"
    );
    assert_eq!(
        r["b"],
        json!(["arcane://container/api-1", "arcane://dashboard"]),
        "{r}"
    );
    server.stop().await;
}

/// The flat profile's sweep with the Python SDK, which validates every structuredContent
/// against the tool's declared outputSchema: no result is rejected.
#[test]
fn python_sdk_accepts_every_flat_result() {
    let report = python_script("flat_sweep.py", &[spec_path().as_os_str()]);
    let cat = server_support::catalog();
    let json_actions = cat
        .actions
        .iter()
        .filter(|a| a.output.kind == arcane_catalog::ResultKind::Json)
        .count();
    eprintln!("Python SDK, flat profile: {report}");
    assert_eq!(report["tools"], cat.actions.len(), "{report}");
    assert_eq!(report["declared"], json_actions, "{report}");
    assert_eq!(report["called"], json_actions, "{report}");
    assert_eq!(report["rejected"], json!([]), "{report}");
    assert!(report["ok"].as_u64().unwrap() > 250, "{report}");
}

/// The same sweep with the TypeScript SDK (`tests/typescript/`, pinned with a lockfile; `scripts/e2e.sh`
/// installs it with `npm ci`), whose `callTool` validates every structuredContent too.
#[test]
fn typescript_sdk_accepts_every_flat_result() {
    let report = typescript_script("flat_sweep.mjs", &[spec_path().as_os_str()]);
    let python = python_script("flat_sweep.py", &[spec_path().as_os_str()]);
    eprintln!("TypeScript SDK, flat profile: {report}");
    assert_eq!(report["rejected"], json!([]), "{report}");
    assert_eq!(report["declared"], python["declared"], "{report}");
    assert_eq!(
        report["ok"], python["ok"],
        "both SDKs see the same calls succeed"
    );
}

// ---- over Streamable HTTP ----

/// The official Python SDK's Streamable HTTP client on every surface: initialize (a session),
/// list, call, a resource, progress of a stream, a call cancelled mid-stream (its request to
/// Arcane dropped), list-changed after a hot reload; a wrong token gets 401 with the challenge
/// and a foreign Origin 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_http_client_is_answered_on_every_surface() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = repo().join("tests/python/http_client.py");
    sdk_http_client_on_every_surface("Python", "py-token", |args| {
        let mut c = tokio::process::Command::new(&python);
        c.arg(&script).args(args);
        c
    })
    .await;
}

/// Starts a server over HTTP for each surface (token `token`, an empty overlay directory the
/// client may edit for a hot reload), runs an SDK client script with its URL, token, surface,
/// overlay directory and the simulator's URL, and checks the report it prints.
async fn sdk_http_client_on_every_surface(
    sdk: &str,
    token: &str,
    client: impl Fn(&[String]) -> tokio::process::Command,
) {
    let sim = Sim::start().await;
    let cat = server_support::catalog();
    for (surface, tools) in [
        ("dynamic", 2),
        ("meta", cat.domains.len()),
        ("individual", cat.actions.len()),
    ] {
        sim.reset().await;
        let overrides = tempfile::tempdir().unwrap();
        let overrides_dir = overrides.path().to_str().unwrap().to_string();
        let server = HttpServer::for_sim(
            &sim,
            &["--tool-surface", surface, "--overrides", &overrides_dir],
            token,
        )
        .await;
        let out = client(&[
            format!("{}/mcp", server.base),
            token.to_string(),
            surface.to_string(),
            overrides_dir.clone(),
            sim.base(),
        ])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("the {sdk} client cannot run: {e}"));
        assert!(
            out.status.success(),
            "the {sdk} client failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_sdk_client_report(surface, tools, &r);
        server.stop().await;
    }
}

/// What both SDK clients report on a surface serving `tools` tools: each feature worked.
fn assert_sdk_client_report(surface: &str, tools: usize, r: &Value) {
    assert_eq!(r["server"], "arcane-mcp", "{surface}: {r}");
    assert_eq!(r["session"], true, "{surface}: {r}");
    assert_eq!(r["tools"], tools, "{surface}: {r}");
    assert_eq!(r["is_error"], false, "{surface}: {r}");
    assert!(r["text"].as_str().unwrap().contains("| web-1 |"), "{r}");
    assert_eq!(r["resource"], 1, "{r}");
    assert_eq!(r["pull_error"], false, "{r}");
    assert!(r["progress"].as_u64().unwrap() >= 2, "{surface}: {r}");
    assert_eq!(
        r["aborted"], true,
        "{surface}: the cancelled stream was dropped: {r}"
    );
    assert_eq!(
        r["list_changed"],
        json!(["prompts", "resources", "tools"]),
        "{surface}: {r}"
    );
    // Prompts over HTTP: the reload's withdrawal of container.restart takes the prompt whose
    // job needs it off this session's list.
    let names = |k: &str| -> Vec<String> {
        r[k].as_array()
            .unwrap_or_else(|| panic!("{surface}: {k}: {r}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (before, after) = (names("prompts_before"), names("prompts_after_reload"));
    assert!(
        before.contains(&"troubleshoot-container".to_string()),
        "{surface}: {r}"
    );
    assert!(
        !after.contains(&"troubleshoot-container".to_string()),
        "{surface}: {r}"
    );
    assert!(
        after.contains(&"host-attention".to_string()),
        "{surface}: {r}"
    );
    // The reload withdrew container.restart: one tool fewer where it is a tool of its own.
    let after = if surface == "individual" {
        tools - 1
    } else {
        tools
    };
    assert_eq!(r["tools_after_reload"], after, "{surface}: {r}");
    assert_eq!(r["wrong_token_status"], 401, "{r}");
    assert!(
        r["challenge"].as_str().unwrap().starts_with("Bearer"),
        "401 names the scheme: {r}"
    );
    assert_eq!(r["foreign_origin_status"], 403, "{r}");
}

/// The official TypeScript SDK's Streamable HTTP client on every surface: list, call, a
/// resource, progress of a stream, a call cancelled mid-stream, list-changed after a hot
/// reload; a wrong token gets 401 with the challenge and a foreign Origin 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_http_client_is_answered_on_every_surface() {
    let dir = repo().join("tests/typescript");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "this test needs the MCP TypeScript SDK: run `npm ci --prefix tests/typescript --no-audit --no-fund` (Node.js 18 or later)"
    );
    let script = dir.join("http_client.mjs");
    sdk_http_client_on_every_surface("TypeScript", "ts-token", |args| {
        let mut c = tokio::process::Command::new("node");
        c.arg(&script).args(args);
        c
    })
    .await;
}

// ---- MCP tasks' 2025-11-25 form, with the Python SDK's task client ------------------------

/// Runs `tests/python/tasks_client.py` with `args`; its report.
async fn python_tasks(args: &[std::ffi::OsString]) -> Value {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/tasks_client.py");
    // A hang guard for the script's dozen tasks (some paced streams of a few seconds), not a
    // timing assertion.
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new(&python)
            .arg(&script)
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("hang guard: the Python task client did not finish")
    .unwrap_or_else(|e| panic!("this test needs Python 3 with mcp==1.26.0 ({python}: {e})"));
    assert!(
        out.status.success(),
        "the Python task client failed (it needs `{python} -m pip install mcp==1.26.0`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What the Python client saw on either transport: the capability and tools' task support, a
/// slow pull as a task with its progress and the plain call's result, cancel, failure, TTL,
/// the limit, an instant action, the search, and a destructive task confirmed first.
fn assert_core_tasks(r: &Value) {
    assert_eq!(r["protocol"], "2025-11-25", "{r}");
    assert_eq!(
        r["capability"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{r}"
    );
    assert_eq!(
        r["task_support"]["arcane_execute_action"], "optional",
        "{r}"
    );
    assert_eq!(r["task_support"]["arcane_find_action"], Value::Null, "{r}");
    // The task comes back while the pull still runs; it ends completed with the plain result.
    assert_eq!(r["created"]["status"], "working", "{r}");
    assert_eq!(r["created"]["ttl"], 60000, "{r}");
    assert_eq!(r["created"]["pollInterval"], 1000, "{r}");
    assert_eq!(r["first_status"], "working", "{r}");
    assert_eq!(r["pull_statuses"], json!(["working", "completed"]), "{r}");
    assert_eq!(r["result_equals_plain"], true, "{r}");
    assert_eq!(r["result_related_task"], true, "{r}");
    assert_eq!(r["result_is_error"], false, "{r}");
    assert!(r["progress"].as_u64().unwrap() >= 2, "{r}");
    assert_eq!(r["progress_related_task"], true, "{r}");
    assert_eq!(r["listed"], true, "{r}");
    // Cancelled mid-pull: the stream closed, the task cancelled, a second cancel refused.
    assert_eq!(r["pulling"], true, "{r}");
    assert_eq!(r["cancel_answer"], "cancelled", "{r}");
    assert_eq!(r["cancel_aborted"], true, "{r}");
    assert_eq!(r["cancel_final"], "cancelled", "{r}");
    assert!(
        r["cancel_message"].as_str().unwrap().contains("cancel"),
        "{r}"
    );
    assert_eq!(r["cancel_again"]["code"], -32602, "{r}");
    assert!(
        r["cancel_again"]["message"]
            .as_str()
            .unwrap()
            .contains("terminal status 'cancelled'"),
        "{r}"
    );
    // A failed stream: failed, with the plain call's text.
    assert_eq!(r["failed_status"], "failed", "{r}");
    assert_eq!(r["failed_same_text"], true, "{r}");
    assert_eq!(r["failed_message_is_text"], true, "{r}");
    assert!(
        r["failed_plain_text"].as_str().unwrap().contains("denied"),
        "{r}"
    );
    // The TTL asked for (1 s) stops the pull still running.
    assert_eq!(r["ttl_given"], 1000, "{r}");
    assert_eq!(r["ttl_status"], "failed", "{r}");
    assert!(
        r["ttl_message"].as_str().unwrap().contains("task expired"),
        "{r}"
    );
    assert_eq!(r["ttl_aborted"], true, "{r}");
    assert!(
        r["ttl_result"]["message"]
            .as_str()
            .unwrap()
            .contains("task expired"),
        "{r}"
    );
    // --max-tasks 1.
    assert!(
        r["limit"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-tasks 1"),
        "{r}"
    );
    assert_eq!(r["limit_sent"], 0, "{r}");
    // An instant action completes with the plain result; the search takes no task.
    assert_eq!(r["instant_status"], "completed", "{r}");
    assert_eq!(r["instant_equals_plain"], true, "{r}");
    assert_eq!(r["find_task"]["code"], -32601, "{r}");
    // Destructive: asked once, then sent once; declined: nothing sent, no task.
    assert_eq!(r["prune_asked"], 1, "{r}");
    assert_eq!(r["prune_status"], "completed", "{r}");
    assert_eq!(r["prune_sent"], 1, "{r}");
    assert!(
        r["declined"]["message"]
            .as_str()
            .unwrap()
            .contains("No task was made"),
        "{r}"
    );
    assert_eq!(r["declined_asked"], 1, "{r}");
    assert_eq!(r["declined_sent"], 0, "{r}");
}

/// The audit lines of the report's tasks: the start and the outcome of each (the TTL's
/// `expired`), and the declined prune refused with no task.
fn assert_core_audit(log: &std::path::Path, r: &Value) {
    let lines: Vec<Value> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |task: &Value| -> Vec<String> {
        lines
            .iter()
            .filter(|l| &l["task"] == task)
            .map(|l| l["outcome"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(of(&r["pull_id"]), ["started", "ok"], "{lines:?}");
    assert_eq!(of(&r["ttl_id"]), ["started", "expired"], "{lines:?}");
    assert_eq!(of(&r["prune_id"]), ["started", "ok"], "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l["outcome"] == "cancelled" && l["task"].is_string()),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l["action"] == "system.prune"
            && l["outcome"] == "refused"
            && l["task"].is_null()),
        "{lines:?}"
    );
}

/// The 2025-11-25 form over the real binary's stdio, with the Python SDK's task client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2025_11_25_tasks_over_stdio() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let mut args: Vec<std::ffi::OsString> = vec!["stdio".into(), sim.base().into(), "--".into()];
    args.push(env!("CARGO_BIN_EXE_arcane-mcp").into());
    args.extend(server_support::serve_args(
        &sim.base(),
        sim.sim.api_key(),
        &["--max-tasks", "1", "--audit-log", log.to_str().unwrap()],
    ));
    let r = python_tasks(&args).await;
    assert_core_tasks(&r);
    assert_core_audit(&log, &r);
}

/// The 2025-11-25 form over Streamable HTTP: besides the above, another token can neither get,
/// read, list nor cancel a task, and a task outlives its session: a new session of the same
/// token reads its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2025_11_25_tasks_over_http() {
    use crate::process_support::HttpServer;
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let server = HttpServer::for_sim(
        &sim,
        &["--max-tasks", "1", "--audit-log", log.to_str().unwrap()],
        "alice-token,bob-token",
    )
    .await;
    let args: Vec<std::ffi::OsString> = vec![
        "http".into(),
        sim.base().into(),
        format!("{}/mcp", server.base).into(),
        "alice-token".into(),
        "bob-token".into(),
    ];
    let r = python_tasks(&args).await;
    assert_core_tasks(&r);
    for what in ["get", "result", "cancel"] {
        assert_eq!(r["foreign"][what]["code"], -32602, "{what}: {r}");
        assert!(
            r["foreign"][what]["message"]
                .as_str()
                .unwrap()
                .contains("unknown task"),
            "{what}: {r}"
        );
    }
    assert_eq!(r["foreign"]["listed"], false, "{r}");
    assert_eq!(r["new_session_status"], "completed", "{r}");
    assert_eq!(r["new_session_result"]["is_error"], false, "{r}");
    assert!(
        r["new_session_result"]["text"]
            .as_str()
            .unwrap()
            .contains("Pull image"),
        "{r}"
    );
    server.stop().await;
    assert_core_audit(&log, &r);
}
