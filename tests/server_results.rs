//! What a model reads in results, end to end against the simulator (docs/output-format.md):
//! closed sets of values refused locally, destructive calls that did nothing saying so, paging
//! hints, next steps that fit the state, no "grand total 0" for database lists, container
//! stats as `docker stats` computes them, and a value that is one object's ID and another's
//! name refused as ambiguous (crates/engine/src/resolve.rs).

use crate::server_support;

use serde_json::{Value, json};
use server_support::*;

async fn run(
    client: &Client,
    id: &str,
    params: Value,
    confirm: bool,
) -> rmcp::model::CallToolResult {
    let (tool, args) = shape("dynamic", id, params, confirm);
    call(client, &tool, args).await
}

/// The `Next steps` lines of a text.
fn next_steps(text: &str) -> Vec<String> {
    text.split("**Next steps**")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("- `"))
        .map(|l| l.split('`').nth(1).unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_sets_of_values_are_in_the_schema_and_refused_locally() {
    let cat = catalog();
    let schema = |id: &str| cat.get(id).unwrap().request.input_schema.clone();
    assert_eq!(
        schema("image.prune")["properties"]["mode"]["enum"],
        json!(["dangling", "all", "olderThan"])
    );
    assert_eq!(
        schema("system.prune")["properties"]["volumes"]["properties"]["mode"]["enum"],
        json!(["none", "anonymous", "all"])
    );
    assert_eq!(
        schema("container.create")["properties"]["restartPolicy"]["enum"],
        json!(["no", "always", "unless-stopped", "on-failure"])
    );
    // Every list's sort order, through the shared parameter entry.
    for id in [
        "container.list",
        "environment.list",
        "project.list",
        "image.list",
    ] {
        assert_eq!(
            schema(id)["properties"]["order"]["enum"],
            json!(["asc", "desc"]),
            "{id}"
        );
    }

    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    // The tool's own schema carries them too (what a model sees).
    let r = run(&client, "image.prune", json!({"mode": "everything"}), true).await;
    let e = err(&r);
    assert!(
        e.contains("Invalid parameters for image.prune")
            && e.contains("everything")
            && e.contains("one of dangling|all|olderThan")
            && e.contains("Nothing was sent"),
        "{e}"
    );
    let r = run(&client, "container.list", json!({"order": "DESC"}), false).await;
    assert!(err(&r).contains("DESC"), "{}", text(&r));
    let r = run(
        &client,
        "system.prune",
        json!({"images": {"mode": "dangling"}, "volumes": {"mode": "named"}}),
        true,
    )
    .await;
    assert!(err(&r).contains("/volumes/mode"), "{}", text(&r));
    assert!(
        writes(&sim.requests().await).is_empty(),
        "nothing reached Arcane"
    );
    // A value of the set goes through.
    let r = run(&client, "container.list", json!({"order": "desc"}), false).await;
    ok(&r);
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_that_removed_nothing_says_so() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    // The demo world has one dangling image: the first prune removes it, the second nothing.
    let r = run(&client, "image.prune", json!({"mode": "dangling"}), true).await;
    let first = text(&r);
    assert_eq!(ok(&r)["imagesDeleted"].as_array().unwrap().len(), 1);
    assert!(!first.contains("No image was removed"), "{first}");
    assert!(
        first.contains("spaceReclaimed: 133000000 (133.0 MB)"),
        "{first}"
    );
    let r = run(&client, "image.prune", json!({"mode": "dangling"}), true).await;
    let second = text(&r);
    assert_eq!(ok(&r)["spaceReclaimed"], 0);
    assert!(
        second.starts_with(
            "# Prune unused images\n\n**No image was removed**: `spaceReclaimed` 0, `imagesDeleted` empty — nothing matched `mode: dangling`."
        ),
        "{second}"
    );
    // The system prune names its own selection.
    let r = run(
        &client,
        "system.prune",
        json!({"images": {"mode": "dangling"}, "networks": {"mode": "none"}}),
        true,
    )
    .await;
    let t = text(&r);
    ok(&r);
    assert!(
        t.contains("**Nothing was removed**: `spaceReclaimed` 0")
            && t.contains(
                r#"nothing matched `images: {"mode":"dangling"}`, `networks: {"mode":"none"}`"#
            ),
        "{t}"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_say_how_to_read_the_next_and_db_lists_name_no_grand_total() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    // 7 containers, 3 a page.
    let r = run(&client, "container.list", json!({"limit": 3}), false).await;
    let t = text(&r);
    assert!(
        t.contains(
            "3 item(s) — 7 total, page 1 of 3: call again with `start` 3 and `limit` 3 for page 2"
        ),
        "{t}"
    );
    // An offset off the page boundary: the next page starts after this one.
    let r = run(
        &client,
        "container.list",
        json!({"start": 2, "limit": 3}),
        false,
    )
    .await;
    let t = text(&r);
    assert!(
        t.contains("call again with `start` 5 and `limit` 3 for page 2"),
        "{t}"
    );
    // The last page says nothing more.
    let r = run(
        &client,
        "container.list",
        json!({"start": 6, "limit": 3}),
        false,
    )
    .await;
    let t = text(&r);
    assert!(t.contains("1 item(s) — 7 total, page 3 of 3\n"), "{t}");
    assert!(!t.contains("call again"), "{t}");
    // Past the end.
    let r = run(
        &client,
        "container.list",
        json!({"start": 40, "limit": 3}),
        false,
    )
    .await;
    let t = text(&r);
    assert!(
        t.contains("`start` 40 is past the last of the 7 item(s)"),
        "{t}"
    );
    // A search narrows a Docker list: the count before it is named.
    let r = run(&client, "container.list", json!({"search": "web"}), false).await;
    let t = text(&r);
    assert!(t.contains("1 total (7 before search and filters)"), "{t}");
    // Database lists send grandTotalItems 0 (docs/arcane-wire.md): no "grand total 0".
    let r = run(&client, "environment.list", json!({}), false).await;
    assert_eq!(ok(&r)["pagination"]["grandTotalItems"], 0);
    let t = text(&r);
    assert!(t.contains("2 item(s) — 2 total, page 1 of 1"), "{t}");
    assert!(
        !t.contains("grand total") && !t.contains("before search"),
        "{t}"
    );
    let r = run(&client, "project.list", json!({}), false).await;
    assert!(!text(&r).contains("before search"), "{}", text(&r));
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_steps_fit_the_container_state() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let steps = |t: &str| next_steps(t);
    let r = run(
        &client,
        "container.get",
        json!({"containerId": "prometheus-1"}),
        false,
    )
    .await;
    let exited = steps(&text(&r));
    assert_eq!(ok(&r)["state"]["status"], "exited");
    assert_eq!(
        exited[..2],
        ["container.logs", "container.start"],
        "{exited:?}"
    );
    for never in [
        "container.exec",
        "container.stats",
        "container.stop",
        "container.restart",
    ] {
        assert!(
            !exited.iter().any(|s| s == never),
            "{never} after an exited container: {exited:?}"
        );
    }
    let r = run(
        &client,
        "container.get",
        json!({"containerId": "web-1"}),
        false,
    )
    .await;
    let running = steps(&text(&r));
    assert_eq!(
        running,
        [
            "container.logs",
            "container.restart",
            "container.stop",
            "container.exec"
        ],
        "{}",
        text(&r)
    );
    let r = run(
        &client,
        "container.get",
        json!({"containerId": "cache-1"}),
        false,
    )
    .await;
    let paused = steps(&text(&r));
    assert!(
        paused.iter().any(|s| s == "container.unpause"),
        "{paused:?}"
    );
    assert!(
        !paused
            .iter()
            .any(|s| s == "container.exec" || s == "container.start"),
        "{paused:?}"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_stats_show_cpu_and_memory_as_docker_computes_them() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let r = run(
        &client,
        "container.stats",
        json!({"containerId": "web-1", "samples": 2}),
        false,
    )
    .await;
    let t = text(&r);
    let samples = ok(&r)["samples"].clone();
    // The simulator's second frame: CPU 10 ms of 1 s on 2 CPUs, memory 53477376 minus 1 MiB of
    // inactive page cache, limit 2 GiB.
    let last = &samples[1];
    let cpu_delta = last["cpu_stats"]["cpu_usage"]["total_usage"]
        .as_f64()
        .unwrap()
        - last["precpu_stats"]["cpu_usage"]["total_usage"]
            .as_f64()
            .unwrap();
    let sys_delta = last["cpu_stats"]["system_cpu_usage"].as_f64().unwrap()
        - last["precpu_stats"]["system_cpu_usage"].as_f64().unwrap();
    let want_cpu = cpu_delta / sys_delta * 2.0 * 100.0;
    assert!(
        t.contains(&format!("- CPU: {want_cpu:.2}% of 2 CPU(s)")),
        "{t}"
    );
    assert!(t.contains("(0.00% to 2.00% over the samples)"), "{t}");
    let used = last["memory_stats"]["usage"].as_u64().unwrap()
        - last["memory_stats"]["stats"]["inactive_file"]
            .as_u64()
            .unwrap();
    let pct = used as f64 / 2_147_483_648.0 * 100.0;
    assert!(
        t.contains(&format!(
            "- memory: {} of 2.1 GB ({pct:.2}%), page cache excluded",
            arcane_markdown::human_bytes(used)
        )),
        "{t}"
    );
    // Identifiers still reach the model whole.
    let id = last["id"].as_str().unwrap();
    assert!(t.contains(&format!("- id: {id}")), "{t}");
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

/// Projects `webshop` (its own ID) and a second one named after webshop's ID.
async fn project_named_like_another_id(sim: &Sim) -> (String, String) {
    let mut state = sim.state().await;
    let projects = state["projects"].as_array_mut().unwrap();
    let webshop = projects
        .iter()
        .find(|p| p["name"] == "webshop")
        .unwrap()
        .clone();
    let webshop_id = webshop["id"].as_str().unwrap().to_string();
    let mut twin = webshop.clone();
    let twin_id = "0f0e0d0c-0b0a-4909-8807-060504030201".to_string();
    twin["id"] = json!(twin_id);
    twin["name"] = json!(webshop_id);
    twin["path"] = json!(format!("/app/data/projects/{webshop_id}"));
    projects.push(twin);
    sim.set_state(state).await;
    (webshop_id, twin_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_is_one_projects_id_and_anothers_name_is_refused_as_ambiguous() {
    let sim = Sim::start().await;
    let (webshop_id, twin_id) = project_named_like_another_id(&sim).await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    sim.reset().await;
    let r = run(
        &client,
        "project.get",
        json!({"projectId": webshop_id}),
        false,
    )
    .await;
    let e = err(&r);
    assert!(
        e.contains(&format!("`{webshop_id}` is ambiguous"))
            && e.contains("Nothing was sent")
            // What to pass for each: webshop's name, the twin's ID.
            && e.contains(&format!("- `webshop` — the project `webshop` whose ID is `{webshop_id}`"))
            && e.contains(&format!("- `{twin_id}` — the project `{webshop_id}` whose `name` holds `{webshop_id}` (its ID)")),
        "{e}"
    );
    let log = sim.requests().await;
    assert!(
        !log.iter().any(|r| r["path"]
            .as_str()
            .unwrap()
            .contains(&format!("/projects/{webshop_id}"))),
        "the ambiguous call reached Arcane: {log:?}"
    );
    // Each choice reaches the project it names.
    let r = run(
        &client,
        "project.get",
        json!({"projectId": "webshop"}),
        false,
    )
    .await;
    assert_eq!(ok(&r)["id"], webshop_id);
    let r = run(&client, "project.get", json!({"projectId": twin_id}), false).await;
    assert_eq!(ok(&r)["id"], twin_id);
    assert_eq!(ok(&r)["name"], webshop_id);
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_shaped_name_reaches_its_project_and_unknown_ids_go_as_given() {
    let sim = Sim::start().await;
    let mut state = sim.state().await;
    let projects = state["projects"].as_array_mut().unwrap();
    let mut p = projects[0].clone();
    let name = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
    p["id"] = json!("11111111-2222-4333-8444-555555555555");
    p["name"] = json!(name);
    projects.push(p);
    sim.set_state(state).await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    // A name shaped like an ID is found by its name (it used to be sent as an ID: a 404).
    let r = run(&client, "project.get", json!({"projectId": name}), false).await;
    assert_eq!(ok(&r)["id"], "11111111-2222-4333-8444-555555555555");
    // An ID nothing in the list carries goes as given, and Arcane answers for it.
    let unknown = "99999999-9999-4999-8999-999999999999";
    sim.reset().await;
    let r = run(&client, "project.get", json!({"projectId": unknown}), false).await;
    err(&r);
    assert!(
        sim.requests().await.iter().any(|r| r["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/projects/{unknown}"))),
        "the ID went as given"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}
