//! The history as tools (docs/undo.md): `history.list` and `history.undo` through a real MCP
//! client on each surface, against a server started with `--history FILE` as the recipe
//! writes it. An undo is the call the history recorded, asked whatever its class, naming the
//! change; a drift is refused until `force` and a yes; what cannot be undone is refused with
//! why, sending nothing; a preview records nothing; a server without a history says how to
//! keep one; a caller sees only the changes its grant may run.

use serde_json::{Value, json};

use crate::server_confirm::Asker;
use crate::server_support::{Sim, call, is_error, shape, spawn, spawn_with, text, writes};
use crate::server_undo::with_history;

/// A call of `id` as `surface` shapes it.
async fn run<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    surface: &str,
    id: &str,
    params: Value,
    confirm: bool,
) -> rmcp::model::CallToolResult {
    let (tool, args) = shape(surface, id, params, confirm);
    call(client, &tool, args).await
}

/// The changes `history.list` shows, newest first.
async fn listed<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    surface: &str,
) -> Vec<Value> {
    let r = run(client, surface, "history.list", json!({}), false).await;
    assert!(!is_error(&r), "{}", text(&r));
    r.structured_content.unwrap()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn running(c: &Option<Value>) -> bool {
    c.as_ref().unwrap()["state"] == "running"
}

/// Stops web-1 through `client`, the change every test here takes back.
async fn stop_web<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    surface: &str,
) {
    let r = run(
        client,
        surface,
        "container.stop",
        json!({"containerId": "web-1"}),
        false,
    )
    .await;
    assert!(!is_error(&r), "{surface}: {}", text(&r));
}

/// On each surface: a container stopped is listed with how it is undone; `history.undo` asks
/// (starting a container is routine, yet an undo is asked), the question naming the change
/// and the call that puts it back; after the yes the container runs again, the undo is a
/// change of its own, and undoing that stops it again (a redo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_listed_asked_and_undone_on_every_surface() {
    use rmcp::model::ElicitationAction::Accept;
    for surface in ["dynamic", "meta", "individual"] {
        let (sim, key, _dir, file) = with_history().await;
        let asker = Asker::new(Some((Accept, true)));
        let args = [
            "--history",
            file.to_str().unwrap(),
            "--tool-surface",
            surface,
        ];
        let client = spawn_with(asker.clone(), &sim.base(), &key, &args).await;

        stop_web(&client, surface).await;
        assert!(!running(&sim.container("web-1").await), "{surface}");
        assert!(asker.questions().is_empty(), "{surface}: a stop is routine");

        let changes = listed(&client, surface).await;
        assert_eq!(changes.len(), 1, "{surface}: {changes:?}");
        assert_eq!(changes[0]["action"], "container.stop", "{surface}");
        assert_eq!(changes[0]["undo"], "undo runs container.start", "{surface}");
        assert_eq!(changes[0]["undoable"], true, "{surface}");
        assert!(
            changes[0]["params"].as_str().unwrap().contains("web-1"),
            "{surface}: {changes:?}"
        );
        let id = changes[0]["id"].as_str().unwrap().to_string();

        let r = run(&client, surface, "history.undo", json!({"id": id}), false).await;
        assert!(!is_error(&r), "{surface}: {}", text(&r));
        let asked = asker.questions();
        assert_eq!(asked.len(), 1, "{surface}: {asked:?}");
        for part in [id.as_str(), "container.stop", "container.start", "web-1"] {
            assert!(asked[0].contains(part), "{surface}: {part} in {}", asked[0]);
        }
        assert!(running(&sim.container("web-1").await), "{surface}");

        // The undo is recorded as the call it ran: undoing it is a redo.
        let changes = listed(&client, surface).await;
        assert_eq!(changes.len(), 2, "{surface}: {changes:?}");
        assert_eq!(changes[0]["action"], "container.start", "{surface}");
        assert_eq!(changes[0]["undo"], "undo runs container.stop", "{surface}");
        let redo = changes[0]["id"].as_str().unwrap().to_string();
        let r = run(&client, surface, "history.undo", json!({"id": redo}), false).await;
        assert!(!is_error(&r), "{surface}: {}", text(&r));
        assert_eq!(asker.questions().len(), 2, "{surface}");
        assert!(!running(&sim.container("web-1").await), "{surface}");
        client.cancel().await.ok();
    }
}

/// A client that cannot ask: the undo runs only with the model's `confirm: true` (as any asked
/// change), and a decline sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_is_never_run_unconfirmed() {
    use rmcp::model::ElicitationAction::Decline;
    let (sim, key, _dir, file) = with_history().await;
    let args = ["--history", file.to_str().unwrap()];
    let client = spawn(&sim.base(), &key, &args).await;
    stop_web(&client, "dynamic").await;
    let id = listed(&client, "dynamic").await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = writes(&sim.requests().await).len();

    let r = run(&client, "dynamic", "history.undo", json!({"id": id}), false).await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("\"confirm\": true"), "{}", text(&r));
    let decliner = Asker::new(Some((Decline, false)));
    let declining = spawn_with(decliner.clone(), &sim.base(), &key, &args).await;
    let r = run(
        &declining,
        "dynamic",
        "history.undo",
        json!({"id": id}),
        true,
    )
    .await;
    assert!(is_error(&r), "{}", text(&r));
    assert_eq!(decliner.questions().len(), 1);
    assert_eq!(writes(&sim.requests().await).len(), before, "nothing sent");
    assert!(!running(&sim.container("web-1").await));

    let r = run(&client, "dynamic", "history.undo", json!({"id": id}), true).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(running(&sim.container("web-1").await));
    declining.cancel().await.ok();
    client.cancel().await.ok();
}

/// A key renamed, then renamed again by someone else: the undo would overwrite that, so it is
/// refused saying what changed, nothing sent; with `force` the person is asked, the question
/// says what is overwritten, and the yes puts the name back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drift_is_refused_until_forced_and_confirmed() {
    use rmcp::model::ElicitationAction::Accept;
    let (sim, key, _dir, file) = with_history().await;
    let asker = Asker::new(Some((Accept, true)));
    let client = spawn_with(
        asker.clone(),
        &sim.base(),
        &key,
        &["--history", file.to_str().unwrap()],
    )
    .await;
    let created = run(
        &client,
        "dynamic",
        "api_key.create",
        json!({"name": "deploy", "permissions": [{"permission": "projects:read"}]}),
        true,
    )
    .await;
    assert!(!is_error(&created), "{}", text(&created));
    let key_id = created.structured_content.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = run(
        &client,
        "dynamic",
        "api_key.update",
        json!({"id": key_id, "name": "deploy-old"}),
        true,
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let name = async || {
        let r = run(
            &client,
            "dynamic",
            "api_key.get",
            json!({"id": key_id}),
            false,
        )
        .await;
        r.structured_content.unwrap()["name"].clone()
    };
    let other = spawn(&sim.base(), &key, &[]).await;
    let r = run(
        &other,
        "dynamic",
        "api_key.update",
        json!({"id": key_id, "name": "deploy-ops"}),
        true,
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    other.cancel().await.ok();
    let rename = listed(&client, "dynamic").await[0].clone();
    assert_eq!(rename["action"], "api_key.update", "{rename}");
    let id = rename["id"].as_str().unwrap();
    let asked = asker.questions().len();
    let before = writes(&sim.requests().await).len();

    let r = run(&client, "dynamic", "history.undo", json!({"id": id}), true).await;
    let said = text(&r);
    assert!(is_error(&r), "{said}");
    assert!(
        said.contains("changed again since")
            && said.contains("deploy-ops")
            && said.contains("force: true"),
        "{said}"
    );
    assert_eq!(
        asker.questions().len(),
        asked,
        "refused before anyone is asked"
    );
    assert_eq!(writes(&sim.requests().await).len(), before, "nothing sent");
    assert_eq!(name().await, json!("deploy-ops"));

    let r = run(
        &client,
        "dynamic",
        "history.undo",
        json!({"id": id, "force": true}),
        true,
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let q = asker.questions().pop().unwrap();
    assert!(
        q.contains(id) && q.contains("deploy-ops") && q.contains("overwrites"),
        "{q}"
    );
    assert_eq!(name().await, json!("deploy"));
    client.cancel().await.ok();
}

/// A deleted volume cannot be undone: the undo says why and sends nothing (not even a read);
/// an unknown ID is said as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_undone_is_refused_with_its_reason() {
    let (sim, key, _dir, file) = with_history().await;
    let client = spawn(&sim.base(), &key, &["--history", file.to_str().unwrap()]).await;
    let r = run(
        &client,
        "dynamic",
        "volume.create",
        json!({"name": "scratch"}),
        true,
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let r = run(
        &client,
        "dynamic",
        "volume.delete",
        json!({"volumeName": "scratch"}),
        true,
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    let change = listed(&client, "dynamic").await[0].clone();
    assert_eq!(change["action"], "volume.delete", "{change}");
    let undo = change["undo"].as_str().unwrap();
    assert!(undo.starts_with("cannot be undone: "), "{undo}");
    assert_eq!(change["undoable"], false, "{change}");
    let sent = sim.requests().await.len();

    let r = run(
        &client,
        "dynamic",
        "history.undo",
        json!({"id": change["id"]}),
        true,
    )
    .await;
    let said = text(&r);
    assert!(is_error(&r), "{said}");
    assert!(
        said.contains(undo) && said.contains("Nothing was sent"),
        "{said}"
    );
    let r = run(
        &client,
        "dynamic",
        "history.undo",
        json!({"id": "no-such-change"}),
        true,
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("no change"),
        "{}",
        text(&r)
    );
    assert_eq!(sim.requests().await.len(), sent, "nothing reached Arcane");
    client.cancel().await.ok();
}

/// In safe mode an undo is a preview: nothing sent, nothing recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_previewed_undo_records_nothing() {
    let (sim, key, _dir, file) = with_history().await;
    let history = ["--history", file.to_str().unwrap()];
    let client = spawn(&sim.base(), &key, &history).await;
    stop_web(&client, "dynamic").await;
    client.cancel().await.ok();
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    let safe = spawn(&sim.base(), &key, &[history[0], history[1], "--safe-mode"]).await;
    let id = listed(&safe, "dynamic").await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = writes(&sim.requests().await).len();
    let r = run(&safe, "dynamic", "history.undo", json!({"id": id}), true).await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("Safe mode"), "{}", text(&r));
    assert_eq!(writes(&sim.requests().await).len(), before);
    assert!(!running(&sim.container("web-1").await));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        lines
    );
    safe.cancel().await.ok();
}

/// Without `--history` both actions say how to keep one, and send nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_history_the_tools_say_how_to_keep_one() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let sent = sim.requests().await.len();
    for (id, params) in [
        ("history.list", json!({})),
        ("history.undo", json!({"id": "20261207203430-1e835e"})),
    ] {
        let r = run(&client, "dynamic", id, params, true).await;
        let said = text(&r);
        assert!(is_error(&r), "{id}: {said}");
        assert!(
            said.contains("--history") && said.contains("docs/undo.md"),
            "{id}: {said}"
        );
    }
    assert_eq!(sim.requests().await.len(), sent, "nothing reached Arcane");
    client.cancel().await.ok();
}

/// A search for what a person says finds the two actions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_finds_them_in_a_persons_words() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    for (query, id) in [
        ("what did you change", "history.list"),
        ("show recent changes", "history.list"),
        ("undo the last change", "history.undo"),
        ("take that back", "history.undo"),
    ] {
        let r = call(
            &client,
            "arcane_find_action",
            json!({"query": query, "limit": 3}),
        )
        .await;
        let found: Vec<String> = r.structured_content.as_ref().unwrap()["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["id"].as_str().map(String::from))
            .collect();
        assert_eq!(
            found.first().map(String::as_str),
            Some(id),
            "{query}: {found:?}"
        );
    }
    client.cancel().await.ok();
}

/// Through the HTTP gate as its own authorization server: a sign-in that may change things
/// sees the change it made and may undo it; a read-only sign-in, which may run no change, sees
/// none of them and may not undo; the static token sees all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_sees_only_the_changes_its_grant_may_run() {
    use crate::oauth_self::{client_id, server_at, signed_in, sim_with_people};
    use crate::process_support::{free_port, http_client};
    let sim = sim_with_people().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".local/state/arcane-mcp/history.jsonl");
    let port = free_port();
    let server = server_at(
        &sim,
        port,
        &[
            "--auth-token",
            "static-token",
            "--history",
            file.to_str().unwrap(),
        ],
    )
    .await;
    let base = server.base.clone();
    let app = client_id(&base, "history").await;
    let write = signed_in(&base, &app, "write").await;
    let read = signed_in(&base, &app, "read").await;
    let writer = http_client(&base, &write, &[]).await;
    let reader = http_client(&base, &read, &[]).await;
    let everyone = http_client(&base, "static-token", &[]).await;

    stop_web(&writer, "dynamic").await;
    let seen = listed(&writer, "dynamic").await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(listed(&everyone, "dynamic").await, seen);
    assert_eq!(listed(&reader, "dynamic").await, Vec::<Value>::new());
    let before = writes(&sim.requests().await).len();
    let r = run(
        &reader,
        "dynamic",
        "history.undo",
        json!({"id": seen[0]["id"]}),
        true,
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("arcane:write"),
        "{}",
        text(&r)
    );
    assert_eq!(writes(&sim.requests().await).len(), before);
    for c in [writer, reader, everyone] {
        c.cancel().await.ok();
    }
    server.stop().await;
}
