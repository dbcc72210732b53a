//! Tool-definition snapshots, as github-mcp-server's `__toolsnaps__`: what a model reads about
//! a tool (name, title, description, inputSchema, outputSchema, annotations) exactly as
//! `tools/list` returns it for Arcane 2.8.0, kept in `tests/golden/toolsnaps/`, so a change to
//! it shows in review. `UPDATE_GOLDEN=1 cargo test --test integration toolsnaps::` rewrites them.

use serde_json::{Map, Value};

use crate::golden_support;
use crate::server_support::{spawn, spawn_process, tools};

/// The fields of a tool definition a model reads, in this order.
const FIELDS: [&str; 6] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// (surface and extra arguments, the tools of that surface to snapshot).
const SNAPPED: &[(&[&str], &[&str])] = &[
    (
        &["--tool-surface", "dynamic"],
        &["arcane_find_action", "arcane_execute_action"],
    ),
    (
        &["--tool-surface", "meta"],
        &["arcane_container", "arcane_project", "arcane_image"],
    ),
    (
        &["--tool-surface", "individual", "--output-schemas"],
        &[
            "arcane_container_list",
            "arcane_container_get",
            "arcane_container_delete",
            "arcane_project_create",
        ],
    ),
];

/// A tool definition as the snapshot keeps it: the model-facing fields, pretty JSON.
fn snapshot(tool: &rmcp::model::Tool) -> String {
    let all = serde_json::to_value(tool).expect("a tool serializes");
    let mut kept = Map::new();
    for field in FIELDS {
        if let Some(v) = all.get(field) {
            kept.insert(field.to_string(), v.clone());
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(kept)).expect("JSON");
    text.push('\n');
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_definitions_match_their_snapshots() {
    // Listing tools reaches no Arcane: any URL and key do.
    let mut diffs = Vec::new();
    let mut snapped = Vec::new();
    for (args, names) in SNAPPED {
        let client = spawn("http://127.0.0.1:9", "snapshot-key", args).await;
        let listed = tools(&client).await;
        for name in *names {
            let tool = listed
                .iter()
                .find(|t| t.name == *name)
                .unwrap_or_else(|| panic!("{name} is not listed with {args:?}"));
            let file = format!("toolsnaps/{name}.json");
            diffs.extend(golden_support::check(&file, &snapshot(tool)));
            snapped.push(format!("{name}.json"));
        }
        client.cancel().await.ok();
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));

    // A snapshot of a tool no longer snapped would go stale unnoticed.
    let dir = golden_support::dir().join("toolsnaps");
    let mut stale: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|f| !snapped.contains(f))
        .collect();
    stale.sort();
    assert!(
        stale.is_empty(),
        "{} hold snapshots of tools this test no longer snaps: delete {stale:?}",
        dir.display()
    );
}

/// The in-process server the other server tests use is the binary's server: over stdio, the
/// spawned binary lists the same tool definitions on every surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_over_stdio_lists_what_the_in_process_server_lists() {
    for (args, _) in SNAPPED {
        let in_process = spawn("http://127.0.0.1:9", "snapshot-key", args).await;
        let spawned = spawn_process("http://127.0.0.1:9", "snapshot-key", args).await;
        let (a, b) = (tools(&in_process).await, tools(&spawned).await);
        assert!(!a.is_empty(), "{args:?}: no tools listed");
        assert_eq!(a.len(), b.len(), "{args:?}: tool counts differ");
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(
                a, b,
                "{args:?}: {} differs between in-process and stdio",
                a.name
            );
        }
        in_process.cancel().await.ok();
        spawned.cancel().await.ok();
    }
}
