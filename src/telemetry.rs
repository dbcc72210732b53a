//! OpenTelemetry export (docs/observability.md): traces and metrics over OTLP/HTTP when an
//! endpoint is configured (`--otel-endpoint`, or the standard `OTEL_EXPORTER_OTLP_*`
//! variables); nothing at all otherwise — no exporter, no thread, and the spans of this crate
//! and the engine are disabled where they are made.
//!
//! Export never holds a call up: finished spans go into the SDK's batch queue (2048 spans,
//! further ones dropped while it is full) and metrics are read on a timer, each exported on
//! the SDK's own thread. A collector that is down or never answers costs that thread its
//! timeout, and the calls nothing.
//!
//! Only spans pass to the exporter, and only this project's: a library's spans (the HTTP
//! stacks, the MCP SDK) and every log event stay out, so neither a request header nor a line
//! that quotes one can reach a collector.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;

use crate::metrics::Metrics;

/// The instrumentation scope of every span and instrument.
const SCOPE: &str = "arcane-mcp";

/// The longest the process waits at exit for the last spans and metrics to leave: a collector
/// that does not answer does not hold the exit longer.
const SHUTDOWN: Duration = Duration::from_secs(3);

/// Where the traces and the metrics go, when anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Endpoints {
    /// The full URL of traces (`…/v1/traces`), or `None` to let the exporter read the
    /// standard variables.
    traces: Option<String>,
    metrics: Option<String>,
    /// Whether anything is exported at all.
    on: bool,
}

impl Endpoints {
    /// From `--otel-endpoint` (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` is: the signals
    /// go to `/v1/traces` and `/v1/metrics` under it) and the environment: off unless one of
    /// them names an endpoint; `OTEL_SDK_DISABLED=true` turns it off whatever is set.
    pub fn resolve(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Endpoints {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Endpoints::default();
        }
        if let Some(base) = flag.map(str::trim).filter(|f| !f.is_empty()) {
            let base = base.trim_end_matches('/');
            return Endpoints {
                traces: Some(format!("{base}/v1/traces")),
                metrics: Some(format!("{base}/v1/metrics")),
                on: true,
            };
        }
        let on = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ]
        .iter()
        .any(|v| set(v).is_some());
        Endpoints {
            traces: None,
            metrics: None,
            on,
        }
    }

    /// Whether anything is exported.
    pub fn is_on(&self) -> bool {
        self.on
    }
}

/// The running exporters; dropping it sends what is left (for at most [`SHUTDOWN`]).
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// The tracing layer that turns this project's spans into OpenTelemetry spans.
pub type OtelLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Starts the exporters when an endpoint is configured (`--otel-endpoint`, or the standard
/// variables): the providers, the W3C
/// Trace Context propagator (the `traceparent` read from `_meta` and sent to Arcane), and the
/// tracing layer for [`crate::logging::init`]. `None` when export is off. Needs no async
/// runtime: the SDK exports on threads of its own.
pub fn init(otel_endpoint: Option<&str>) -> Result<Option<(Telemetry, OtelLayer)>> {
    let endpoints = Endpoints::resolve(otel_endpoint, |name| std::env::var(name).ok());
    start(&endpoints)
}

/// [`init`] with the endpoints resolved.
pub fn start(endpoints: &Endpoints) -> Result<Option<(Telemetry, OtelLayer)>> {
    if !endpoints.is_on() {
        return Ok(None);
    }
    // The exporter's HTTP client is rustls without a provider of its own, as the engine's.
    arcane_engine::ensure_crypto_provider();
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| SCOPE.to_string());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();

    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(url) = &endpoints.traces {
        spans = spans.with_endpoint(url);
    }
    let spans = spans.build().context("the OTLP trace exporter")?;
    let traces = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();

    let mut measures = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(url) = &endpoints.metrics {
        measures = measures.with_endpoint(url);
    }
    let measures = measures.build().context("the OTLP metric exporter")?;
    let metrics = SdkMeterProvider::builder()
        .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(measures).build())
        .with_resource(resource)
        .build();

    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    opentelemetry::global::set_tracer_provider(traces.clone());
    opentelemetry::global::set_meter_provider(metrics.clone());

    let layer = tracing_opentelemetry::layer()
        .with_tracer(traces.tracer(SCOPE))
        .with_threads(false)
        .with_location(false)
        .with_level(false)
        .with_target(false)
        .with_filter(filter_fn(is_ours))
        .boxed();
    Ok(Some((Telemetry { traces, metrics }, layer)))
}

/// Spans of this crate and the engine; no event, no library's span.
fn is_ours(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span()
        && (meta.target().starts_with("arcane_mcp") || meta.target().starts_with("arcane_engine"))
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let (traces, metrics) = (self.traces.clone(), self.metrics.clone());
        let (done, wait) = std::sync::mpsc::channel();
        // The shutdown exports what is left; a collector that never answers would hold it
        // for the exporter's own timeout, so it runs aside and is waited for a bounded time.
        let _ = std::thread::Builder::new()
            .name("otel-shutdown".into())
            .spawn(move || {
                let _ = traces.shutdown_with_timeout(SHUTDOWN);
                let _ = metrics.shutdown();
                let _ = done.send(());
            });
        let _ = wait.recv_timeout(SHUTDOWN);
    }
}

/// Registers the process's metrics with the global meter (OpenTelemetry's no-op one when
/// export is off): the counters and gauges are read from `metrics` when the exporter
/// collects, so `/metrics` and OTLP show the same numbers; the latency histogram is fed by
/// [`Metrics::record_call`] itself.
pub fn observe(metrics: &Arc<Metrics>) {
    let meter = opentelemetry::global::meter(SCOPE);
    let m = metrics.clone();
    let calls = meter
        .u64_observable_counter("arcane_mcp.tool.calls")
        .with_description("Tool calls by tool and outcome.")
        .with_callback(move |o| {
            for ((tool, outcome), n) in m.calls() {
                o.observe(
                    n,
                    &[
                        KeyValue::new("gen_ai.tool.name", tool),
                        KeyValue::new("arcane.outcome", outcome),
                    ],
                );
            }
        })
        .build();
    let m = metrics.clone();
    let http = meter
        .u64_observable_counter("arcane_mcp.http.responses")
        .with_description("HTTP answers of the Streamable HTTP listener by status.")
        .with_callback(move |o| {
            for (status, n) in m.http_responses() {
                o.observe(
                    n,
                    &[KeyValue::new(
                        "http.response.status_code",
                        i64::from(status),
                    )],
                );
            }
        })
        .build();
    let m = metrics.clone();
    let in_flight = meter
        .u64_observable_gauge("arcane_mcp.tool.calls_in_flight")
        .with_description("Tool calls in flight, waiting for a slot included.")
        .with_callback(move |o| o.observe(m.in_flight(), &[]))
        .build();
    let m = metrics.clone();
    let reloads = meter
        .u64_observable_counter("arcane_mcp.catalog.reloads")
        .with_description("Catalog reloads by outcome (ok, failed).")
        .with_callback(move |o| {
            let (ok, failed) = m.reloads();
            o.observe(ok, &[KeyValue::new("arcane.outcome", "ok")]);
            o.observe(failed, &[KeyValue::new("arcane.outcome", "failed")]);
        })
        .build();
    let latency = meter
        .f64_histogram("mcp.server.operation.duration")
        .with_unit("s")
        .with_description("Time to answer a tools/call, as the MCP conventions name it.")
        .with_boundaries(crate::metrics::BUCKETS.to_vec())
        .build();
    metrics.export(crate::metrics::Exported {
        latency,
        _observers: vec![
            Box::new(calls),
            Box::new(http),
            Box::new(in_flight),
            Box::new(reloads),
        ],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert!(!Endpoints::resolve(None, env(&[])).is_on());
        assert!(!Endpoints::resolve(Some(" "), env(&[("OTEL_SERVICE_NAME", "x")])).is_on());
        let flag = Endpoints::resolve(Some("http://127.0.0.1:4318/"), env(&[]));
        assert_eq!(
            flag.traces.as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            flag.metrics.as_deref(),
            Some("http://127.0.0.1:4318/v1/metrics")
        );
        // The standard variables are read by the exporter itself.
        let std = Endpoints::resolve(
            None,
            env(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://c:4318/v1/traces",
            )]),
        );
        assert!(std.is_on());
        assert_eq!(std.traces, None);
        let disabled =
            Endpoints::resolve(Some("http://c:4318"), env(&[("OTEL_SDK_DISABLED", "TRUE")]));
        assert!(!disabled.is_on());
    }
}
