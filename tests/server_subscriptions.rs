//! Live resources (docs/live-resources.md, `src/resources/live.rs`): a subscribed client hears
//! `notifications/resources/updated` when the simulator's state changes — a container through
//! the list poll, the dashboard through Arcane's client stream —, the stream is one connection
//! for every stream-fed subscription and closes after the last, a cut stream reconnects, the
//! caps refuse clearly, and a 2026-07-28 client gets the same through `subscriptions/listen`.
//! Polls run every 250 ms here (the floor), so nothing waits long; every wait is for a
//! condition, under the hang guard.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ResourceUpdatedNotificationParam, SubscribeRequestParams};
use rmcp::model::{ServerNotification, SubscriptionFilter, UnsubscribeRequestParams};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};

use crate::fixtures::guarded;
use crate::server_support::{Sim, spawn_speaking, spawn_with};

const WEBSHOP: &str = "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01";
const FAST: &[&str] = &["--subscription-poll-ms", "250"];

/// A client that records the URIs it is told changed.
#[derive(Clone, Default)]
struct Updates(Arc<(Mutex<Vec<String>>, tokio::sync::Notify)>);

impl rmcp::ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.0.lock().unwrap().push(params.uri);
        self.0.1.notify_waiters();
    }
}

impl Updates {
    fn count(&self, uri: &str) -> usize {
        self.0
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|u| *u == uri)
            .count()
    }

    fn all(&self) -> Vec<String> {
        self.0.0.lock().unwrap().clone()
    }

    /// Waits until `uri` was notified more than `seen` times.
    async fn more_than(&self, uri: &str, seen: usize) {
        guarded(async {
            loop {
                let notified = self.0.1.notified();
                if self.count(uri) > seen {
                    return;
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
            }
        })
        .await
    }
}

type Client = RunningService<RoleClient, Updates>;

async fn subscribe(client: &Client, uri: &str) -> Result<(), ServiceError> {
    #[allow(deprecated)]
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(uri))
        .await
}

async fn unsubscribe(client: &Client, uri: &str) {
    #[allow(deprecated)]
    client
        .peer()
        .unsubscribe(UnsubscribeRequestParams::new(uri))
        .await
        .expect("unsubscribed");
}

/// A POST to the simulator's own API (a change made beside the server, as a person in
/// Arcane's UI would), its whole answer read.
async fn arcane_post(sim: &Sim, path: &str) {
    let r = sim
        .http
        .post(format!("{}/api/environments/0/{path}", sim.base()))
        .header("X-API-Key", sim.sim.api_key())
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    let _ = r.bytes().await;
}

/// The client streams the simulator saw: `(open, closed)`.
async fn client_streams(sim: &Sim) -> (usize, usize) {
    let streams = sim.hooks().streams().await.unwrap();
    let ours: Vec<&Value> = streams
        .iter()
        .filter(|s| s["path"] == "/api/stream")
        .collect();
    let closed = ours
        .iter()
        .filter(|s| s["aborted"] == true || s["completed"] == true)
        .count();
    (ours.len() - closed, closed)
}

async fn until_streams(sim: &Sim, want: (usize, usize)) {
    guarded(async {
        while client_streams(sim).await != want {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_container_and_a_project_down_are_heard_and_the_stream_is_shared() {
    let sim = Sim::start().await;
    let updates = Updates::default();
    let client = spawn_with(updates.clone(), &sim.base(), sim.sim.api_key(), FAST).await;
    let caps = client.peer_info().unwrap().capabilities.resources.clone();
    assert_eq!(caps.and_then(|r| r.subscribe), Some(true));
    // Four stream-fed subscriptions and two polled ones.
    for uri in [
        "arcane://dashboard",
        "arcane://environments",
        "arcane://activities",
        "arcane://environment/0",
        "arcane://container/web-1",
        "arcane://project/webshop",
    ] {
        subscribe(&client, uri).await.expect(uri);
    }
    // One connection for the four.
    until_streams(&sim, (1, 0)).await;
    // The dashboard and environment reads are live resources too.
    for uri in ["arcane://dashboard", "arcane://activities"] {
        let read = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
            .await
            .expect(uri);
        assert_eq!(read.contents.len(), 1, "{uri}");
    }

    let dashboard = updates.count("arcane://dashboard");
    arcane_post(&sim, "containers/web-1/stop").await;
    updates.more_than("arcane://container/web-1", 0).await;
    updates.more_than("arcane://dashboard", dashboard).await;
    // An unrelated object is not notified for it.
    assert_eq!(updates.count("arcane://environment/0"), 0);

    let dashboard = updates.count("arcane://dashboard");
    let project = updates.count("arcane://project/webshop");
    arcane_post(&sim, &format!("projects/{WEBSHOP}/down")).await;
    updates.more_than("arcane://dashboard", dashboard).await;
    updates.more_than("arcane://project/webshop", project).await;
    assert_eq!(client_streams(&sim).await, (1, 0), "still the one stream");
    // Nothing but the URIs subscribed to; the environments did not change.
    let heard = updates.all();
    assert!(
        heard.iter().all(|u| [
            "arcane://dashboard",
            "arcane://activities",
            "arcane://container/web-1",
            "arcane://project/webshop"
        ]
        .contains(&u.as_str())),
        "{heard:?}"
    );

    // The stream closes once the last stream-fed subscription ends, not before.
    for uri in [
        "arcane://dashboard",
        "arcane://environments",
        "arcane://activities",
    ] {
        unsubscribe(&client, uri).await;
    }
    assert_eq!(client_streams(&sim).await, (1, 0));
    unsubscribe(&client, "arcane://environment/0").await;
    until_streams(&sim, (0, 1)).await;
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_reconnects_and_still_tells() {
    let sim = Sim::start().await;
    // The first connection is cut after its first snapshots.
    sim.fault(json!({"method": "GET", "path": "/api/stream$", "kind": "truncated_stream"}))
        .await;
    let updates = Updates::default();
    let client = spawn_with(updates.clone(), &sim.base(), sim.sim.api_key(), FAST).await;
    subscribe(&client, "arcane://dashboard").await.unwrap();
    // Cut, then open again (after the first backoff).
    until_streams(&sim, (1, 1)).await;
    let before = updates.count("arcane://dashboard");
    arcane_post(&sim, "containers/api-1/stop").await;
    updates.more_than("arcane://dashboard", before).await;
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caps_and_the_wrong_uris_are_refused_clearly() {
    let sim = Sim::start().await;
    let args = [
        "--max-subscriptions",
        "2",
        "--max-subscriptions-total",
        "3",
        "--exclude-tools",
        "project.get",
    ];
    let client = spawn_with(Updates::default(), &sim.base(), sim.sim.api_key(), &args).await;
    let refused = |r: Result<(), ServiceError>| match r {
        Err(ServiceError::McpError(e)) => e.message.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let e = refused(subscribe(&client, "arcane://tools").await);
    assert!(e.contains("cannot be subscribed to"), "{e}");
    assert!(e.contains("arcane://container/{containerId}"), "{e}");
    let e = refused(subscribe(&client, "arcane://project/webshop").await);
    assert!(e.contains("is not served here"), "{e}");

    subscribe(&client, "arcane://container/web-1")
        .await
        .unwrap();
    subscribe(&client, "arcane://dashboard").await.unwrap();
    // The same URI again is no new subscription.
    subscribe(&client, "arcane://dashboard").await.unwrap();
    let e = refused(subscribe(&client, "arcane://environments").await);
    assert!(e.contains("--max-subscriptions"), "{e}");
    unsubscribe(&client, "arcane://dashboard").await;
    subscribe(&client, "arcane://environments").await.unwrap();
    client.cancel().await.ok();

    // The server's total, reached before the session's own limit.
    let args = ["--max-subscriptions", "4", "--max-subscriptions-total", "2"];
    let client = spawn_with(Updates::default(), &sim.base(), sim.sim.api_key(), &args).await;
    subscribe(&client, "arcane://dashboard").await.unwrap();
    subscribe(&client, "arcane://activities").await.unwrap();
    let e = refused(subscribe(&client, "arcane://environments").await);
    assert!(e.contains("--max-subscriptions-total"), "{e}");
    client.cancel().await.ok();
}

/// One token holds at most its share of the server's subscriptions (a quarter of the total,
/// at least one session's): past it, its own oldest subscription ends, whichever of its
/// sessions holds it, and another token still subscribes. Before, one token's sessions filled
/// the total and everyone else was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_holds_only_its_share_of_subscriptions() {
    use crate::process_support::{HttpServer, http_client_with};
    let sim = Sim::start().await;
    let args = [
        FAST,
        &[
            "--max-subscriptions",
            "2",
            "--max-subscriptions-total",
            "12",
        ],
    ]
    .concat();
    let server = HttpServer::for_sim(&sim, &args, "alice-token,bob-token").await;
    let uris = [
        "arcane://dashboard",
        "arcane://activities",
        "arcane://environments",
        "arcane://container/web-1",
        "arcane://container/api-1",
        "arcane://project/webshop",
    ];
    let mut alice = Vec::new();
    for pair in uris.chunks(2) {
        for _ in 0..2 {
            let session =
                http_client_with(Updates::default(), &server.base, "alice-token", &[]).await;
            for uri in pair {
                subscribe(&session, uri)
                    .await
                    .unwrap_or_else(|e| panic!("alice's {uri}: {e}"));
            }
            alice.push(session);
        }
    }
    // Alice asked for 12 (the whole total) and holds 3; Bob subscribes.
    let bob = http_client_with(Updates::default(), &server.base, "bob-token", &[]).await;
    subscribe(&bob, "arcane://dashboard")
        .await
        .expect("another token still subscribes");
    subscribe(&bob, "arcane://container/web-1")
        .await
        .expect("and again");
    for c in alice {
        c.cancel().await.ok();
    }
    bob.cancel().await.ok();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_listener_hears_its_resources_and_only_those() {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::ClientLifecycleMode;

    let sim = Sim::start().await;
    let client = spawn_speaking(
        (),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        &sim.base(),
        sim.sim.api_key(),
        FAST,
    )
    .await;
    let mut sub = client
        .peer()
        .listen(
            SubscriptionFilter::builder()
                .resource_subscriptions([
                    "arcane://container/web-1",
                    "arcane://dashboard",
                    "arcane://tools",
                ])
                .build(),
        )
        .await
        .expect("subscriptions/listen accepted");
    assert_eq!(
        sub.acknowledged().resource_subscriptions,
        Some(vec![
            "arcane://container/web-1".to_string(),
            "arcane://dashboard".to_string()
        ]),
        "a URI that is not live is left out of the acknowledgment"
    );
    until_streams(&sim, (1, 0)).await;
    // The acknowledgment comes before the first state is known: the container is stopped
    // and started until both URIs were heard (each change after that state is).
    let mut heard = Vec::new();
    let mut running = true;
    guarded(async {
        while !(heard.iter().any(|u| u == "arcane://container/web-1")
            && heard.iter().any(|u| u == "arcane://dashboard"))
        {
            let verb = if running { "stop" } else { "start" };
            arcane_post(&sim, &format!("containers/web-1/{verb}")).await;
            running = !running;
            while let Ok(n) = tokio::time::timeout(Duration::from_secs(2), sub.next()).await {
                if let ServerNotification::ResourceUpdatedNotification(u) =
                    n.unwrap().expect("subscription open")
                {
                    heard.push(u.params.uri);
                }
            }
        }
    })
    .await;
    assert!(
        heard
            .iter()
            .all(|u| u == "arcane://container/web-1" || u == "arcane://dashboard"),
        "{heard:?}"
    );
    // The listen request owns its subscriptions: ending it ends them, and the stream.
    drop(sub);
    until_streams(&sim, (0, 1)).await;
    client.cancel().await.ok();
}
