//! Hot reload: an overlay written while the server runs changes the served catalog, and the
//! client is told with `notifications/tools/list_changed` and `notifications/resources/list_changed`.

mod server_support;

use std::time::Duration;

use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;
use server_support::*;
use tokio::sync::mpsc;

/// Records the list-changed notifications the server sends.
struct Recorder(mpsc::UnboundedSender<&'static str>);

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("tools");
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("resources");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlay_change_reloads_and_notifies() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let overrides = dir.path().to_str().unwrap().to_string();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let client = spawn_with(
        Recorder(tx),
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--overrides", &overrides],
    )
    .await;
    let before = client.list_all_tools().await.unwrap();
    assert!(before.iter().any(|t| t.name == "arcane_container_restart"));

    std::fs::write(
        dir.path().join("maintenance.yaml"),
        "actions:\n  container.restart: {exclude: \"withdrawn by the operator for maintenance\"}\n",
    )
    .unwrap();

    // A generous guard against a hang, not a timing assertion.
    let (mut tools_changed, mut resources_changed) = (false, false);
    while !(tools_changed && resources_changed) {
        match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            Ok(Some("tools")) => tools_changed = true,
            Ok(Some("resources")) => resources_changed = true,
            other => panic!("list_changed notifications expected, got {other:?}"),
        }
    }

    let after = client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), before.len() - 1);
    assert!(!after.iter().any(|t| t.name == "arcane_container_restart"));
    let mut args = serde_json::Map::new();
    args.insert("containerId".into(), json!("web-1"));
    let r = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("arcane_container_restart")
                .with_arguments(args),
        )
        .await
        .unwrap();
    let e = err(&r);
    assert!(
        e.contains("withdrawn by the operator for maintenance"),
        "{e}"
    );
    assert!(sim.requests().await.is_empty());
    client.cancel().await.ok();
}
