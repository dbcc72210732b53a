//! End to end: WebSocket handlers, JSON-lines streams with progress and cancellation,
//! and downloads, through the real binary on each surface.

use crate::server_support;

use arcane_sim::ArcaneVersion;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ContentBlock, ProgressNotificationParam, Role};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;
use server_support::*;

#[derive(Clone, Default)]
struct ProgressRecorder(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_streams_and_downloads_on_every_surface() {
    handlers_streams_and_downloads_on_every_surface_on(ArcaneVersion::V2_8).await;
}

/// The same against Arcane main's wire behaviour (the simulator's other mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_streams_and_downloads_on_every_surface_on_main() {
    handlers_streams_and_downloads_on_every_surface_on(ArcaneVersion::Main).await;
}

async fn handlers_streams_and_downloads_on_every_surface_on(version: ArcaneVersion) {
    let sim = Sim::start_as(version).await;
    for surface in ["dynamic", "meta", "individual"] {
        sim.reset().await;
        let client = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", surface]).await;

        // Logs over WebSocket: the socket stays open; the end is found by idle time.
        let (tool, args) = shape(
            surface,
            "container.logs",
            json!({"containerId": "web-1", "tail": 5}),
            false,
        );
        let r = call(&client, &tool, args).await;
        let sc = ok(&r);
        assert!(!sc["lines"].as_array().unwrap().is_empty(), "{sc}");
        assert!(
            !text(&r).contains("**Next steps**"),
            "logs carry no next steps"
        );

        // Stats: one sample.
        let (tool, args) = shape(
            surface,
            "container.stats",
            json!({"containerId": "web-1"}),
            false,
        );
        let sc = ok(&call(&client, &tool, args).await);
        assert_eq!(sc["samples"].as_array().unwrap().len(), 1);

        // Exec: mutating, runs one command.
        let (tool, args) = shape(
            surface,
            "container.exec",
            json!({"containerId": "web-1", "command": "echo hello"}),
            // Confirmed (`confirm: always`); this client cannot ask.
            true,
        );
        let r = call(&client, &tool, args).await;
        let sc = ok(&r);
        assert!(sc["output"].as_str().unwrap().contains("hello"), "{sc}");

        // A stream read to the end, summarized.
        let (tool, args) = shape(
            surface,
            "image.pull",
            json!({"imageName": "redis:7.2-alpine"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        let sc = ok(&r);
        assert_eq!(sc["done"], true, "{sc}");
        assert!(sc["activityId"].is_string());

        // An error line mid-stream fails the call and quotes it.
        sim.fault(
            json!({"method": "POST", "path": "/images/pull$", "kind": "stream_error", "times": 1}),
        )
        .await;
        let (tool, args) = shape(
            surface,
            "image.pull",
            json!({"imageName": "redis:7.2-alpine"}),
            false,
        );
        let e = err(&call(&client, &tool, args).await);
        assert!(e.contains("image.pull"), "{e}");

        // A truncated stream is reported as cut short.
        sim.fault(
            json!({"method": "POST", "path": "/up$", "kind": "truncated_stream", "times": 1}),
        )
        .await;
        let (tool, args) = shape(surface, "project.up", json!({"projectId": "webshop"}), true);
        let e = err(&call(&client, &tool, args).await);
        assert!(
            e.to_lowercase().contains("cut short") || e.to_lowercase().contains("without"),
            "{e}"
        );

        // A text download inline; a binary one as an embedded resource for the user.
        let (tool, args) = shape(surface, "mtls.ca", json!({}), false);
        let r = call(&client, &tool, args).await;
        assert!(text(&r).contains("BEGIN CERTIFICATE"), "{}", text(&r));
        let (tool, args) = shape(
            surface,
            "image.export",
            json!({"name": "nginx:1.27-alpine"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        ok(&r);
        let embedded = r.content.iter().find_map(|c| match c {
            ContentBlock::Resource(e) => Some(e.clone()),
            _ => None,
        });
        let embedded = embedded.expect("the tar comes as an embedded resource");
        assert_eq!(
            embedded.annotations.unwrap().audience,
            Some(vec![Role::User])
        );
        client.cancel().await.unwrap();
    }
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_forwarded_and_cancel_stops_the_request() {
    progress_is_forwarded_and_cancel_stops_the_request_on(ArcaneVersion::V2_8).await;
}

/// The same against Arcane main's wire behaviour (the simulator's other mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_forwarded_and_cancel_stops_the_request_on_main() {
    progress_is_forwarded_and_cancel_stops_the_request_on(ArcaneVersion::Main).await;
}

async fn progress_is_forwarded_and_cancel_stops_the_request_on(version: ArcaneVersion) {
    let sim = Sim::start_as(version).await;
    let recorder = ProgressRecorder::default();
    let client = spawn_with(recorder.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let args = json!({"action": "image.pull", "params": {"imageName": "redis:7.2-alpine"}});
    let r = client
        .call_tool(
            CallToolRequestParams::new("arcane_execute_action")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true));
    let seen: Vec<f64> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert!(seen.len() >= 2, "progress notifications: {seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {seen:?}"
    );

    // A slow stream, cancelled by the client: the simulator sees the request aborted.
    sim.hooks().set_stream_pace_ms(300).await.unwrap();
    // Deploying is asked (changes-workload); this client cannot ask, so the model confirms.
    let args = json!({"action": "project.up", "params": {"projectId": "webshop"}, "confirm": true});
    let call = client.call_tool(
        CallToolRequestParams::new("arcane_execute_action")
            .with_arguments(args.as_object().unwrap().clone()),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(700), call)
            .await
            .is_err(),
        "the up should still run"
    );
    let mut aborted = false;
    for _ in 0..50 {
        let streams = sim.hooks().streams().await.unwrap();
        if streams
            .iter()
            .any(|s| s["path"].as_str().unwrap_or("").ends_with("/up") && s["aborted"] == true)
        {
            aborted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        aborted,
        "the cancelled project.up must stop the HTTP request"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_log_text_is_rendered_safely() {
    hostile_log_text_is_rendered_safely_on(ArcaneVersion::V2_8).await;
}

/// The same against Arcane main's wire behaviour (the simulator's other mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_log_text_is_rendered_safely_on_main() {
    hostile_log_text_is_rendered_safely_on(ArcaneVersion::Main).await;
}

async fn hostile_log_text_is_rendered_safely_on(version: ArcaneVersion) {
    let sim = Sim::start_as(version).await;
    let mut state = sim.state().await;
    let hostile =
        "\u{1b}[31mred\u{1b}[0m \u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{7} \u{202e}txet";
    let web = state["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "web-1")
        .unwrap();
    web["logs"] = json!([hostile]);
    sim.set_state(state).await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.logs", "params": {"containerId": "web-1"}}),
    )
    .await;
    let t = text(&r);
    assert!(
        !t.contains('\u{1b}') && !t.contains('\u{202e}') && !t.contains('\u{7}'),
        "{t:?}"
    );
    // The visible text survives the stripping.
    assert!(
        t.contains("red") && t.contains("link") && t.contains("txet"),
        "{t:?}"
    );
    assert!(!t.contains("http://evil"), "{t:?}");
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}
