//! Every fault kind of `POST /__sim/faults`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

#[tokio::test]
async fn status_fault_applies_the_given_number_of_times() {
    let s = start().await;
    let added = s.fault(json!({"method": "POST", "path": "/containers/[^/]+/restart$", "kind": "status",
            "status": 503, "body": {"title": "Service Unavailable", "status": 503, "detail": "busy"}, "times": 2})).await;
    assert_eq!(added, 1);
    for _ in 0..2 {
        let r = s.post("/environments/0/containers/web-1/restart").await;
        let b = r.expect(503);
        assert_eq!(r.header("content-type"), "application/problem+json");
        assert_eq!(b["detail"], "busy");
    }
    s.post("/environments/0/containers/web-1/restart")
        .await
        .expect(200);
    // Method mismatch does not trigger; a default body is problem+json for the status.
    s.fault(json!({"method": "GET", "path": "/containers$", "kind": "status", "status": 500}))
        .await;
    let b = s.get("/environments/0/containers").await.expect(500);
    assert_eq!(b["title"], "Internal Server Error");
}

#[tokio::test]
async fn unlimited_faults_last_until_reset() {
    let s = start().await;
    s.fault(json!({"path": "/images$", "kind": "status", "status": 418, "times": 0}))
        .await;
    for _ in 0..3 {
        s.get("/environments/0/images").await.expect(418);
    }
    s.hooks.reset().await.unwrap();
    s.get("/environments/0/images").await.expect(200);
}

#[tokio::test]
async fn delay_fault_then_normal_answer() {
    let s = start().await;
    s.fault(json!({"path": "/environments$", "kind": "delay", "delayMs": 300}))
        .await;
    let t = Instant::now();
    let b = s.get("/environments").await.expect(200);
    assert_eq!(b["success"], true);
    assert!(t.elapsed() >= Duration::from_millis(300));
}

/// `slow_body`: the normal answer, its headers at once and its body in pieces; a stream is
/// paced the same way and still ends with its final line.
#[tokio::test]
async fn slow_body_fault_sends_the_normal_answer_in_pieces() {
    let s = start().await;
    let normal = s
        .get("/environments/0/containers")
        .try_send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    s.fault(json!({"path": "/containers$", "kind": "slow_body", "chunkBytes": 256, "paceMs": 5}))
        .await;
    let r = s
        .get("/environments/0/containers")
        .try_send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let mut body = r.bytes_stream();
    let (mut got, mut pieces) = (Vec::new(), 0);
    while let Some(chunk) = body.next().await {
        let b = chunk.unwrap();
        assert!(b.len() <= 256, "a piece of {} bytes", b.len());
        got.extend_from_slice(&b);
        pieces += 1;
    }
    assert_eq!(got, normal, "the same answer, only slower");
    assert!(pieces >= normal.len().div_ceil(256), "{pieces} pieces");
    s.fault(json!({"path": "/images/pull$", "kind": "slow_body", "chunkBytes": 16, "paceMs": 1}))
        .await;
    let r = s
        .post("/environments/0/images/pull")
        .json(json!({"imageName": "redis"}))
        .try_send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    assert!(text.trim_end().ends_with(r#"{"done":true}"#), "{text}");
}

#[tokio::test]
async fn drop_fault_closes_without_answer() {
    let s = start().await;
    s.fault(json!({"path": "/containers/web-1$", "kind": "drop"}))
        .await;
    let e = s
        .get("/environments/0/containers/web-1")
        .try_send()
        .await
        .unwrap_err();
    assert!(e.is_request() || e.is_connect() || e.is_body(), "{e:?}");
    // The server keeps serving.
    s.get("/environments/0/containers/web-1").await.expect(200);
}

#[tokio::test]
async fn malformed_json_fault() {
    let s = start().await;
    s.fault(json!({"path": "/projects$", "kind": "malformed_json"}))
        .await;
    let r = s.get("/environments/0/projects").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.header("content-type"), "application/json");
    let text = r.text();
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[tokio::test]
async fn truncated_stream_fault() {
    let s = start().await;
    s.fault(json!({"path": "/images/pull$", "kind": "truncated_stream"}))
        .await;
    let r = s
        .post("/environments/0/images/pull")
        .json(json!({"imageName": "redis"}))
        .send()
        .await;
    assert_eq!(r.status(), 200);
    let mut body = r.bytes_stream();
    let mut got = Vec::new();
    let mut failed = false;
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(b) => got.extend_from_slice(&b),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the body should end with an error");
    let text = String::from_utf8(got).unwrap();
    assert!(text.contains("\"activity\""));
    assert!(!text.contains("\"done\""));
    // Non-stream answers are cut in the middle too.
    s.fault(json!({"path": "/containers$", "kind": "truncated_stream"}))
        .await;
    match s.get("/environments/0/containers").try_send().await {
        Err(e) => assert!(e.is_request() || e.is_body(), "{e:?}"),
        Ok(r) => assert!(r.bytes().await.is_err()),
    }
}

#[tokio::test]
async fn stream_error_fault() {
    let s = start().await;
    s.fault(
        json!({"path": "/projects/[^/]+/up$", "kind": "stream_error",
        "body": {"error": "failed to get project: project not found"}}),
    )
    .await;
    let r = s
        .post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up")
        .await;
    assert_eq!(r.status(), 200);
    let lines: Vec<Value> = r
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // docs/arcane-wire.md#streams: failure ends with {"error"} and no done line.
    assert_eq!(lines[0]["type"], "activity");
    assert_eq!(
        lines.last().unwrap(),
        &json!({"error": "failed to get project: project not found"})
    );
    assert!(lines.iter().all(|l| l.get("done").is_none()));
}

#[tokio::test]
async fn agent_unreachable_fault() {
    let s = start().await;
    s.fault(json!({"path": "^/api/environments/env-2/", "kind": "agent_unreachable"}))
        .await;
    let r = s.get("/environments/env-2/containers").await;
    // docs/arcane-wire.md#errors: 502 `Edge agent is not connected`, plain JSON.
    let b = r.expect(502);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(
        b,
        json!({"success": false, "data": {"error": "Edge agent is not connected"}})
    );
    s.fault(json!({"path": "env-2", "kind": "agent_unreachable", "status": 503}))
        .await;
    s.get("/environments/env-2/images").await.expect(503);
}
