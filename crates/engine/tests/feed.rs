//! The client stream reader (`Executor::open_feed`, docs/arcane-wire.md#the-client-stream)
//! against the in-process simulator: events one by one, a wrong key as Arcane's error, the
//! connection closed when the feed is dropped.

use std::time::Duration;

use arcane_engine::{Auth, ExecConfig, Executor, FeedError};
use arcane_sim::hooks::HooksClient;
use serde_json::Value;

use crate::fixtures::{guarded, spec_v2 as spec_path};

async fn sim() -> arcane_sim::RunningSim {
    arcane_sim::start(arcane_sim::SimConfig::new(spec_path()))
        .await
        .expect("simulator starts")
}

fn executor(sim: &arcane_sim::RunningSim, key: &str) -> Executor {
    Executor::new(
        ExecConfig {
            base_url: sim.base_url(),
            auth: Auth::ApiKey(key.into()),
            environment: "0".into(),
            timeout: Duration::from_secs(10),
            max_response_bytes: arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
            max_concurrent_requests: 4,
            show_secrets: false,
        },
        arcane_engine::tls_config(None, false).expect("TLS"),
    )
    .expect("executor")
}

#[tokio::test]
async fn the_feed_yields_the_streams_events_and_its_end_is_seen_upstream() {
    let sim = sim().await;
    let exec = executor(&sim, sim.api_key());
    let mut feed = guarded(exec.open_feed("environments,dashboard", None))
        .await
        .expect("the stream opens");
    let mut channels = Vec::new();
    while channels.len() < 2 {
        let event: Value = guarded(feed.next()).await.expect("an event");
        let channel = event["channel"].as_str().unwrap_or_default().to_string();
        if !channel.is_empty() && !channels.contains(&channel) {
            channels.push(channel);
        }
    }
    channels.sort();
    assert_eq!(channels, ["dashboard", "environments"]);
    assert_eq!(feed.skipped, 0);
    drop(feed);
    // The simulator sees the client go away.
    let hooks = HooksClient::new(sim.base_url()).expect("hooks");
    guarded(async {
        loop {
            let streams = hooks.streams().await.expect("the stream log");
            let closed = streams.iter().any(|s| {
                s["path"].as_str().unwrap_or_default().ends_with("/stream") && s["aborted"] == true
            });
            if closed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_refused_key_is_arcanes_error_not_a_stream() {
    let sim = sim().await;
    let exec = executor(&sim, "not-the-key");
    match guarded(exec.open_feed("dashboard", None)).await {
        Err(FeedError::Status { status, .. }) => assert_eq!(status, 401),
        Err(e) => panic!("expected Arcane's 401, got {e}"),
        Ok(_) => panic!("a stream opened with a wrong key"),
    }
}
