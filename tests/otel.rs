//! The OpenTelemetry export (docs/observability.md), as a collector receives it: an OTLP/HTTP
//! receiver on loopback decodes what the real binary sends with the protocol's own types
//! (`opentelemetry-proto`), and the calls carry a client's W3C trace context in `_meta`.
//! And a collector that never answers, or is not there, holds no call up.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use prost::Message;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, MetaObject, RequestMetaObject};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::server_support::{Sim, command, guarded, spec_path, text};

const KEY: &str = "arc_otel_planted_key_7c2e";
/// A token-shaped value the model passes as an argument: in no attribute.
const TOKEN_ARG: &str = "ghp_otelPlantedArgument0123456789abcdef";
/// The client's trace, and the span of the client's call in it.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// What the collector received: the spans and the names of the metrics.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    /// Resource attributes of every export (where a secret could hide too).
    resource: Vec<KeyValue>,
    metrics: Vec<Metric>,
}

/// An OTLP/HTTP collector on loopback.
struct Collector {
    base: String,
    got: Arc<Mutex<Received>>,
    changed: Arc<tokio::sync::Notify>,
}

impl Collector {
    async fn start() -> Collector {
        let got = Arc::new(Mutex::new(Received::default()));
        let changed = Arc::new(tokio::sync::Notify::new());
        let (g, c) = (got.clone(), changed.clone());
        let traces = axum::routing::post(move |body: axum::body::Bytes| async move {
            let req = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
            let mut got = g.lock().unwrap();
            for rs in req.resource_spans {
                got.resource
                    .extend(rs.resource.map(|r| r.attributes).unwrap_or_default());
                for ss in rs.scope_spans {
                    got.spans.extend(ss.spans);
                }
            }
            c.notify_waiters();
            protobuf_ok()
        });
        let (g, c) = (got.clone(), changed.clone());
        let metrics = axum::routing::post(move |body: axum::body::Bytes| async move {
            let req = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
            let mut got = g.lock().unwrap();
            for rm in req.resource_metrics {
                for sm in rm.scope_metrics {
                    got.metrics.extend(sm.metrics);
                }
            }
            c.notify_waiters();
            protobuf_ok()
        });
        let app = axum::Router::new()
            .route("/v1/traces", traces)
            .route("/v1/metrics", metrics);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector { base, got, changed }
    }

    /// Waits (within the hang guard) until what was received satisfies `done`.
    async fn until<T>(&self, mut done: impl FnMut(&Received) -> Option<T>) -> T {
        guarded(async {
            loop {
                let wake = self.changed.notified();
                if let Some(t) = done(&self.got.lock().unwrap()) {
                    return t;
                }
                // Notified on each export; a periodic look covers a wake-up just missed.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(200), wake).await;
            }
        })
        .await
    }
}

/// An empty export response (every field of OTLP's response is optional).
fn protobuf_ok() -> ([(axum::http::HeaderName, &'static str); 1], Vec<u8>) {
    (
        [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::new(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn shown(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .map(|a| shown(&a.value))
}

/// The binary against the simulator, exporting to `endpoint`, with the SDK's batch and
/// metric intervals short so that the test does not wait on the defaults.
async fn serve(
    sim: &Sim,
    endpoint: &str,
    env: &[(&str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut cmd = command(&sim.base(), KEY, &["--otel-endpoint", endpoint]);
    cmd.envs(env.iter().copied());
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "100")
        .env("OTEL_SERVICE_NAME", "arcane-mcp-under-test");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("arcane-mcp spawns");
    ().serve(transport).await.expect("MCP session starts")
}

/// `tools/call` of `action` with the client's trace context in `_meta` (parent span `parent`).
async fn traced_call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    action: &str,
    params: Value,
    parent: &str,
) -> CallToolResult {
    let mut meta = MetaObject::new();
    meta.set_traceparent(format!("00-{TRACE}-{parent}-01"));
    meta.set_tracestate("vendor=otel-test");
    let mut request = CallToolRequestParams::new("arcane_execute_action").with_arguments(
        json!({"action": action, "params": params, "confirm": true})
            .as_object()
            .unwrap()
            .clone(),
    );
    request.meta = Some(RequestMetaObject(meta));
    guarded(client.call_tool(request))
        .await
        .expect("tools/call answers")
}

/// The chain of ancestors of `span` among `spans`, nearest first.
fn ancestors<'a>(spans: &'a [Span], span: &'a Span) -> Vec<&'a Span> {
    let mut chain = Vec::new();
    let mut at = span;
    while let Some(parent) = spans
        .iter()
        .find(|s| !at.parent_span_id.is_empty() && s.span_id == at.parent_span_id)
    {
        chain.push(parent);
        at = parent;
    }
    chain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_s_span_tree_continues_the_client_s_trace_and_carries_no_secret() {
    let mut cfg = arcane_sim::SimConfig::new(spec_path());
    cfg.api_key = KEY.to_string();
    arcane_engine::ensure_crypto_provider();
    let sim = Sim {
        sim: arcane_sim::start(cfg).await.unwrap(),
        http: reqwest::Client::new(),
    };
    let collector = Collector::start().await;
    let client = serve(&sim, &collector.base, &[]).await;

    // A read in an environment named by its name (a lookup, then the request), and a write
    // carrying a token-shaped value.
    let got = traced_call(
        &client,
        "container.get",
        json!({"environmentId": "staging-agent", "containerId": "worker-1"}),
        CLIENT_SPAN,
    )
    .await;
    assert_ne!(got.is_error, Some(true), "{}", text(&got));
    let created = traced_call(
        &client,
        "container.create",
        json!({"image": "nginx:1.27-alpine", "name": "otel-1", "labels": {"note": TOKEN_ARG}}),
        "00f067aa0ba902b8",
    )
    .await;
    assert_ne!(created.is_error, Some(true), "{}", text(&created));

    let trace = hex_decode(TRACE);
    let spans = collector
        .until(|r| {
            let calls = r
                .spans
                .iter()
                .filter(|s| s.trace_id == trace && s.name.starts_with("tools/call"))
                .count();
            let requests = r
                .spans
                .iter()
                .filter(|s| s.trace_id == trace && s.kind == SpanKind::Client as i32)
                .count();
            // Both calls, and the lookup's list, the read and the write to Arcane.
            (calls >= 2 && requests >= 3).then(|| r.spans.clone())
        })
        .await;

    // The MCP request: a server span named after its tool, child of the client's span.
    let call = spans
        .iter()
        .find(|s| {
            s.trace_id == trace
                && s.name == "tools/call arcane_execute_action"
                && hex(&s.parent_span_id) == CLIENT_SPAN
        })
        .unwrap_or_else(|| panic!("the first call's span in {:#?}", names(&spans)));
    assert_eq!(call.kind, SpanKind::Server as i32);
    assert_eq!(attr(call, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(
        attr(call, "gen_ai.tool.name").as_deref(),
        Some("arcane_execute_action")
    );
    assert_eq!(
        attr(call, "arcane.action.id").as_deref(),
        Some("container.get")
    );
    assert_eq!(attr(call, "arcane.outcome").as_deref(), Some("ok"));
    assert_eq!(attr(call, "network.transport").as_deref(), Some("pipe"));
    assert!(attr(call, "jsonrpc.request.id").is_some());
    assert_eq!(attr(call, "error.type"), None);

    // The request to Arcane under it: the route template, never the filled path.
    let get = spans
        .iter()
        .find(|s| {
            s.kind == SpanKind::Client as i32
                && attr(s, "url.template").as_deref()
                    == Some("/api/environments/{id}/containers/{containerId}")
                && attr(s, "http.request.method").as_deref() == Some("GET")
        })
        .unwrap_or_else(|| panic!("the Arcane request's span in {:#?}", names(&spans)));
    assert_eq!(
        get.name,
        "GET /api/environments/{id}/containers/{containerId}"
    );
    assert!(
        ancestors(&spans, get)
            .iter()
            .any(|s| s.span_id == call.span_id),
        "the Arcane request is under the MCP request"
    );
    assert_eq!(
        attr(get, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert!(attr(get, "http.response.body.size").is_some_and(|n| n.parse::<u64>().unwrap() > 0));
    // The lookup of `staging-agent` is a span of its own, with its list's request under it.
    let lookup = spans
        .iter()
        .find(|s| s.name == "resolve environmentId" && s.trace_id == trace)
        .unwrap_or_else(|| panic!("the lookup's span in {:#?}", names(&spans)));
    assert_eq!(lookup.parent_span_id, call.span_id);
    assert!(spans.iter().any(|s| s.parent_span_id == lookup.span_id
        && s.kind == SpanKind::Client as i32
        && attr(s, "url.template").as_deref() == Some("/api/environments")));
    assert!(
        spans
            .iter()
            .any(|s| s.name == "render" && s.parent_span_id == call.span_id)
    );
    // The write: POST with its body's size, under the second call.
    let post = spans
        .iter()
        .find(|s| {
            s.kind == SpanKind::Client as i32
                && attr(s, "http.request.method").as_deref() == Some("POST")
        })
        .unwrap_or_else(|| panic!("the write's span in {:#?}", names(&spans)));
    assert!(attr(post, "http.request.body.size").is_some_and(|n| n.parse::<u64>().unwrap() > 0));

    // Arcane was sent the trace context of each request's own span.
    let log = sim.requests().await;
    let sent = log
        .iter()
        .find(|r| {
            r["method"] == "GET"
                && r["path"].as_str().is_some_and(|p| {
                    p.starts_with("/api/environments/") && p.contains("/containers/")
                })
        })
        .unwrap_or_else(|| panic!("the read in the simulator's log: {log:#?}"));
    assert_eq!(
        sent["headers"]["traceparent"].as_str(),
        Some(format!("00-{TRACE}-{}-01", hex(&get.span_id)).as_str()),
        "{sent:#}"
    );
    assert_eq!(sent["headers"]["tracestate"], "vendor=otel-test");

    // Only this project's spans, and nothing a caller sent or the server holds.
    {
        let received = collector.got.lock().unwrap();
        for span in &received.spans {
            assert!(
                span.name.starts_with("tools/call")
                    || span.name.starts_with("initialize")
                    || span.name.starts_with("notifications")
                    || span.name.contains(" /api/")
                    || ["resolve environmentId", "render", "search"].contains(&span.name.as_str())
                    || span.name.starts_with("wait for a"),
                "a span that is not ours: {}",
                span.name
            );
        }
        let everything: Vec<String> = received
            .spans
            .iter()
            .flat_map(|s| {
                s.attributes
                    .iter()
                    .map(|a| format!("{}={}", a.key, shown(&a.value)))
                    .chain([s.name.clone()])
                    .chain(s.events.iter().map(|e| e.name.clone()))
            })
            .chain(
                received
                    .resource
                    .iter()
                    .map(|a| format!("{}={}", a.key, shown(&a.value))),
            )
            .collect();
        for secret in [
            KEY,
            TOKEN_ARG,
            "staging-agent",
            "worker-1",
            "otel-1",
            "nginx:1.27-alpine",
        ] {
            let hits: Vec<&String> = everything.iter().filter(|a| a.contains(secret)).collect();
            assert!(hits.is_empty(), "{secret} in the export: {hits:?}");
        }
        assert!(
            received
                .resource
                .iter()
                .any(|a| a.key == "service.name" && shown(&a.value) == "arcane-mcp-under-test")
        );
    }

    // And the metrics, from the same counters as /metrics: both calls, in the counter and in
    // the latency histogram, and the gauge of calls in flight.
    collector
        .until(|r| {
            let last = |name: &str| r.metrics.iter().rev().find(|m| m.name == name);
            let calls = last("arcane_mcp.tool.calls").and_then(|m| match &m.data {
                Some(metric::Data::Sum(sum)) => sum
                    .data_points
                    .iter()
                    .find(|p| {
                        p.attributes
                            .iter()
                            .any(|a| a.key == "arcane.outcome" && shown(&a.value) == "ok")
                    })
                    .and_then(|p| match p.value {
                        Some(number_data_point::Value::AsInt(n)) => Some(n),
                        _ => None,
                    }),
                _ => None,
            });
            let timed = last("mcp.server.operation.duration").and_then(|m| match &m.data {
                Some(metric::Data::Histogram(h)) => {
                    Some(h.data_points.iter().map(|p| p.count).sum::<u64>())
                }
                _ => None,
            });
            let gauge = last("arcane_mcp.tool.calls_in_flight").is_some();
            (calls == Some(2) && timed == Some(2) && gauge).then_some(())
        })
        .await;
    client.cancel().await.unwrap();
}

/// A collector that accepts connections, reads what is sent, and never answers; its
/// `pending` counts the exports it holds unanswered (until the exporter gives up and closes).
async fn silent_collector() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let pending = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let held = pending.clone();
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((mut conn, _)) = listener.accept().await {
            let held = held.clone();
            open.push(tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut counted = false;
                // Read forever; answer nothing.
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut conn, &mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if !counted && buf[..n].starts_with(b"POST") {
                        counted = true;
                        held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
                if counted {
                    held.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                }
            }));
        }
    });
    (base, pending)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_or_is_not_there_holds_no_call_up() {
    let mut cfg = arcane_sim::SimConfig::new(spec_path());
    cfg.api_key = KEY.to_string();
    arcane_engine::ensure_crypto_provider();
    let sim = Sim {
        sim: arcane_sim::start(cfg).await.unwrap(),
        http: reqwest::Client::new(),
    };
    let (silent, pending) = silent_collector().await;
    // The exporter waits a minute for each answer: far longer than the calls below take.
    let client = serve(&sim, &silent, &[("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")]).await;
    let list = |parent: &'static str| {
        let client = &client;
        async move { traced_call(client, "container.list", json!({}), parent).await }
    };
    let first = list(CLIENT_SPAN).await;
    assert_ne!(first.is_error, Some(true), "{}", text(&first));
    // The exporter has sent that call's spans and waits for an answer that never comes …
    guarded(async {
        while pending.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    // … while further calls are answered as ever.
    for _ in 0..5 {
        let r = list(CLIENT_SPAN).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
    }
    assert!(
        pending.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "the calls were answered while an export was held unanswered"
    );
    client.cancel().await.unwrap();

    // No collector at all: a closed port.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let client = serve(&sim, &closed, &[]).await;
    for _ in 0..3 {
        let r = traced_call(&client, "container.list", json!({}), CLIENT_SPAN).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
    }
    client.cancel().await.unwrap();
}

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn names(spans: &[Span]) -> Vec<(String, String, String)> {
    spans
        .iter()
        .map(|s| (s.name.clone(), hex(&s.span_id), hex(&s.parent_span_id)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_span_names_the_transport_and_only_a_hash_of_the_session() {
    let sim = Sim::start().await;
    let collector = Collector::start().await;
    const TOKEN: &str = "otel-http-token-3b9d";
    let server = crate::process_support::HttpServer::start(
        &sim.base(),
        Some(sim.sim.api_key()),
        &["--otel-endpoint", &collector.base],
        &[
            ("ARCANE_MCP_AUTH_TOKEN", TOKEN),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let client = crate::process_support::http_client(&server.base, TOKEN, &[]).await;
    let r = traced_call(&client, "container.list", json!({}), CLIENT_SPAN).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let trace = hex_decode(TRACE);
    let call = collector
        .until(|r| {
            r.spans
                .iter()
                .find(|s| s.trace_id == trace && s.name.starts_with("tools/call"))
                .cloned()
        })
        .await;
    assert_eq!(attr(&call, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(
        attr(&call, "network.protocol.name").as_deref(),
        Some("http")
    );
    let session = attr(&call, "mcp.session.id").expect("the session's hash");
    // The session's SHA-256, cut: rmcp's session IDs are longer, and never hex of 16.
    assert_eq!(session.len(), 16, "{session}");
    assert!(session.chars().all(|c| c.is_ascii_hexdigit()), "{session}");
    let everything: Vec<String> = collector
        .got
        .lock()
        .unwrap()
        .spans
        .iter()
        .flat_map(|s| s.attributes.iter().map(|a| shown(&a.value)))
        .collect();
    assert!(
        everything.iter().all(|v| !v.contains(TOKEN)),
        "the bearer token in {everything:?}"
    );
    client.cancel().await.unwrap();
    server.stop().await;
}
