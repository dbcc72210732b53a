//! The trace spans of the engine's work (docs/observability.md): each request to Arcane
//! (OpenTelemetry's HTTP client conventions: the method, the route template — never the filled
//! path, whose segments are names and IDs —, the status and the body sizes), each name lookup,
//! each wait for a request slot; and the W3C `traceparent` each request carries, so that
//! whatever traces Arcane's side (a proxy, Arcane itself) joins the call's trace.
//!
//! The spans are `tracing` spans: the server's OpenTelemetry layer exports them when
//! `--otel-endpoint` is set. Without it no layer records them, so each is disabled at its call
//! site — its fields are not even computed — and no header is added.

use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one request to Arcane, named `{method} {url.template}` as the HTTP client
/// conventions name it: `GET /api/environments/{id}/containers`. `template` is the action's
/// path as the catalog has it (placeholders, not values).
pub(crate) fn request(method: &str, template: &str) -> Span {
    tracing::info_span!(
        target: "arcane_engine::trace",
        "arcane.request",
        "otel.name" = %format!("{method} /api{template}"),
        "otel.kind" = "client",
        "http.request.method" = method,
        "url.template" = %format!("/api{template}"),
        "http.response.status_code" = Empty,
        "http.request.body.size" = Empty,
        "http.response.body.size" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
    )
}

/// Records the answer's status on a request span; a status of 400 and more is its
/// `error.type`, as the HTTP conventions say.
pub(crate) fn status(span: &Span, status: u16) {
    span.record("http.response.status_code", status as i64);
    if status >= 400 {
        span.record("error.type", status.to_string().as_str());
        span.record("otel.status_code", "error");
    }
}

/// Records a failure without an answer (or with one that could not be used) on a span.
pub(crate) fn failed(span: &Span, kind: &'static str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}

/// The span of one name lookup: the list action it reads and the parameter it fills, never
/// the value looked up.
pub(crate) fn lookup(list: &str, param: &str) -> Span {
    tracing::info_span!(
        target: "arcane_engine::trace",
        "arcane.resolve",
        "otel.name" = %format!("resolve {param}"),
        "arcane.resolve.list" = list,
        "arcane.resolve.param" = param,
        "arcane.resolve.cached" = Empty,
    )
}

/// The span of a wait for one of the `--max-concurrent-requests` slots; only made when the
/// slots are all taken.
pub(crate) fn slot_wait() -> Span {
    tracing::info_span!(
        target: "arcane_engine::trace",
        "arcane.slot.wait",
        "otel.name" = "wait for a request slot",
    )
}

/// The `traceparent` (and `tracestate`) of `span`, to send with its request, when the span is
/// recorded and a propagator is installed (the server installs W3C Trace Context's with its
/// exporter).
pub(crate) fn context_headers(span: &Span) -> Vec<(String, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let cx = span.context();
    let mut headers = Headers(Vec::new());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut headers));
    headers.0
}

struct Headers(Vec<(String, String)>);

impl opentelemetry::propagation::Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_string(), value));
    }
}
