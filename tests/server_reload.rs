//! Hot reload: an overlay written while the server runs changes the served catalog, and the
//! client is told with `notifications/tools/list_changed` and `notifications/resources/list_changed`.

use crate::server_support;

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
    let index_before = tools_index(&client).await;
    assert_eq!(index_before["generation"], json!(0));

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
    // `arcane://tools` says which catalog serves: a later generation, loaded later.
    let index_after = tools_index(&client).await;
    assert!(
        index_after["generation"].as_u64().unwrap() >= 1,
        "{index_after}"
    );
    let loaded = |v: &serde_json::Value| {
        chrono::DateTime::parse_from_rfc3339(v["loadedAt"].as_str().unwrap()).unwrap()
    };
    assert!(loaded(&index_after) >= loaded(&index_before));
    assert_eq!(
        index_after["count"],
        json!(index_before["count"].as_u64().unwrap() - 1)
    );
    let r = call(
        &client,
        "arcane_container_restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    let e = err(&r);
    assert!(
        e.contains("withdrawn by the operator for maintenance"),
        "{e}"
    );
    assert!(sim.requests().await.is_empty());
    client.cancel().await.ok();
}

/// The `arcane://tools` document.
async fn tools_index<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<RoleClient, H>,
) -> serde_json::Value {
    let r = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "arcane://tools".to_string(),
        ))
        .await
        .unwrap();
    match r.contents.first() {
        Some(rmcp::model::ResourceContents::TextResourceContents { text, .. }) => {
            serde_json::from_str(text).unwrap()
        }
        other => panic!("unexpected contents {other:?}"),
    }
}

/// An overlay entry matching nothing is a warning at startup naming file:line and a suggestion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmatched_overlay_warned_at_startup() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.yaml");
    std::fs::write(
        &file,
        "actions:\n  container.restartt:\n    usage: gently\n",
    )
    .unwrap();
    let out = command(
        &sim.base(),
        sim.sim.api_key(),
        &["--overrides", dir.path().to_str().unwrap()],
    )
    .stdin(std::process::Stdio::null())
    .output()
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.contains("WARN")
            && l.contains(&format!("{}:2:", file.display()))
            && l.contains("did you mean `container.restart`")),
        "{stderr}"
    );
}

/// A 2026-07-28 session (`server/discover`, no initialize) gets the same notifications through
/// `subscriptions/listen`, prompts included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_session_notified_through_subscriptions() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::TokioChildProcess;

    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let overrides = dir.path().to_str().unwrap().to_string();
    let (transport, _) = TokioChildProcess::builder(command(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "meta", "--overrides", &overrides],
    ))
    .stderr(std::process::Stdio::inherit())
    .spawn()
    .unwrap();
    let client = ()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover session");
    let before = client.list_all_tools().await.unwrap();
    let mut sub = client
        .peer()
        .listen(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .prompts_list_changed()
                .build(),
        )
        .await
        .expect("subscriptions/listen accepted");
    let prompts_before = client.list_all_prompts().await.unwrap();
    assert!(prompts_before.iter().any(|p| p.name == "free-disk-space"));
    // Withdraw a whole domain: the meta surface loses its tool.
    std::fs::write(
        dir.path().join("no-volumes.yaml"),
        volume_exclusions(&catalog()),
    )
    .unwrap();
    let (mut tools_changed, mut resources_changed, mut prompts_changed) = (false, false, false);
    while !(tools_changed && resources_changed && prompts_changed) {
        let n = tokio::time::timeout(Duration::from_secs(60), sub.next())
            .await
            .expect("list_changed arrives (hang guard)")
            .unwrap()
            .expect("subscription open");
        match n {
            ServerNotification::ToolListChangedNotification(_) => tools_changed = true,
            ServerNotification::ResourceListChangedNotification(_) => resources_changed = true,
            ServerNotification::PromptListChangedNotification(_) => prompts_changed = true,
            _ => {}
        }
    }
    let after = client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), before.len() - 1);
    assert!(!after.iter().any(|t| t.name == "arcane_volume"));
    // The prompt whose job prunes volumes went with them.
    let prompts_after = client.list_all_prompts().await.unwrap();
    assert!(!prompts_after.iter().any(|p| p.name == "free-disk-space"));
    assert_eq!(prompts_after.len(), prompts_before.len() - 1);
    client.cancel().await.ok();
}

/// An overlay excluding every action of the volume domain.
fn volume_exclusions(catalog: &arcane_catalog::Catalog) -> String {
    let mut out = String::from("actions:\n");
    for id in &catalog.domain("volume").unwrap().actions {
        out.push_str(&format!(
            "  {id}: {{exclude: \"volumes are managed elsewhere\"}}\n"
        ));
    }
    out
}
