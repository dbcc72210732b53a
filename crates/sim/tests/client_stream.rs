//! `GET /api/stream` (docs/arcane-wire.md#the-client-stream): the envelope, snapshots that
//! follow the state, the end seen in `/__sim/streams`.

use crate::common;

use std::time::Duration;

use common::*;
use futures::StreamExt;
use serde_json::Value;

/// Reads lines until one satisfies `want` (hang guard: 10 s).
async fn until(
    body: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    buf: &mut String,
    want: impl Fn(&Value) -> bool,
) -> Value {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            while let Some(pos) = buf.find('\n') {
                let line: String = buf.drain(..=pos).collect();
                let v: Value = serde_json::from_str(line.trim()).expect("a JSON line");
                assert!(
                    v["timestamp"].is_string(),
                    "every line has a timestamp: {v}"
                );
                if want(&v) {
                    return v;
                }
            }
            let chunk = body.next().await.expect("the stream goes on").unwrap();
            buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("hang guard: the line never came")
}

#[tokio::test]
async fn a_stopped_container_shows_in_the_next_dashboard_snapshot() {
    let s = start().await;
    let r = s
        .get("/stream")
        .query(&[("channels", "environments, Dashboard,activities,bogus")])
        .send()
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/x-json-stream"
    );
    let mut body = r.bytes_stream();
    let mut buf = String::new();
    let envs = until(&mut body, &mut buf, |v| v["channel"] == "environments").await;
    assert_eq!(envs["environment"]["type"], "snapshot");
    assert!(envs["environment"]["environments"].is_array());
    let local = |v: &Value| v["channel"] == "dashboard" && v["dashboard"]["environmentId"] == "0";
    let first = until(&mut body, &mut buf, local).await;
    let snap = &first["dashboard"]["snapshot"];
    // The stream carries counters, not the first-page tables.
    assert!(snap["containers"]["data"].is_null());
    let running = snap["containers"]["counts"]["runningContainers"]
        .as_u64()
        .unwrap();
    let list = s
        .get("/environments/0/containers")
        .query(&[("limit", "100")])
        .await
        .json();
    let id = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["state"] == "running")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.post(&format!("/environments/0/containers/{id}/stop"))
        .await
        .expect(200);
    let next = until(&mut body, &mut buf, local).await;
    assert_eq!(
        next["dashboard"]["snapshot"]["containers"]["counts"]["runningContainers"],
        running - 1
    );
    drop(body);
    let mut aborted = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let streams = Value::from(s.hooks.streams().await.unwrap());
        if streams[0]["aborted"] == true {
            assert_eq!(streams[0]["path"], "/api/stream");
            aborted = true;
            break;
        }
    }
    assert!(aborted, "the closed stream was not reported aborted");
}
