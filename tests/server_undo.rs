//! Undo as data (docs/undo.md): every change of Arcane 2.8.0 says how it is taken back or why
//! it cannot be; an inverse names real actions and parameters; the person's question says
//! "cannot be undone" where, and only where, that is so.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::fixtures;
use crate::server_confirm::Asker;
use crate::server_support::{Sim, call, catalog, is_error, spawn_with, writes};
use arcane_catalog::{Impact, Undo};

/// The table: no mutating action of 2.8.0 without an inverse or a reason, a reason one line a
/// person can read, an inverse an action that changes something. Most asked changes (what can
/// take the host, hand out access or destroy) are covered by a sentence, not left to guess.
#[test]
fn every_change_of_2_8_0_says_how_it_is_undone_or_why_not() {
    let cat = catalog();
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for a in cat.actions.iter().filter(|a| a.safety.mutating) {
        let undo = a.safety.undo.as_ref().unwrap_or_else(|| {
            panic!(
                "{} says nothing of undoing: add it to overrides/undo.yaml",
                a.id
            )
        });
        match undo {
            Undo::By(inv) => {
                let by = cat.get(&inv.action).expect("checked at load");
                assert!(by.safety.mutating, "{} is undone by a read", a.id);
                *kinds.entry("by").or_default() += 1;
            }
            Undo::Nothing(why) | Undo::Never(why) => {
                assert!(
                    why.len() >= 12 && !why.contains('\n') && !why.ends_with('.'),
                    "{}: {why:?} is not one short line (the question adds its own full stop)",
                    a.id
                );
                *kinds
                    .entry(if matches!(undo, Undo::Never(_)) {
                        "never"
                    } else {
                        "nothing"
                    })
                    .or_default() += 1;
            }
        }
    }
    assert_eq!(kinds.values().sum::<usize>(), 183, "{kinds:?}");
    // Reads say nothing of undoing: there is nothing to take back.
    assert!(
        cat.actions
            .iter()
            .filter(|a| !a.safety.mutating)
            .all(|a| a.safety.undo.is_none())
    );
    // A prune or a volume deleted is lost for good; a stopped container is started again.
    for (id, never) in [
        ("volume.delete", true),
        ("image.prune", true),
        ("system.prune", true),
        ("container.stop", false),
        ("project.down", false),
        ("swarm_service.update", false),
    ] {
        let undo = cat.get(id).and_then(|a| a.safety.undo.as_ref());
        assert_eq!(
            matches!(undo, Some(Undo::Never(_))),
            never,
            "{id}: {undo:?}"
        );
    }
}

/// Every action that asks: its question says "cannot be undone" exactly when the catalog says
/// the change is lost, with what is lost; a destructive action with an inverse is not said to
/// be lost.
#[test]
fn the_question_says_cannot_be_undone_only_when_it_cannot() {
    let cat = catalog();
    let (mut lost, mut kept_destructive) = (0, 0);
    for a in cat.actions.iter().filter(|a| a.needs_confirmation()) {
        let effect =
            arcane_engine::describe(a, &Default::default(), &Default::default(), Some("0"));
        let q = arcane_mcp::mcp::confirm::message(a, &effect);
        match &a.safety.undo {
            Some(Undo::Never(what)) => {
                assert!(
                    q.contains(&format!("It cannot be undone: {what}.")),
                    "{}: {q}",
                    a.id
                );
                lost += 1;
            }
            _ => {
                assert!(!q.contains("cannot be undone"), "{}: {q}", a.id);
                if a.safety.impact == Impact::Destroys {
                    kept_destructive += 1;
                }
            }
        }
    }
    assert!(
        lost >= 60 && kept_destructive >= 10,
        "{lost} lost, {kept_destructive} destructive with an inverse"
    );
}

/// Through a real client: deleting a volume is asked with what is lost; deleting a network,
/// which a capture can recreate, is asked without "cannot be undone". Declined, nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reads_what_is_lost_in_the_question() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    for (params, lost) in [
        (
            json!({"action": "volume.delete", "params": {"volumeName": "pgdata"}}),
            true,
        ),
        (
            json!({"action": "network.delete", "params": {"networkId": "backend"}}),
            false,
        ),
    ] {
        let r = call(&client, "arcane_execute_action", params.clone()).await;
        assert!(is_error(&r), "{params}");
        let q = handler.questions().pop().expect("asked");
        assert_eq!(q.contains("It cannot be undone: "), lost, "{q}");
        assert!(q.contains("This is destructive."), "{q}");
    }
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();
}

/// An overlay's inverse that names a field the read does not answer, or a parameter the
/// inverse lacks, is reported with its file and line, and the action says nothing of undoing
/// rather than promise what cannot be filled; a `capture` that changes state fails the load.
#[test]
fn a_wrong_inverse_is_reported_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let load = |yaml: &str| {
        std::fs::write(dir.path().join("undo.yaml"), yaml).unwrap();
        arcane_mcp::load::sources::Sources::of_spec(fixtures::spec_v2())
            .with_overrides(dir.path().to_path_buf())
            .build()
    };
    let cat = load(
        "actions:\n  api_key.update:\n    undo: {capture: api_key.get, by: api_key.update, params: {name: capture.nmae}}\n",
    )
    .expect("a misfit is reported, not fatal");
    let misfit = cat
        .unmatched_overlays
        .iter()
        .find(|u| u.key == "api_key.update")
        .expect("reported");
    assert_eq!(misfit.line, 3, "{misfit:?}");
    assert!(
        misfit
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("nmae"),
        "{misfit:?}"
    );
    assert!(cat.get("api_key.update").unwrap().safety.undo.is_none());

    let err = load(
        "actions:\n  container.stop:\n    undo: {capture: container.start, by: container.start}\n",
    )
    .expect_err("a capture that changes state");
    assert!(format!("{err:#}").contains("not a plain read"), "{err:#}");
    let err = load("actions:\n  container.stop:\n    undo: {never: gone, by: container.start}\n")
        .expect_err("two answers");
    assert!(format!("{err:#}").contains("undo"), "{err:#}");
}

/// The inverse's arguments for one call, filled as the entries say: the call's own
/// parameters by name, a field of the captured state picked out of a list, the ID a create
/// answered.
#[test]
fn an_inverse_is_filled_from_the_call_the_capture_and_the_answer() {
    let cat = catalog();
    let fill = |id: &str, call: Value, capture: Option<Value>, result: Option<Value>| {
        let Some(Undo::By(inv)) = cat.get(id).and_then(|a| a.safety.undo.clone()) else {
            panic!("{id} has an inverse");
        };
        let by = cat.get(&inv.action).unwrap();
        let takes: Vec<&str> = by.params.iter().map(|p| p.name.as_str()).collect();
        let args = inv
            .arguments(
                arcane_catalog::Filled {
                    call: call.as_object().unwrap(),
                    capture: capture.as_ref(),
                    result: result.as_ref(),
                },
                &takes,
            )
            .unwrap();
        (inv.action.clone(), Value::Object(args))
    };
    assert_eq!(
        fill("container.stop", json!({"containerId": "web"}), None, None),
        ("container.start".into(), json!({"containerId": "web"}))
    );
    let (by, args) = fill(
        "api_key.create",
        json!({"name": "ci"}),
        None,
        Some(json!({"id": "k-9", "key": "secret"})),
    );
    assert_eq!(
        (by.as_str(), args["id"].clone()),
        ("api_key.delete", json!("k-9"))
    );
    let (_, args) = fill(
        "settings.update",
        json!({"pollingInterval": "30"}),
        Some(
            json!({"items": [{"key": "pollingInterval", "value": "60"}, {"key": "other", "value": "x"}]}),
        ),
        None,
    );
    assert_eq!(args, json!({"pollingInterval": "60"}));
}

/// A simulator, its key, and where a history file goes (in a directory removed on drop).
pub(crate) async fn with_history() -> (Sim, String, tempfile::TempDir, std::path::PathBuf) {
    let sim = Sim::start().await;
    let key = sim.sim.api_key().to_string();
    let dir = tempfile::tempdir().unwrap();
    // As docs/undo.md writes it: in a state directory that does not exist yet.
    let file = dir.path().join(".local/state/arcane-mcp/history.jsonl");
    (sim, key, dir, file)
}

/// As an operator does it: a server started with `--history FILE`; the assistant stops a
/// container, creates an API key and renames it. `arcane-mcp history` lists the changes with
/// how each is taken back; `arcane-mcp undo ID` starts the container again (the call's own
/// parameters), renames the key back (the state read before the rename) and, with `--confirm`
/// where the undo asks, deletes the key (the ID its creation answered). Each undo is a change
/// of its own: undoing it again is a redo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_listed_and_taken_back_from_the_command_line() {
    use crate::process_support::{stderr, stdout};
    use crate::server_support::{command, spawn, text};
    let (sim, key, _dir, file) = with_history().await;
    let history = ["--history", file.to_str().unwrap()];
    let running = |c: &Option<Value>| c.as_ref().unwrap()["state"] == "running";

    let client = spawn(&sim.base(), &key, &history).await;
    let run_tool = async |action: &str, params: Value| {
        let r = call(
            &client,
            "arcane_execute_action",
            json!({"action": action, "params": params, "confirm": true}),
        )
        .await;
        assert!(!is_error(&r), "{action}: {}", text(&r));
        r.structured_content.unwrap_or_default()
    };
    run_tool("container.stop", json!({"containerId": "web-1"})).await;
    assert!(!running(&sim.container("web-1").await));
    let created = run_tool(
        "api_key.create",
        json!({"name": "deploy", "permissions": [{"permission": "projects:read"}]}),
    )
    .await;
    let id = created["id"]
        .as_str()
        .expect("the new key's ID")
        .to_string();
    run_tool("api_key.update", json!({"id": id, "name": "deploy-old"})).await;
    let name = async || {
        let client = spawn(&sim.base(), &key, &[]).await;
        let r = call(
            &client,
            "arcane_execute_action",
            json!({"action": "api_key.get", "params": {"id": id}}),
        )
        .await;
        client.cancel().await.ok();
        (!is_error(&r)).then(|| r.structured_content.unwrap()["name"].clone())
    };
    assert_eq!(name().await, Some(json!("deploy-old")));
    client.cancel().await.ok();

    // `history` reads the file alone; `undo` calls Arcane as `call` does.
    let run = |args: Vec<&str>| {
        let mut c = if args[0] == "history" {
            let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
            c.env_clear().args(history);
            c
        } else {
            command(&sim.base(), &key, &history)
        };
        c.args(args);
        async move { c.output().await.unwrap() }
    };
    let succeeded = |out: &std::process::Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            stdout(out),
            stderr(out)
        );
    };
    let listed = |out: &std::process::Output| -> Vec<Value> {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Newest first.
    let changes = listed(&run(vec!["history", "--json"]).await);
    let actions: Vec<&str> = changes
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["api_key.update", "api_key.create", "container.stop"]
    );
    let ids: Vec<String> = changes
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        changes[0]["undo"]["params"]["name"], "deploy",
        "{changes:?}"
    );
    assert_eq!(changes[1]["undo"]["action"], "api_key.delete");
    assert_eq!(changes[1]["undo"]["params"]["id"], json!(id));
    assert_eq!(changes[2]["undo"]["action"], "container.start");
    let text_list = stdout(&run(vec!["history"]).await);
    assert!(
        text_list.contains("undo runs container.start") && text_list.contains(&ids[2]),
        "{text_list}"
    );

    // The stop, taken back: no question (starting a container is routine).
    let out = run(vec!["undo", &ids[2]]).await;
    succeeded(&out);
    assert!(running(&sim.container("web-1").await));
    // The rename asks (it changes who may do what): nothing is sent without --confirm.
    let out = run(vec!["undo", &ids[0]]).await;
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("--confirm"), "{}", stdout(&out));
    assert_eq!(name().await, Some(json!("deploy-old")));
    // Someone renames the key again: the undo would overwrite that, so it is refused, saying
    // what changed, until --force.
    let other = spawn(&sim.base(), &key, &[]).await;
    let r = call(
        &other,
        "arcane_execute_action",
        json!({"action": "api_key.update", "confirm": true,
               "params": {"id": id, "name": "deploy-ops"}}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    other.cancel().await.ok();
    let out = run(vec!["undo", &ids[0], "--confirm"]).await;
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("changed again since")
            && said.contains("deploy-ops")
            && said.contains("--force"),
        "{said}"
    );
    assert_eq!(name().await, Some(json!("deploy-ops")));
    let out = run(vec!["undo", &ids[0], "--confirm", "--force"]).await;
    succeeded(&out);
    assert_eq!(name().await, Some(json!("deploy")));
    // The creation, taken back: the key is gone.
    let out = run(vec!["undo", &ids[1], "--confirm"]).await;
    succeeded(&out);
    assert_eq!(name().await, None);

    // Each undo is a change of its own: the start's undo stops web-1 again (a redo).
    let changes = listed(&run(vec!["history", "--json"]).await);
    assert_eq!(changes.len(), 6, "{changes:?}");
    let redo = changes
        .iter()
        .find(|c| c["action"] == "container.start")
        .expect("the undo is recorded");
    assert_eq!(redo["undo"]["action"], "container.stop");
    let out = run(vec!["undo", redo["id"].as_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!running(&sim.container("web-1").await));

    // A line that is not a change is skipped and said; an unknown ID sends nothing.
    let before = writes(&sim.requests().await).len();
    let mut lines = std::fs::read_to_string(&file).unwrap();
    lines.push_str("not a change\n");
    std::fs::write(&file, lines).unwrap();
    let out = run(vec!["history"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("1 line(s)"), "{}", stderr(&out));
    let out = run(vec!["undo", "no-such-change"]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("arcane-mcp history"),
        "{}",
        stderr(&out)
    );
    assert_eq!(writes(&sim.requests().await).len(), before);
}

/// No secret is written to the history: a change whose restore would need one (an env file
/// with a password) is recorded as not undoable from it, and the file holds neither value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_keeps_no_secret() {
    let (sim, key, _dir, file) = with_history().await;
    let client =
        crate::server_support::spawn(&sim.base(), &key, &["--history", file.to_str().unwrap()])
            .await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "project.update", "confirm": true,
               "params": {"projectId": "webshop", "envContent": "POSTGRES_PASSWORD=n3w-pa55\n"}}),
    )
    .await;
    assert!(!is_error(&r));
    client.cancel().await.ok();
    let text = std::fs::read_to_string(&file).unwrap();
    for secret in ["s3cr3t-demo", "n3w-pa55"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let change: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(change["undo"]["kind"], "unknown", "{change}");
    assert!(
        change["undo"]["why"].as_str().unwrap().contains("secret"),
        "{change}"
    );
}
