//! Errors as Arcane really answers them (WIRE.md §2), injected with simulator faults: each is an
//! `isError` result with a next step — 401 the credential, 403 the permission, 404 the list
//! action, daemon/agent unreachable the environment checks (not "missing"); a write that times
//! out says it may have happened; streams end in errors or get cut; startup without URL or
//! credential fails clearly.

mod server_support;

use serde_json::json;
use server_support::*;

fn exec(action: &str, params: serde_json::Value) -> serde_json::Value {
    json!({"action": action, "params": params, "confirm": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_hints() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let run = |a: &'static str, p: serde_json::Value| {
        let client = &client;
        async move { call(client, "arcane_execute_action", exec(a, p)).await }
    };

    // 404 on a read: the list action that finds valid IDs.
    let e = err(&run("container.get", json!({"containerId": "nope"})).await);
    assert!(e.contains("404") && e.contains("container.list"), "{e}");
    // Arcane's 500 for an action on a missing container is a not-found too.
    let e = err(&run("container.restart", json!({"containerId": "nope"})).await);
    assert!(
        e.contains("500") && e.contains("container.list") && e.contains("does not exist"),
        "{e}"
    );

    // 403: the permission and the role assignment.
    sim.fault(json!({"method": "POST", "path": "/containers/[^/]+/start$", "kind": "status", "status": 403,
        "body": {"title": "Forbidden", "status": 403, "detail": "permission denied: containers:start"}})).await;
    let e = err(&run("container.start", json!({"containerId": "prometheus-1"})).await);
    assert!(e.contains("containers:start") && e.contains("role"), "{e}");

    // Docker daemon down: not a missing resource; points at the environment checks.
    sim.fault(json!({"method": "GET", "path": "/containers$", "kind": "status", "status": 500,
        "body": {"title": "Internal Server Error", "status": 500, "detail": "Failed to list containers: failed to list Docker containers: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"}})).await;
    let e = err(&run("container.list", json!({})).await);
    assert!(
        e.contains("Docker daemon")
            && e.contains("environment.test")
            && e.contains("environment.get"),
        "{e}"
    );
    assert!(!e.contains("does not exist"), "{e}");

    // Remote environment whose agent is unreachable (plain-JSON body).
    sim.fault(json!({"path": "/environments/env-2/", "kind": "agent_unreachable"}))
        .await;
    let e = err(&run("container.list", json!({"environmentId": "env-2"})).await);
    assert!(
        e.contains("502") && e.contains("Edge agent is not connected") && e.contains("agent"),
        "{e}"
    );
    assert!(e.contains("environment.test") && e.contains("env-2"), "{e}");

    // A 404 that says the daemon is unreachable is not a missing container either.
    sim.fault(json!({"method": "GET", "path": "/containers/web-1$", "kind": "status", "status": 404,
        "body": {"success": false, "error": "Proxy request failed: Get \"http://agent:3553\": dial tcp 10.0.0.5:3553: connect: connection refused"}})).await;
    let e = err(&run("container.get", json!({"containerId": "web-1"})).await);
    assert!(
        e.contains("environment.test") && !e.contains("does not exist"),
        "{e}"
    );

    // 422 validation from Arcane: its details are listed.
    sim.fault(json!({"method": "POST", "path": "/volumes$", "kind": "status", "status": 422,
        "body": {"title": "Unprocessable Entity", "status": 422, "detail": "validation failed",
                 "errors": [{"message": "expected required property name to be present", "location": "body", "value": {}}]}})).await;
    let e = err(&run("volume.create", json!({"name": "v1"})).await);
    assert!(
        e.contains("validation failed") && e.contains("expected required property name"),
        "{e}"
    );

    // Malformed JSON on a read.
    sim.fault(json!({"method": "GET", "path": "/containers$", "kind": "malformed_json"}))
        .await;
    let e = err(&run("container.list", json!({})).await);
    assert!(e.contains("could not be read"), "{e}");

    // Streams: done → success; an error line → isError quoting it; cut → "cut short".
    let r = run("image.pull", json!({"imageName": "nginx:1.27-alpine"})).await;
    let v = ok(&r);
    assert_eq!(v["done"], true, "{v}");
    sim.fault(json!({"path": "/images/pull$", "kind": "stream_error", "body": {"error": "failed to initiate image pull for nope: denied"}})).await;
    let e = err(&run("image.pull", json!({"imageName": "nope"})).await);
    assert!(
        e.contains("failed to initiate image pull for nope: denied"),
        "{e}"
    );
    sim.fault(json!({"path": "/images/pull$", "kind": "truncated_stream"}))
        .await;
    let e = err(&run("image.pull", json!({"imageName": "nginx:1.27-alpine"})).await);
    assert!(e.contains("cut short"), "{e}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_and_timeout_hints() {
    let sim = Sim::start().await;
    // A wrong API key: 401 names the credential to check.
    let bad = spawn(&sim.base(), "wrong-key", &["--tool-surface", "individual"]).await;
    let e = err(&call(&bad, "arcane_container_list", json!({})).await);
    assert!(e.contains("401") && e.contains("ARCANE_API_KEY"), "{e}");
    bad.cancel().await.ok();

    // A write that times out may have happened: say so, and how to check.
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--timeout", "1"],
    )
    .await;
    sim.fault(json!({"method": "POST", "path": "/restart$", "kind": "delay", "delayMs": 2500}))
        .await;
    let e = err(&call(
        &client,
        "arcane_container_restart",
        json!({"containerId": "web-1"}),
    )
    .await);
    assert!(
        e.contains("timed out")
            && e.contains("may have happened")
            && e.contains("arcane_container_get"),
        "{e}"
    );
    client.cancel().await.ok();

    // Arcane unreachable.
    let gone = spawn("http://127.0.0.1:9", "k", &[]).await;
    let e = err(&call(
        &gone,
        "arcane_execute_action",
        exec("container.list", json!({})),
    )
    .await);
    assert!(
        e.contains("Cannot connect to Arcane") && e.contains("ARCANE_URL"),
        "{e}"
    );
    gone.cancel().await.ok();
}

#[test]
fn startup_needs_url_and_credential() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
            .env_clear()
            .args(args)
            .output()
            .unwrap()
    };
    let spec = spec_path();
    let spec = spec.to_str().unwrap();
    let out = run(&["--spec", spec, "--api-key", "k"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ARCANE_URL"));
    let out = run(&["--spec", spec, "--arcane-url", "http://127.0.0.1:9"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ARCANE_API_KEY") && stderr.contains("ARCANE_TOKEN"),
        "{stderr}"
    );
    // Booleans accept on/off and 1/0.
    let out = run(&["--read-only", "maybe"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("true/false"));
}
