//! Errors as Arcane really answers them (docs/arcane-wire.md#errors), injected with simulator faults: each is an
//! `isError` result with a next step — 401 the credential, 403 the permission, 404 the list
//! action, daemon/agent unreachable the environment checks (not "missing"); a write that times
//! out says it may have happened; streams end in errors or get cut; startup without URL or
//! credential fails clearly.

use crate::server_support;

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
    assert!(e.contains("does not exist in environment `0`."), "{e}");
    // What lives outside any environment names none.
    let e = err(&run("api_key.get", json!({"id": "nope"})).await);
    assert!(
        e.contains("does not exist. Find valid ones with `api_key.list`."),
        "{e}"
    );
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
    // An error status instead of a stream: Arcane's words and the next step, read like every
    // other error answer.
    sim.fault(
        json!({"path": "/projects/[^/]+/up$", "kind": "status", "status": 404,
        "body": {"success": false, "error": "project not found"}}),
    )
    .await;
    let e = err(&run("project.up", json!({"projectId": "webshop"})).await);
    assert!(
        e.contains("Arcane answered 404")
            && e.contains("project not found")
            && e.contains("Next step"),
        "{e}"
    );
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
    let out = run(&["--read-only=maybe"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("true/false"));
}

/// Arcane 2.8.x's known wire bugs (docs/arcane-wire.md), on the simulator's 2.8.x by default and
/// on main where the wire differs: the server resolves names to IDs, pages by real keys, and
/// never lets a misleading answer read as something else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arcane_2_8_wire_bugs() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let run = |a: &'static str, p: serde_json::Value| {
        let client = &client;
        async move { call(client, "arcane_execute_action", exec(a, p)).await }
    };
    let nginx = arcane_sim::state::demo_image_id("nginx:1.27-alpine");
    let api = arcane_sim::state::demo_image_id("ghcr.io/getarcaneapp/demo-api:2.3.1");

    // Images by ID, by name:tag and by a reference with `/`: each reaches Arcane as the
    // `sha256:` ID, with `:` sent raw (measured: marcoaperez/arcane-mcp-server
    // docs/balances/2026-08-19-f4.md §5.1-5.2).
    for (given, id) in [
        (nginx.as_str(), nginx.as_str()),
        ("nginx:1.27-alpine", nginx.as_str()),
        ("ghcr.io/getarcaneapp/demo-api:2.3.1", api.as_str()),
    ] {
        sim.reset().await;
        let out = ok(&run("image.get", json!({"imageId": given})).await);
        assert_eq!(out["id"], id, "{given}");
        let log = sim.requests().await;
        assert_eq!(
            log.last().unwrap()["path"],
            format!("/api/environments/0/images/{id}"),
            "{given}"
        );
    }
    // An unknown reference: a clear error naming candidates, nothing sent to the image route.
    sim.reset().await;
    let e = err(&run("image.get", json!({"imageId": "ghcr.io/acme/nope:1"})).await);
    assert!(
        e.contains("No image") && e.contains("image.list") && e.contains("nginx:1.27-alpine"),
        "{e}"
    );
    assert!(
        sim.requests()
            .await
            .iter()
            .all(|r| r["path"] != "/api/environments/0/images/ghcr.io")
    );

    // A project by name: resolved to its database ID (a name is a 404 on Arcane).
    let out = ok(&run("project.get", json!({"projectId": "webshop"})).await);
    assert_eq!(out["id"], "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01");
    // Projects created after the list was kept: looked up again on the miss. Two projects with
    // one name are ambiguous: both IDs named, nothing sent.
    let mut state = sim.state().await;
    for (id, name) in [
        ("0b5e6c1d-1111-4222-8333-944455556666", "late"),
        ("0b5e6c1d-1111-4222-8333-944455557777", "twin"),
        ("0b5e6c1d-1111-4222-8333-944455558888", "twin"),
    ] {
        let mut p = state["projects"][0].clone();
        p["id"] = json!(id);
        p["name"] = json!(name);
        state["projects"].as_array_mut().unwrap().push(p);
    }
    sim.set_state(state).await;
    let out = ok(&run("project.get", json!({"projectId": "late"})).await);
    assert_eq!(out["id"], "0b5e6c1d-1111-4222-8333-944455556666");
    sim.reset().await;
    let e = err(&run("project.get", json!({"projectId": "twin"})).await);
    assert!(
        e.contains("more than one project")
            && e.contains("944455557777")
            && e.contains("944455558888"),
        "{e}"
    );
    assert!(
        sim.requests()
            .await
            .iter()
            .all(|r| !r["path"].as_str().unwrap().contains("/projects/0b5e"))
    );
    sim.reset().await;
    // 2.8.x reports no build directive (arcane#3685).
    let out = ok(&run("project.get", json!({"projectId": "monitoring"})).await);
    assert_eq!(out["hasBuildDirective"], false);

    // An environment by name; logs of a container whose name has `-` on that remote one.
    let out = ok(&run(
        "container.logs",
        json!({"environmentId": "staging-agent", "containerId": "worker-1", "timeoutSeconds": 2}),
    )
    .await);
    assert!(!out["lines"].as_array().unwrap().is_empty(), "{out}");
    // Non-edge environments carry no `connected` (and no API key).
    let out = ok(&run("environment.get", json!({"environmentId": "staging-agent"})).await);
    assert_eq!(out["id"], "env-2");
    assert!(
        out.get("connected").is_none() && out.get("apiKey").is_none(),
        "{out}"
    );

    // Page walks over volumes and networks return every item once: the server sends a real
    // sort key (marcoaperez/arcane-mcp-server src/__e2e__/paginacion.e2e.ts).
    for list in ["volume.list", "network.list"] {
        let mut names = Vec::new();
        let mut start = 0;
        loop {
            let out = ok(&run(list, json!({"start": start, "limit": 2})).await);
            let total = out["pagination"]["totalItems"].as_u64().unwrap();
            for i in out["items"].as_array().unwrap() {
                names.push(i["name"].as_str().unwrap().to_string());
            }
            start += 2;
            if start >= total {
                assert_eq!(names.len() as u64, total);
                break;
            }
        }
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "{list} repeated an item: {names:?}"
        );
    }

    // Health: the 500 is a known bug, not an outage (arcane#3638; measured 5/5 in
    // marcoaperez/arcane-mcp-server docs/balances/2026-08-16-f2.md).
    let e = err(&run("system.health", json!({})).await);
    assert!(
        e.contains("known Arcane bug") && e.contains("system.docker_info"),
        "{e}"
    );
    assert!(!e.contains("retry later"), "{e}");

    // Vulnerabilities of an image never scanned: the 404 says never scanned or wrong ID and how
    // to scan; the empty list says empty is not clean (marcoaperez/arcane-mcp-server
    // src/__e2e__/vulnerabilidades.e2e.ts and docs/balances/2026-08-19-f4.md §5.3).
    let e = err(&run(
        "vulnerability.image_summary",
        json!({"imageId": "alpine:3.20"}),
    )
    .await);
    assert!(
        e.contains("never scanned") && e.contains("wrong") && e.contains("vulnerability.scan"),
        "{e}"
    );
    let r = run(
        "vulnerability.image_list",
        json!({"imageId": "alpine:3.20"}),
    )
    .await;
    ok(&r);
    assert!(text(&r).contains("does NOT mean"), "{}", text(&r));
    // Ignoring a CVE leaves the counts as they were (docs/balances/2026-08-19-f4.md §5.3 of
    // marcoaperez/arcane-mcp-server).
    ok(&run(
        "vulnerability.ignore",
        json!({"imageId": "nginx:1.27-alpine", "vulnerabilityId": "CVE-2024-6119", "pkgName": "openssl"}),
    )
    .await);
    let out = ok(&run(
        "vulnerability.image_summary",
        json!({"imageId": "nginx:1.27-alpine"}),
    )
    .await);
    assert_eq!(out["summary"]["total"], 3);
    let out = ok(&run("vulnerability.scan", json!({"imageId": "alpine:3.20"})).await);
    assert_eq!(out["status"], "scanning");

    // Swarm off, a finished activity, an update check of an image not pulled.
    let e = err(&run(
        "swarm_service.list",
        json!({"environmentId": "staging-agent"}),
    )
    .await);
    assert!(e.contains("409") && e.contains("Swarm mode is off"), "{e}");
    assert!(!e.contains("Check the parameters"), "{e}");
    let pulled = ok(&run("image.pull", json!({"imageName": "redis:7"})).await);
    let activity = pulled["activityId"].as_str().unwrap().to_string();
    let e = err(&run("activity.cancel", json!({"activityId": activity})).await);
    assert!(e.contains("409") && e.contains("nothing to cancel"), "{e}");
    let missing = format!("sha256:{}", "1".repeat(64));
    let e = err(&run("image_update.check_by_id", json!({"imageId": missing})).await);
    assert!(e.contains("not pulled") && e.contains("image.pull"), "{e}");

    // Build workspace: mkdir answers 204 with no body (marcoaperez/arcane-mcp-server
    // src/__e2e__/builds.e2e.ts).
    ok(&run("build.browse_mkdir", json!({"path": "ctx"})).await);
    let r = run("build.browse", json!({})).await;
    ok(&r);
    assert!(text(&r).contains("ctx"), "{}", text(&r));

    // main, where the wire differs: an unscanned image's list is a 404 with the same hint.
    sim.set_version("main").await;
    let e = err(&run(
        "vulnerability.image_list",
        json!({"imageId": "busybox-none"}),
    )
    .await);
    assert!(e.contains("No image"), "{e}");
    let e = err(&run(
        "vulnerability.image_list",
        json!({"imageId": "postgres:16-alpine"}),
    )
    .await);
    assert!(
        e.contains("never scanned") && e.contains("vulnerability.scan"),
        "{e}"
    );
    let out = ok(&run(
        "image.get",
        json!({"imageId": "ghcr.io/getarcaneapp/demo-api:2.3.1"}),
    )
    .await);
    assert_eq!(out["id"], api);
    client.cancel().await.ok();

    // The configured default environment may be a name too.
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--environment", "staging-agent"],
    )
    .await;
    let out = ok(&call(
        &client,
        "arcane_execute_action",
        exec("container.list", json!({})),
    )
    .await);
    let names: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["names"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cron-1", "worker-1"]);
    client.cancel().await.ok();
}

/// A paused container: `container.start` is refused with Docker's words as Arcane relays them,
/// the inspect it points to offers `container.unpause`, and that starts it running again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_container_is_unpaused_not_started() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let run = |a: &'static str, p: serde_json::Value| {
        let client = &client;
        async move { call(client, "arcane_execute_action", exec(a, p)).await }
    };
    let e = err(&run("container.start", json!({"containerId": "cache-1"})).await);
    assert!(
        e.contains("cannot start a paused container, try unpause instead")
            && e.contains("container.get"),
        "{e}"
    );
    assert_eq!(sim.container("cache-1").await.unwrap()["state"], "paused");
    let got = run("container.get", json!({"containerId": "cache-1"})).await;
    let t = text(&got);
    assert!(
        t.contains("status=paused") && t.contains("`container.unpause`"),
        "{t}"
    );
    let r = run("container.unpause", json!({"containerId": "cache-1"})).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(sim.container("cache-1").await.unwrap()["state"], "running");
}
