//! Every fault kind of `POST /__sim/faults`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn status_fault_applies_the_given_number_of_times() {
    let s = start().await;
    let added = s
        .hooks
        .add_faults(&json!({"method": "POST", "path": "/containers/[^/]+/restart$", "kind": "status",
            "status": 503, "body": {"title": "Service Unavailable", "status": 503, "detail": "busy"}, "times": 2}))
        .await
        .unwrap();
    assert_eq!(added, 1);
    for _ in 0..2 {
        let r = s
            .api(Method::POST, "/environments/0/containers/web-1/restart")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let b: Value = r.json().await.unwrap();
        assert_eq!(b["detail"], "busy");
    }
    let r = s
        .api(Method::POST, "/environments/0/containers/web-1/restart")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Method mismatch does not trigger; a default body is problem+json for the status.
    s.hooks
        .add_faults(
            &json!({"method": "GET", "path": "/containers$", "kind": "status", "status": 500}),
        )
        .await
        .unwrap();
    let r = s
        .api(Method::GET, "/environments/0/containers")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let b: Value = r.json().await.unwrap();
    assert_eq!(b["title"], "Internal Server Error");
}

#[tokio::test]
async fn unlimited_faults_last_until_reset() {
    let s = start().await;
    s.hooks
        .add_faults(&json!({"path": "/images$", "kind": "status", "status": 418, "times": 0}))
        .await
        .unwrap();
    for _ in 0..3 {
        let r = s
            .api(Method::GET, "/environments/0/images")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 418);
    }
    s.hooks.reset().await.unwrap();
    let r = s
        .api(Method::GET, "/environments/0/images")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn delay_fault_then_normal_answer() {
    let s = start().await;
    s.hooks
        .add_faults(&json!({"path": "/environments$", "kind": "delay", "delayMs": 300}))
        .await
        .unwrap();
    let t = Instant::now();
    let (st, b) = s.get_json("/environments").await;
    assert_eq!(st, 200);
    assert_eq!(b["success"], true);
    assert!(t.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn drop_fault_closes_without_answer() {
    let s = start().await;
    s.hooks
        .add_faults(&json!({"path": "/containers/web-1$", "kind": "drop"}))
        .await
        .unwrap();
    let e = s
        .api(Method::GET, "/environments/0/containers/web-1")
        .send()
        .await
        .unwrap_err();
    assert!(e.is_request() || e.is_connect() || e.is_body(), "{e:?}");
    // The server keeps serving.
    let (st, _) = s.get_json("/environments/0/containers/web-1").await;
    assert_eq!(st, 200);
}

#[tokio::test]
async fn malformed_json_fault() {
    let s = start().await;
    s.hooks
        .add_faults(&json!({"path": "/projects$", "kind": "malformed_json"}))
        .await
        .unwrap();
    let r = s
        .api(Method::GET, "/environments/0/projects")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let text = r.text().await.unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[tokio::test]
async fn truncated_stream_fault() {
    let s = start().await;
    s.hooks
        .add_faults(&json!({"path": "/images/pull$", "kind": "truncated_stream"}))
        .await
        .unwrap();
    let r = s
        .api(Method::POST, "/environments/0/images/pull")
        .json(&json!({"imageName": "redis"}))
        .send()
        .await
        .unwrap();
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
    s.hooks
        .add_faults(&json!({"path": "/containers$", "kind": "truncated_stream"}))
        .await
        .unwrap();
    match s
        .api(Method::GET, "/environments/0/containers")
        .send()
        .await
    {
        Err(e) => assert!(e.is_request() || e.is_body(), "{e:?}"),
        Ok(r) => assert!(r.bytes().await.is_err()),
    }
}

#[tokio::test]
async fn stream_error_fault() {
    let s = start().await;
    s.hooks
        .add_faults(
            &json!({"path": "/projects/[^/]+/up$", "kind": "stream_error",
        "body": {"error": "failed to get project: project not found"}}),
        )
        .await
        .unwrap();
    let r = s
        .api(
            Method::POST,
            "/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let lines: Vec<Value> = r
        .text()
        .await
        .unwrap()
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
    s.hooks
        .add_faults(&json!({"path": "^/api/environments/env-2/", "kind": "agent_unreachable"}))
        .await
        .unwrap();
    let r = s
        .api(Method::GET, "/environments/env-2/containers")
        .send()
        .await
        .unwrap();
    // docs/arcane-wire.md#errors: 502 `Edge agent is not connected`, plain JSON.
    assert_eq!(r.status(), 502);
    assert_eq!(r.headers()["content-type"], "application/json");
    let b: Value = r.json().await.unwrap();
    assert_eq!(
        b,
        json!({"success": false, "data": {"error": "Edge agent is not connected"}})
    );
    s.hooks
        .add_faults(&json!({"path": "env-2", "kind": "agent_unreachable", "status": 503}))
        .await
        .unwrap();
    let r = s
        .api(Method::GET, "/environments/env-2/images")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
}
