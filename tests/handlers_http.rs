//! JSON-lines streams, downloads and uploads against the in-process Arcane simulator.

use std::time::Duration;

use arcane_engine::{
    DEFAULT_MAX_DOWNLOAD, Download, DownloadBody, FormField, TransferError, multipart_form,
    read_download,
};
use arcane_engine::{Progress, StreamErrorKind, read_response};
use arcane_mcp::present::text::stream_text as summarize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::server_support::{Sim, guarded};

const WEBSHOP: &str = "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01";

/// A request to the simulator's API, with its key.
fn api(s: &Sim, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    s.http
        .request(method, format!("{}/api{path}", s.base()))
        .header("X-API-Key", s.sim.api_key())
}

/// An image pull: the simulator answers with a JSON-lines stream.
async fn pull(s: &Sim) -> reqwest::Response {
    api(s, reqwest::Method::POST, "/environments/0/images/pull")
        .json(&json!({"imageName": "nginx", "tag": "1.27-alpine"}))
        .send()
        .await
        .expect("pull answered")
}

/// A download from the simulator's API, read as the executor reads one.
async fn download(s: &Sim, path: &str) -> Download {
    let resp = api(s, reqwest::Method::GET, path).send().await.unwrap();
    guarded(read_download(resp, DEFAULT_MAX_DOWNLOAD))
        .await
        .unwrap()
}

/// Paces the simulator's streams: one line every `ms` milliseconds.
async fn pace(s: &Sim, ms: u64) {
    s.hooks().set_stream_pace_ms(ms).await.unwrap();
}

#[tokio::test]
async fn pull_stream_to_done_with_monotonic_progress() {
    let s = Sim::start().await;
    pace(&s, 1).await;
    let mut progress: Vec<Progress> = Vec::new();
    let resp = pull(&s).await;
    let sum = guarded(read_response(
        resp,
        |p| progress.push(p),
        &CancellationToken::new(),
    ))
    .await
    .expect("stream completes");
    assert!(sum.done);
    assert_eq!(sum.error, None);
    assert!(sum.activity_id.as_deref().is_some_and(|a| !a.is_empty()));
    assert_eq!(sum.malformed, 0);
    // Every line reported, strictly increasing from 1, no total.
    assert!(progress.len() >= 3);
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p.progress, i as u64 + 1);
        assert_eq!(p.total, None);
    }
    assert_eq!(progress.last().unwrap().message.as_deref(), Some("done"));
    // Three layers, each ending "Pull complete"; the final status line.
    let layers: Vec<_> = sum
        .items
        .iter()
        .filter(|o| o.item.starts_with("layer "))
        .collect();
    assert_eq!(layers.len(), 3, "{:?}", sum.items);
    assert!(layers.iter().all(|o| o.status == "Pull complete"));
    assert_eq!(
        sum.final_status.as_deref(),
        Some("Status: Downloaded newer image for nginx:1.27-alpine")
    );
    let text = summarize(&sum);
    assert!(text.starts_with("Completed."), "{text}");
    assert!(text.contains(sum.activity_id.as_deref().unwrap()), "{text}");
    assert!(text.contains(": Pull complete"), "{text}");
    assert!(text.contains("Downloaded newer image"), "{text}");
    s.sim.shutdown().await;
}

#[tokio::test]
async fn project_up_per_container_outcome() {
    let s = Sim::start().await;
    pace(&s, 1).await;
    let resp = api(
        &s,
        reqwest::Method::POST,
        &format!("/environments/0/projects/{WEBSHOP}/up"),
    )
    .json(&json!({}))
    .send()
    .await
    .unwrap();
    let sum = guarded(read_response(resp, |_| {}, &CancellationToken::new()))
        .await
        .unwrap();
    assert!(sum.done);
    let started: Vec<_> = sum
        .items
        .iter()
        .filter(|o| o.item.starts_with("Container "))
        .collect();
    assert!(!started.is_empty());
    assert!(
        started.iter().all(|o| o.status == "Started"),
        "{:?}",
        sum.items
    );
    assert!(
        sum.items
            .iter()
            .any(|o| o.item == "Network webshop_default" && o.status == "Created")
    );
    s.sim.shutdown().await;
}

#[tokio::test]
async fn error_line_mid_stream_is_an_error_quoting_it() {
    let s = Sim::start().await;
    s.fault(json!({"path": "/images/pull$", "kind": "stream_error",
                   "body": {"error": "error reading image pull stream for nginx:1.27-alpine: unauthorized"}}))
        .await;
    let resp = pull(&s).await;
    let err = guarded(read_response(resp, |_| {}, &CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, StreamErrorKind::Arcane);
    let text = err.to_string();
    assert!(
        text.contains("error reading image pull stream for nginx:1.27-alpine: unauthorized"),
        "{text}"
    );
    assert!(text.contains("run it again"), "{text}");
    assert!(!err.summary.done);
    assert!(err.summary.lines > 0);
    assert!(summarize(&err.summary).starts_with("Failed: error reading image pull stream"));
    s.sim.shutdown().await;
}

#[tokio::test]
async fn truncated_stream_is_cut_short() {
    let s = Sim::start().await;
    s.fault(json!({"path": "/images/pull$", "kind": "truncated_stream"}))
        .await;
    let resp = pull(&s).await;
    let err = guarded(read_response(resp, |_| {}, &CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, StreamErrorKind::CutShort);
    // Activity line and at most the one log line before the cut.
    assert!(err.summary.lines <= 1);
    assert!(err.summary.activity_id.is_some());
    let text = err.to_string();
    assert!(text.contains("cut short"), "{text}");
    assert!(text.contains("check the result"), "{text}");
    s.sim.shutdown().await;
}

#[tokio::test]
async fn cancelled_project_up_aborts_the_request() {
    let s = Sim::start().await;
    // Slow lines so that the cancel lands mid-stream.
    pace(&s, 200).await;
    let resp = api(
        &s,
        reqwest::Method::POST,
        &format!("/environments/0/projects/{WEBSHOP}/up"),
    )
    .json(&json!({"pullPolicy": "always"}))
    .send()
    .await
    .unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let err = guarded(read_response(
        resp,
        move |p| {
            if p.progress == 2 {
                trigger.cancel();
            }
        },
        &cancel,
    ))
    .await
    .unwrap_err();
    assert_eq!(err.kind, StreamErrorKind::Cancelled);
    assert!(err.to_string().contains("aborted"));
    // The simulator notices the disconnect when it writes the next line (bounded poll).
    let mut aborted = false;
    for _ in 0..50 {
        let streams = s.hooks().streams().await.unwrap();
        let st = &streams[0];
        if st["aborted"] == true {
            assert_eq!(st["completed"], false);
            aborted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(aborted, "the simulator saw the stream aborted");
    // The up was not applied: cache-1 is still paused.
    let c = api(
        &s,
        reqwest::Method::GET,
        "/environments/0/containers/cache-1",
    )
    .send()
    .await
    .unwrap()
    .json::<Value>()
    .await
    .unwrap();
    assert_eq!(c["data"]["state"]["status"], "paused");
    s.sim.shutdown().await;
}

#[tokio::test]
async fn downloads_pem_text_tar_binary_unquoted_name_and_cap() {
    let s = Sim::start().await;
    let d = download(&s, "/edge-mtls/ca").await;
    assert_eq!(d.file_name.as_deref(), Some("ca.crt"));
    assert_eq!(d.content_type.as_deref(), Some("application/x-pem-file"));
    match &d.body {
        DownloadBody::Text(t) => {
            assert!(t.starts_with("-----BEGIN CERTIFICATE-----"), "{t}");
            assert_eq!(t.len(), d.size);
        }
        other => panic!("expected text, got {other:?}"),
    }

    let d = download(&s, "/environments/0/images/nginx:1.27-alpine/export").await;
    assert_eq!(d.file_name.as_deref(), Some("nginx_1.27-alpine.tar"));
    assert_eq!(d.content_type.as_deref(), Some("application/x-tar"));
    match &d.body {
        DownloadBody::Binary(b) => {
            assert_eq!(b.len(), d.size);
            assert!(b.len() >= 512, "a tar archive");
        }
        other => panic!("expected binary, got {other:?}"),
    }

    let created: serde_json::Value = api(
        &s,
        reqwest::Method::POST,
        "/environments/0/volumes/webshop_db-data/backups",
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let id = created["data"]["id"].as_str().unwrap();
    let d = download(
        &s,
        &format!("/environments/0/volumes/backups/{id}/download"),
    )
    .await;
    assert_eq!(d.file_name, Some(format!("{id}.tar.gz")));
    assert!(matches!(d.body, DownloadBody::Binary(_)));

    let resp = api(
        &s,
        reqwest::Method::GET,
        "/environments/0/images/nginx:1.27-alpine/export",
    )
    .send()
    .await
    .unwrap();
    let err = guarded(read_download(resp, 100)).await.unwrap_err();
    assert!(
        matches!(err, TransferError::TooLarge { limit: 100, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("100 bytes") && text.contains("download it directly"),
        "{text}"
    );

    s.sim.shutdown().await;
}

#[tokio::test]
async fn multipart_project_create_and_workspace_update() {
    let s = Sim::start().await;
    let binary = [0u8, 159, 146, 150, 255];
    let form = multipart_form(&[
        FormField {
            name: "project".into(),
            value: json!({"name": "demo"}),
            is_file: false,
            file_name: None,
        },
        FormField {
            name: "manifest".into(),
            value: json!("{\"files\":[]}"),
            is_file: false,
            file_name: None,
        },
        FormField {
            name: "files".into(),
            value: json!([
                {"name": "compose.yaml", "content": "services:\n  web:\n    image: nginx\n"},
                "base64:AJ+Slv8="
            ]),
            is_file: true,
            file_name: None,
        },
        FormField {
            name: "skipped".into(),
            value: Value::Null,
            is_file: false,
            file_name: None,
        },
    ])
    .unwrap();
    let resp = api(&s, reqwest::Method::POST, "/environments/0/projects")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let log = s.requests().await;
    let entry = &log[0];
    let ct = entry["headers"]["content-type"].as_str().unwrap();
    assert!(ct.starts_with("multipart/form-data; boundary="), "{ct}");
    let body = entry["body"].as_str().unwrap();
    assert!(
        body.contains("name=\"project\"\r\n\r\n{\"name\":\"demo\"}"),
        "{body}"
    );
    assert!(
        body.contains("name=\"manifest\"\r\n\r\n{\"files\":[]}"),
        "{body}"
    );
    assert!(
        body.contains("name=\"files\"; filename=\"compose.yaml\""),
        "{body}"
    );
    assert!(
        body.contains("services:\n  web:\n    image: nginx\n"),
        "{body}"
    );
    assert!(
        body.contains("name=\"files\"; filename=\"files-2\""),
        "{body}"
    );
    assert!(!body.contains("skipped"));
    // The binary file went out as raw bytes (shown lossily by the request log).
    assert!(
        body.contains(&String::from_utf8_lossy(&binary).into_owned()),
        "{body}"
    );

    let form = multipart_form(&[FormField {
        name: "manifest".into(),
        value: json!("{}"),
        is_file: false,
        file_name: None,
    }])
    .unwrap();
    let resp = api(
        &s,
        reqwest::Method::PUT,
        "/environments/0/volumes/webshop_db-data/workspace",
    )
    .multipart(form)
    .send()
    .await
    .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    s.sim.shutdown().await;
}
