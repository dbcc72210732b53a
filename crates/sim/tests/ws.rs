//! WebSocket endpoints (docs/handlers.md) with the framing. of docs/arcane-wire.md#websockets

use crate::common;

use std::time::Duration;

use common::*;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(s: &Sim, path: &str) -> Ws {
    let url = format!("{}{}", s.sim.base_url().replace("http://", "ws://"), path);
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("X-API-Key", s.sim.api_key().parse().unwrap());
    let (ws, resp) = tokio_tungstenite::connect_async(req)
        .await
        .expect("ws connects");
    assert_eq!(resp.status(), 101);
    ws
}

async fn next_msg(ws: &mut Ws) -> Option<Message> {
    match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        Ok(Some(Ok(m))) => Some(m),
        _ => None,
    }
}

async fn next_text(ws: &mut Ws) -> String {
    match next_msg(ws).await {
        Some(Message::Text(t)) => t.to_string(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

#[tokio::test]
async fn ws_needs_auth() {
    let s = start().await;
    let url = format!(
        "{}/api/environments/0/ws/containers/web-1/logs",
        s.sim.base_url().replace("http://", "ws://")
    );
    let err = tokio_tungstenite::connect_async(url).await.unwrap_err();
    match err {
        tokio_tungstenite::tungstenite::Error::Http(resp) => {
            assert_eq!(resp.status(), 401);
            // docs/arcane-wire.md#websockets: errors before the upgrade are JSON.
            let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap()).unwrap();
            assert_eq!(body["code"], "UNAUTHORIZED");
            assert_eq!(body["message"], "Authentication required");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn container_logs_text_follow_false_stays_open() {
    let s = start().await;
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web-1/logs?follow=false",
    )
    .await;
    // docs/arcane-wire.md#websockets: text frames, stdout first, then stderr lines prefixed with "[STDERR] ".
    assert_eq!(next_text(&mut ws).await, "web-1 starting");
    assert_eq!(
        next_text(&mut ws).await,
        "web-1 ready to accept connections"
    );
    assert_eq!(
        next_text(&mut ws).await,
        "web-1 handled request GET /health 200"
    );
    assert_eq!(
        next_text(&mut ws).await,
        "[STDERR] web-1 warning: demo mode"
    );
    // docs/arcane-wire.md#websockets: with follow=false the server does not close the socket.
    let more = tokio::time::timeout(Duration::from_millis(700), ws.next()).await;
    assert!(
        more.is_err(),
        "socket should stay open and silent, got {more:?}"
    );
    ws.close(None).await.unwrap();
    // The upgrade request is in the log.
    let log = s.hooks.requests().await.unwrap();
    let e = &log[0];
    assert_eq!(e["path"], "/api/environments/0/ws/containers/web-1/logs");
    assert_eq!(e["query"], "follow=false");
    assert_eq!(e["websocket"], true);
}

#[tokio::test]
async fn container_logs_json_and_tail_and_follow() {
    let s = start().await;
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web-1/logs?format=json&tail=2",
    )
    .await;
    // docs/arcane-wire.md#websockets: JSON frames {seq, level, message, timestamp}.
    let a: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert_eq!(a["seq"], 1);
    assert_eq!(a["level"], "stdout");
    assert_eq!(a["message"], "web-1 handled request GET /health 200");
    assert!(a["timestamp"].as_str().unwrap().ends_with('Z'));
    let b: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert_eq!(b["level"], "stderr");
    // follow=true (default) keeps sending lines.
    let c: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert_eq!(c["seq"], 3);
}

#[tokio::test]
async fn logs_batched_and_project_and_errors() {
    let s = start().await;
    // docs/arcane-wire.md#websockets: batched=true sends arrays of entries.
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web-1/logs?format=json&batched=true&follow=false",
    )
    .await;
    let arr: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert_eq!(arr.as_array().unwrap().len(), 4);
    // docs/arcane-wire.md#websockets: project text logs are the message only; JSON carries `service`.
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/logs?follow=false",
    )
    .await;
    let first = next_text(&mut ws).await;
    assert!(
        !first.contains(" | ") && !first.starts_with("[STDERR]"),
        "{first}"
    );
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/logs?follow=false&format=json",
    )
    .await;
    let v: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert!(v["service"].as_str().unwrap().ends_with("-1"));
    // docs/arcane-wire.md#websockets: errors are a single frame and the socket stays open.
    let mut ws = connect(&s, "/api/environments/0/ws/containers/ghost/logs").await;
    assert_eq!(
        next_text(&mut ws).await,
        "Failed to stream container logs: Error response from daemon: No such container: ghost"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), ws.next())
            .await
            .is_err()
    );
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/ghost/logs?format=json",
    )
    .await;
    let v: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert_eq!(
        (v["level"].as_str(), v["service"].as_str()),
        (Some("error"), Some("arcane"))
    );
    // Swarm service logs.
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/swarm/services/edge-proxy/logs?follow=false",
    )
    .await;
    assert!(next_text(&mut ws).await.contains("Configuration loaded"));
}

#[tokio::test]
async fn stats_frames() {
    let s = start().await;
    let mut ws = connect(&s, "/api/environments/0/ws/containers/web-1/stats").await;
    // docs/arcane-wire.md#websockets: Docker StatsResponse + currentHistorySample; statsHistory only first.
    let a: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert!(a["memory_stats"]["usage"].is_u64());
    assert!(a["currentHistorySample"]["memoryUsageBytes"].is_u64());
    assert!(a["statsHistory"].is_array());
    let b: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert!(b.get("statsHistory").is_none());
    // Unknown container: an error frame, then the socket closes.
    let mut ws = connect(&s, "/api/environments/0/ws/containers/ghost/stats").await;
    let e: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to stream container stats: ")
    );
    assert!(e["timestamp"].is_string());
    assert!(matches!(
        next_msg(&mut ws).await,
        Some(Message::Close(_)) | None
    ));
    // System stats: the first frame is immediate.
    let mut ws = connect(&s, "/api/environments/0/ws/system/stats?interval=1").await;
    let v: Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
    for k in [
        "cpuUsage",
        "memoryUsage",
        "memoryTotal",
        "diskUsage",
        "diskTotal",
        "cpuCount",
        "architecture",
        "platform",
        "gpuCount",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
}

#[tokio::test]
async fn terminal_speaks_raw_binary() {
    let s = start().await;
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/db-1/terminal?shell=/bin/bash",
    )
    .await;
    // docs/arcane-wire.md#websockets: output is binary frames of raw bytes.
    match next_msg(&mut ws).await {
        Some(Message::Binary(b)) => assert_eq!(&b[..], b"/ # "),
        other => panic!("{other:?}"),
    }
    // Input: any frame, raw.
    ws.send(Message::Text("echo hi\r".into())).await.unwrap();
    let mut out = Vec::new();
    while !String::from_utf8_lossy(&out).ends_with("/ # ") {
        match next_msg(&mut ws).await {
            Some(Message::Binary(b)) => out.extend_from_slice(&b),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(String::from_utf8_lossy(&out), "echo hi\r\nhi\r\n/ # ");
    ws.send(Message::Binary(b"env\n".to_vec().into()))
        .await
        .unwrap();
    let mut out = Vec::new();
    while !String::from_utf8_lossy(&out).ends_with("/ # ") {
        match next_msg(&mut ws).await {
            Some(Message::Binary(b)) => out.extend_from_slice(&b),
            other => panic!("{other:?}"),
        }
    }
    assert!(String::from_utf8_lossy(&out).contains("POSTGRES_PASSWORD=s3cr3t-demo"));
    // docs/arcane-wire.md#websockets: failure is a text frame ending in \r\n, then an abrupt close.
    let mut ws = connect(&s, "/api/environments/0/ws/containers/ghost/terminal").await;
    let t = next_text(&mut ws).await;
    assert_eq!(
        t,
        "Error creating exec: failed to create exec: Error response from daemon: No such container: ghost\r\n"
    );
    assert!(matches!(
        next_msg(&mut ws).await,
        None | Some(Message::Close(_))
    ));
}

#[tokio::test]
async fn ws_parameters_are_raw_on_2_8_locally_and_decoded_through_the_manager() {
    let s = start().await;
    // docs/arcane-wire.md (path parameters): `web%2D1` reaches Docker still encoded on the local environment.
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web%2D1/logs?follow=false",
    )
    .await;
    let t = next_text(&mut ws).await;
    assert!(t.ends_with("No such container: web%2D1"), "{t}");
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web-1/logs?follow=false",
    )
    .await;
    assert!(!next_text(&mut ws).await.contains("No such container"));
    // A remote environment's manager decodes the path before proxying it.
    let mut ws = connect(
        &s,
        "/api/environments/env-2/ws/containers/worker%2D1/logs?follow=false",
    )
    .await;
    assert!(!next_text(&mut ws).await.contains("No such container"));
    // main decodes everywhere.
    s.set_version("main").await;
    let mut ws = connect(
        &s,
        "/api/environments/0/ws/containers/web%2D1/logs?follow=false",
    )
    .await;
    assert!(!next_text(&mut ws).await.contains("No such container"));
}
