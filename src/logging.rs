//! Logging: `tracing` to stderr (stdout is the MCP protocol), text or JSON lines.
//!
//! Whatever filter the operator sets (`ARCANE_MCP_LOG`), the dependencies' own loggers are
//! capped by a fixed filter layered on top of it: at debug and trace the MCP SDK logs every
//! message it reads and writes (tool arguments, results, `.env` contents), and the HTTP and
//! WebSocket stacks log request headers (the API key). Only the events of this crate and of
//! the workspace's own library crates (`arcane_catalog`, `arcane_markdown`, `arcane_engine`)
//! pass below `warn`, and they never log argument values, result bodies or credentials
//! (`docs/logging.md`).

use std::io::IsTerminal;

use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, FilterExt, LevelFilter, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use clap::ValueEnum;

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines (colours only when stderr is a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The most each logger may emit, whatever the operator's filter says.
pub fn dependency_caps() -> Targets {
    Targets::new()
        .with_default(LevelFilter::WARN)
        .with_target("arcane_mcp", LevelFilter::TRACE)
        // The workspace's own crates, split out of this one (ARCHITECTURE.md, "Crates").
        .with_target("arcane_catalog", LevelFilter::TRACE)
        .with_target("arcane_markdown", LevelFilter::TRACE)
        .with_target("arcane_engine", LevelFilter::TRACE)
        // The SDK's warnings quote rejected requests and error data (serde errors echo
        // argument values); its errors are transport failures.
        .with_target("rmcp", LevelFilter::ERROR)
}

/// Installs the global subscriber: the operator's filter, capped by [`dependency_caps`];
/// colours only when stderr is a terminal. An invalid filter falls back to `info`, with a
/// warning naming it.
///
/// `otel` is the OpenTelemetry layer when traces are exported (`crate::telemetry`): it sees
/// this project's spans, which the log lines leave out.
pub fn init(filter: &str, format: LogFormat, otel: Option<crate::telemetry::OtelLayer>) {
    let (user, invalid) = match EnvFilter::try_new(filter) {
        Ok(f) => (f, None),
        Err(e) => (EnvFilter::new("info"), Some(e)),
    };
    let ansi = std::io::stderr().is_terminal();
    let _ = subscriber(user, format, std::io::stderr, ansi, otel).try_init();
    if let Some(e) = invalid {
        tracing::warn!("ARCANE_MCP_LOG {filter:?} is not a valid log filter ({e}); using info");
    }
}

/// The subscriber [`init`] installs, writing to `writer`.
fn subscriber<W>(
    user: EnvFilter,
    format: LogFormat,
    writer: W,
    ansi: bool,
    otel: Option<crate::telemetry::OtelLayer>,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let writer = Masked(writer);
    let layer = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_target(false)
            .with_ansi(ansi)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .with_ansi(false)
            .with_current_span(false)
            .with_span_list(false)
            .boxed(),
    };
    // Spans are for the trace exporter: a log line stays the event alone, as it always was.
    let events = filter_fn(|meta| !meta.is_span());
    tracing_subscriber::registry()
        .with(otel)
        .with(layer.with_filter(user.and(dependency_caps()).and(events)))
}

/// Log lines with the held credentials masked (`arcane_redact::mask_known`): whatever a
/// message or a field quotes (an upstream error echoing the key), the configured key, the
/// bearer tokens and the callers' keys are never written. The formatter writes each event
/// in one piece, so a value is never split between two writes.
struct Masked<M>(M);

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for Masked<M>
{
    type Writer = MaskedWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        MaskedWriter(self.0.make_writer())
    }
}

struct MaskedWriter<W>(W);

impl<W: std::io::Write> std::io::Write for MaskedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        match arcane_redact::mask_known(&text) {
            std::borrow::Cow::Owned(masked) => self.0.write_all(masked.as_bytes())?,
            std::borrow::Cow::Borrowed(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// A URL as it may appear in logs: the password of `user:password@` masked, the query and
/// fragment (which may carry tokens) dropped.
pub fn masked_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.set_query(None);
            u.set_fragment(None);
            u.as_str().trim_end_matches('/').to_string()
        }
        // Not a URL (the settings reject those before anything is logged): show nothing of it.
        Err(_) => "(not a URL)".to_string(),
    }
}

/// `text` with the password of `url` (as written and percent-decoded) masked, for logging an
/// error whose message quotes the URL (HTTP client errors do).
pub fn without_url_password(text: &str, url: &str) -> String {
    let Some(password) = url::Url::parse(url)
        .ok()
        .and_then(|u| u.password().map(str::to_string))
        .filter(|p| !p.is_empty())
    else {
        return text.to_string();
    };
    let decoded = percent_encoding::percent_decode_str(&password)
        .decode_utf8_lossy()
        .into_owned();
    text.replace(&password, "***").replace(&decoded, "***")
}

/// A WARN line for a refusal a client can repeat at will (a wrong token, a foreign Host, a
/// connection beyond a cap): at most one per 10 s from each call site, with `not_logged`
/// counting the ones left out since. A flood of requests must not become a flood of log lines —
/// nor block the server on a log pipe nobody drains.
macro_rules! warn_throttled {
    ($($arg:tt)+) => {{
        static LOGGED: $crate::logging::Throttle =
            $crate::logging::Throttle::new(std::time::Duration::from_secs(10));
        if let Some(not_logged) = LOGGED.due() {
            tracing::warn!(not_logged, $($arg)+);
        }
    }};
}
pub(crate) use warn_throttled;

/// At most one log line per `every` for a refusal a client can repeat at will (a connection
/// beyond a cap), with the count of the ones not logged since: a flood of connections must not
/// become a flood of log lines.
pub struct Throttle {
    every: std::time::Duration,
    state: std::sync::Mutex<(Option<std::time::Instant>, u64)>,
}

impl Throttle {
    pub const fn new(every: std::time::Duration) -> Throttle {
        Throttle {
            every,
            state: std::sync::Mutex::new((None, 0)),
        }
    }

    /// `Some(n)` when a line is due now, `n` being the refusals not logged before it.
    pub fn due(&self) -> Option<u64> {
        let now = std::time::Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.0 {
            Some(at) if now.duration_since(at) < self.every => {
                state.1 += 1;
                None
            }
            _ => {
                let skipped = state.1;
                *state = (Some(now), 0);
                Some(skipped)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_logs_the_first_and_counts_the_rest() {
        let t = Throttle::new(std::time::Duration::from_secs(3600));
        assert_eq!(t.due(), Some(0));
        assert_eq!(t.due(), None);
        assert_eq!(t.due(), None);
        let t = Throttle::new(std::time::Duration::ZERO);
        assert_eq!(t.due(), Some(0));
        assert_eq!(t.due(), Some(0));
    }

    #[test]
    fn url_passwords_and_queries_are_masked() {
        assert_eq!(
            masked_url("https://admin:hunter2@arcane.example.com:8443/base?token=abc#x"),
            "https://admin:***@arcane.example.com:8443/base"
        );
        assert_eq!(masked_url("http://127.0.0.1:3552"), "http://127.0.0.1:3552");
        assert_eq!(masked_url("not a url user:hunter2@host"), "(not a URL)");
        assert_eq!(
            without_url_password(
                "error sending request for url (https://u:p%40ss@h/api/openapi.json): p@ss",
                "https://u:p%40ss@h"
            ),
            "error sending request for url (https://u:***@h/api/openapi.json): ***"
        );
        assert_eq!(without_url_password("no secret", "https://h"), "no secret");
    }

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn written(filter: &str, format: LogFormat, emit: impl FnOnce()) -> String {
        let buf = Buf::default();
        let out = buf.clone();
        let sub = subscriber(
            EnvFilter::new(filter),
            format,
            move || out.clone(),
            false,
            None,
        );
        tracing::subscriber::with_default(sub, emit);
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn capped_events_are_not_written_whatever_the_filter() {
        let text = written("trace", LogFormat::Text, || {
            tracing::trace!(target: "arcane_engine::executor", "ours-trace");
            tracing::info!(target: "arcane_sim", "sim-info");
            tracing::debug!(target: "rmcp::service", "rmcp-debug");
            tracing::warn!(target: "rmcp::service", "rmcp-warn");
            tracing::error!(target: "rmcp::service", "rmcp-error");
            tracing::trace!(target: "tungstenite::handshake", "ws-trace");
            tracing::warn!(target: "hyper", "hyper-warn");
        });
        for shown in ["ours-trace", "rmcp-error", "hyper-warn"] {
            assert!(text.contains(shown), "{shown} in {text}");
        }
        for hidden in ["sim-info", "rmcp-debug", "rmcp-warn", "ws-trace"] {
            assert!(!text.contains(hidden), "{hidden} in {text}");
        }
        assert!(!text.contains('\x1b'), "no colour codes: {text:?}");
        // The operator's filter still narrows.
        let text = written("warn", LogFormat::Text, || {
            tracing::info!(target: "arcane_mcp", "ours-info");
        });
        assert!(text.is_empty(), "{text}");
    }

    #[test]
    fn held_credentials_are_never_written() {
        let key = "log-held-Kq72-credential";
        let _held = arcane_redact::hold_secret(key);
        for format in [LogFormat::Text, LogFormat::Json] {
            let text = written("info", format, || {
                tracing::warn!(target: "arcane_mcp", error = %format!("401: bad key {key}"), "upstream said {key:?}");
            });
            assert!(text.contains("upstream said"), "{text}");
            assert!(!text.contains(key), "{text}");
            assert!(text.contains(arcane_redact::MASK), "{text}");
        }
    }

    #[test]
    fn json_lines_are_json() {
        let text = written("info", LogFormat::Json, || {
            tracing::info!(target: "arcane_mcp", actions = 3, "ready");
        });
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["fields"]["actions"], 3);
        assert_eq!(v["fields"]["message"], "ready");
    }

    #[test]
    fn dependencies_are_capped_and_this_crate_is_not() {
        use tracing::Level;
        let caps = dependency_caps();
        assert!(caps.would_enable("arcane_mcp::mcp::handler", &Level::TRACE));
        assert!(caps.would_enable("arcane_engine::executor", &Level::TRACE));
        assert!(caps.would_enable("arcane_catalog::build", &Level::TRACE));
        assert!(caps.would_enable("arcane_markdown", &Level::TRACE));
        assert!(!caps.would_enable("rmcp::service", &Level::WARN));
        assert!(caps.would_enable("rmcp::service", &Level::ERROR));
        for dep in [
            "tungstenite::handshake::client",
            "tokio_tungstenite",
            "reqwest::connect",
            "hyper_util::client",
            "h2::codec",
            "rustls::client",
            "arcane_sim::server",
        ] {
            assert!(!caps.would_enable(dep, &Level::DEBUG), "{dep} at debug");
            assert!(caps.would_enable(dep, &Level::WARN), "{dep} at warn");
        }
    }
}
