//! WebSocket handlers: container/project/service logs, container and host stats, and running one
//! command through a container's terminal (docs/handlers.md, docs/arcane-wire.md#websockets).
//!
//! Each function connects, collects a bounded amount, closes politely and returns what it got.
//! None of them can hang: every wait is bounded by the caller's time cap, and every failure
//! becomes a [`HandlerError`] whose text ends with a next step. Header values (the API key) are
//! never put into an error or a log line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use crate::render::escape::{excerpt, sanitize};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long the polite close may take before the socket is simply dropped.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Where to connect: a WebSocket endpoint of Arcane and the credentials to present.
#[derive(Clone)]
pub struct WsTarget {
    /// Full `ws://` or `wss://` URL of the endpoint (see [`ws_url`]). The handlers append their
    /// own query parameters (`tail`, `interval`, `shell`…) to whatever query it already has.
    pub url: String,
    /// Request headers of the upgrade, e.g. `("X-API-Key", key)` or
    /// `("Authorization", "Bearer …")`. Never logged, never quoted in errors.
    pub headers: Vec<(String, String)>,
    /// TLS settings for `wss://` (build it from the same CA / skip-verify settings as the HTTP
    /// client). `None` with `wss://` trusts no certificate at all, so pass one for TLS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Largest WebSocket message (and frame) accepted, and most log text collected in one
    /// read: the server's `--max-response-bytes`. A larger message ends the read with an error.
    pub max_message_bytes: usize,
}

impl std::fmt::Debug for WsTarget {
    // Hand-written so that the credentials never reach a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("WsTarget")
            .field("url", &self.url)
            .field("headers", &names)
            .field("tls", &self.tls.is_some())
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

/// Builds the WebSocket URL of an Arcane endpoint: `http(s)://host[/prefix]` (Arcane's base URL,
/// without `/api`) + `/api` + `api_path` (already filled in and percent-encoded, e.g.
/// `/environments/0/ws/containers/web-1/logs`), with the scheme switched to `ws(s)`.
pub fn ws_url(arcane_url: &str, api_path: &str) -> Result<String, HandlerError> {
    let mut url = url::Url::parse(arcane_url.trim_end_matches('/')).map_err(|e| {
        HandlerError::InvalidTarget(format!(
            "the Arcane URL {arcane_url:?} is not a valid URL ({e}); set ARCANE_URL to e.g. https://arcane.example.com"
        ))
    })?;
    let scheme = match url.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        other => {
            return Err(HandlerError::InvalidTarget(format!(
                "the Arcane URL has scheme {other:?}; use http:// or https://"
            )));
        }
    };
    // `set_scheme` refuses some special→special changes; rebuilding the string is simpler.
    let rest = &url.as_str()[url.scheme().len()..];
    let base = format!("{scheme}{rest}");
    url = url::Url::parse(base.trim_end_matches('/'))
        .map_err(|e| HandlerError::InvalidTarget(format!("cannot build the WebSocket URL: {e}")))?;
    let path = format!(
        "{}/api/{}",
        url.path().trim_end_matches('/'),
        api_path.trim_start_matches('/')
    );
    url.set_path(&path);
    Ok(url.into())
}

/// A failure of a WebSocket handler. `Display` gives the whole message, next step included.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The target URL or a header is unusable.
    #[error("{0}")]
    InvalidTarget(String),
    /// No connection: refused, DNS, TLS. Holds the URL and the cause.
    #[error(
        "could not connect to {url}: {cause}. Check that ARCANE_URL points at a running Arcane and that its certificate is trusted."
    )]
    Connect { url: String, cause: String },
    /// Arcane answered the upgrade with an HTTP error.
    #[error("{}", rejected_text(*.status, .detail))]
    Rejected { status: u16, detail: String },
    /// Arcane reported an error on the socket (an error frame). Holds Arcane's text.
    #[error("Arcane reported: {0}")]
    Arcane(String),
    /// The connection broke before anything useful arrived.
    #[error(
        "the connection to Arcane was lost: {0}. Retry; if it keeps failing, check Arcane's health (system.health) and any proxy in between."
    )]
    Dropped(String),
    /// Nothing arrived within the time cap.
    #[error("{0}")]
    Timeout(String),
}

fn rejected_text(status: u16, detail: &str) -> String {
    let hint = match status {
        401 => "Check the API key (ARCANE_API_KEY) or token the server uses.",
        403 => {
            "The API key's role lacks the permission named above; ask an Arcane admin to grant it."
        }
        404 => {
            "Check the ID with the matching list action (container.list, project.list, swarm_service.list) and the environmentId."
        }
        429 => "Too many connections to this endpoint; wait a few seconds and retry.",
        500..=599 => "Arcane or its Docker daemon/agent failed; check environment.test and retry.",
        _ => "Check the parameters and retry.",
    };
    let detail = if detail.is_empty() {
        "no details".to_string()
    } else {
        detail.to_string()
    };
    format!("Arcane refused the WebSocket connection with HTTP {status}: {detail}. {hint}")
}

fn with_query(url: &str, query: &[(&str, String)]) -> Result<url::Url, HandlerError> {
    let mut u = url::Url::parse(url).map_err(|e| {
        HandlerError::InvalidTarget(format!(
            "the WebSocket URL {url:?} is not valid ({e}); build it with ws_url"
        ))
    })?;
    if !matches!(u.scheme(), "ws" | "wss") {
        return Err(HandlerError::InvalidTarget(format!(
            "the WebSocket URL must start with ws:// or wss://, not {}://; build it with ws_url",
            u.scheme()
        )));
    }
    if !query.is_empty() {
        // Our parameters replace any of the same name already in the URL.
        let kept: Vec<(String, String)> = u
            .query_pairs()
            .filter(|(k, _)| !query.iter().any(|(q, _)| q == k))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let mut pairs = u.query_pairs_mut();
        pairs.clear();
        for (k, v) in &kept {
            pairs.append_pair(k, v);
        }
        for (k, v) in query {
            pairs.append_pair(k, v);
        }
    }
    Ok(u)
}

async fn connect(
    target: &WsTarget,
    query: &[(&str, String)],
    budget: Duration,
) -> Result<Ws, HandlerError> {
    crate::http::ensure_crypto_provider();
    let url = with_query(&target.url, query)?;
    let shown = {
        // The URL shown in errors: without query (it carries no secrets, but keep it short).
        let mut u = url.clone();
        u.set_query(None);
        u.to_string()
    };
    let mut req = url.as_str().into_client_request().map_err(|e| {
        HandlerError::InvalidTarget(format!("cannot build the WebSocket request: {e}"))
    })?;
    for (name, value) in &target.headers {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HandlerError::InvalidTarget(format!("invalid header name {name:?}")))?;
        // The value is a secret: say which header is bad, never what it holds.
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            HandlerError::InvalidTarget(format!(
                "the value of header {name} contains characters not allowed in HTTP headers; check the credential"
            ))
        })?;
        v.set_sensitive(true);
        req.headers_mut().insert(n, v);
    }
    let connector = target.tls.clone().map(Connector::Rustls);
    // Messages and frames are capped while reading, so that no upstream can make this process
    // hold more than the cap for one message.
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(target.max_message_bytes))
        .max_frame_size(Some(target.max_message_bytes));
    let fut = tokio_tungstenite::connect_async_tls_with_config(req, Some(config), false, connector);
    match tokio::time::timeout(budget, fut).await {
        Err(_) => Err(HandlerError::Timeout(format!(
            "no WebSocket connection to {shown} within {}; check that Arcane is reachable and retry with a larger timeoutSeconds",
            secs(budget)
        ))),
        Ok(Ok((ws, _resp))) => Ok(ws),
        Ok(Err(e)) => Err(map_connect_error(e, &shown)),
    }
}

fn map_connect_error(e: tungstenite::Error, url: &str) -> HandlerError {
    match e {
        // A redirect is never followed (tungstenite does not; neither do we): the credential
        // stays with the configured origin.
        tungstenite::Error::Http(resp) if resp.status().is_redirection() => {
            let location = resp.headers().get("location").map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .chars()
                    .take(300)
                    .collect::<String>()
            });
            HandlerError::InvalidTarget(crate::http::redirect_text(
                resp.status().as_u16(),
                location.as_deref(),
                false,
            ))
        }
        tungstenite::Error::Http(resp) => HandlerError::Rejected {
            status: resp.status().as_u16(),
            detail: resp
                .body()
                .as_deref()
                .map(|body| {
                    let content_type = resp
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    super::errors::error_detail(resp.status().as_u16(), content_type, body).shown()
                })
                .unwrap_or_default(),
        },
        tungstenite::Error::Io(io) if crate::http::local_resource_error(&io).is_some() => {
            HandlerError::InvalidTarget(format!(
                "could not open a connection to {url}: this machine ran out of a local resource ({}). It is not a problem of Arcane or ARCANE_URL: lower --max-concurrent-requests or raise the open-file limit (ulimit -n), then retry",
                crate::http::local_resource_error(&io).unwrap_or_default()
            ))
        }
        tungstenite::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            ) =>
        {
            HandlerError::Dropped(format!(
                "{url} closed the connection before answering the WebSocket upgrade ({io})"
            ))
        }
        tungstenite::Error::Protocol(p) => HandlerError::Dropped(format!(
            "{url} did not complete the WebSocket upgrade ({p})"
        )),
        tungstenite::Error::Url(u) => {
            HandlerError::InvalidTarget(format!("the WebSocket URL {url} is not usable: {u}"))
        }
        other => HandlerError::Connect {
            url: url.to_string(),
            cause: other.to_string(),
        },
    }
}

/// Sends a close frame and waits briefly for the peer's; never blocks longer than
/// [`CLOSE_GRACE`]. Arcane leaves finished log sockets open, so this is how they end.
async fn close_politely(ws: &mut Ws) {
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        if ws.close(None).await.is_ok() {
            while let Some(Ok(_)) = ws.next().await {}
        }
    })
    .await;
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

// ---------------------------------------------------------------------------------------------
// Logs

/// Bounds of a log read.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// Number of lines from the end (`tail`).
    pub tail: u32,
    /// Only lines after this time (RFC 3339 or Unix seconds), passed through to Arcane.
    pub since: Option<String>,
    /// Ask Arcane to prefix each line with its timestamp.
    pub timestamps: bool,
    /// Stop after this many lines.
    pub max_lines: usize,
    /// End of the logs: this long without a frame once frames have arrived. Arcane does not
    /// close a finished log socket (docs/arcane-wire.md#websockets), so silence is the only end signal.
    pub idle: Duration,
    /// "No log lines": this long without any frame after connecting.
    pub first_frame: Duration,
    /// Overall time cap (connect included).
    pub timeout: Duration,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            tail: 100,
            since: None,
            timestamps: false,
            max_lines: 500,
            idle: Duration::from_millis(700),
            first_frame: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
        }
    }
}

/// What a log read collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOutput {
    /// The lines, terminal escapes and control characters removed (stderr lines of containers
    /// and services carry Arcane's `[STDERR] ` prefix).
    pub lines: Vec<String>,
    /// Why the read stopped before the logs ended (line cap, time cap, connection lost), if so.
    pub truncated: Option<String>,
}

/// Arcane's log error frame (docs/arcane-wire.md#websockets): `Failed to stream container logs: …` (also `service`
/// and `project` logs). Only the first frame is checked: Arcane sends it alone.
fn is_log_error_frame(text: &str) -> bool {
    text.starts_with("Failed to stream ") && text.contains(" logs")
}

/// Splits a frame into sanitized lines (a lone CR becomes a line break; CRLF and trailing
/// line breaks do not produce empty lines).
fn frame_lines(text: &str) -> Vec<String> {
    let clean = sanitize(text);
    let trimmed = clean.trim_end_matches(['\n', '\r']);
    if trimmed.is_empty() {
        return vec![String::new()];
    }
    trimmed
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// Reads the recent logs of a container, project or swarm service (`target` is the
/// `…/logs` endpoint). Connects with `follow=false&tail=N&timestamps=…&since=…&format=text`,
/// ends at idle time, the line cap or the time cap, and closes the socket.
///
/// Errors: Arcane's error frame (e.g. no such container) → [`HandlerError::Arcane`];
/// connect/upgrade failures as described on [`HandlerError`].
pub async fn collect_logs(target: &WsTarget, opts: &LogOptions) -> Result<LogOutput, HandlerError> {
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let mut query = vec![
        ("follow", "false".to_string()),
        ("tail", opts.tail.to_string()),
        ("timestamps", opts.timestamps.to_string()),
        ("format", "text".to_string()),
    ];
    if let Some(s) = opts.since.as_deref().filter(|s| !s.is_empty()) {
        query.push(("since", s.to_string()));
    }
    let mut ws = connect(target, &query, opts.timeout).await?;
    let mut lines: Vec<String> = Vec::new();
    let mut frames = 0usize;
    let mut bytes = 0usize;
    let mut truncated = None;
    'read: loop {
        let left = remaining(deadline);
        if left.is_zero() {
            truncated = Some(format!(
                "stopped at the time limit of {}; raise timeoutSeconds or lower tail to read the rest",
                secs(opts.timeout)
            ));
            break;
        }
        let wait = if frames == 0 {
            opts.first_frame
        } else {
            opts.idle
        };
        let idle_end = wait < left;
        match tokio::time::timeout(wait.min(left), ws.next()).await {
            Err(_) if idle_end => break, // quiet: the logs have ended
            Err(_) => continue,          // the time cap; reported at the top of the loop
            Ok(None) | Ok(Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Err(tungstenite::Error::Capacity(e)))) => {
                truncated = Some(format!(
                    "stopped after {} line(s): Arcane sent a message larger than the limit of {} ({e}); lower tail, or raise --max-response-bytes",
                    lines.len(),
                    crate::render::units::human_bytes(target.max_message_bytes as u64)
                ));
                break;
            }
            Ok(Some(Err(e))) => {
                if frames == 0 {
                    return Err(HandlerError::Dropped(e.to_string()));
                }
                truncated = Some(format!(
                    "the connection was lost after {} line(s) ({e}); retry to read the rest",
                    lines.len()
                ));
                break;
            }
            Ok(Some(Ok(msg))) => {
                let text = match msg {
                    Message::Text(t) => t.as_str().to_string(),
                    Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
                    _ => continue, // ping/pong: tungstenite answers pings itself
                };
                frames += 1;
                if frames == 1 && is_log_error_frame(&text) {
                    close_politely(&mut ws).await;
                    return Err(HandlerError::Arcane(format!(
                        "{}. Check the ID with the matching list action and that the environment's Docker is reachable (environment.test).",
                        excerpt(&text, 300)
                    )));
                }
                for line in frame_lines(&text) {
                    bytes += line.len() + 1;
                    if bytes > target.max_message_bytes {
                        truncated = Some(format!(
                            "stopped after {} of log text, the limit of --max-response-bytes; lower tail or maxLines, or use since, to see others",
                            crate::render::units::human_bytes(target.max_message_bytes as u64)
                        ));
                        break 'read;
                    }
                    if lines.len() >= opts.max_lines {
                        truncated = Some(format!(
                            "stopped at maxLines={}; raise maxLines or lower tail, or use since, to see others",
                            opts.max_lines
                        ));
                        break 'read;
                    }
                    lines.push(line);
                }
            }
        }
    }
    close_politely(&mut ws).await;
    Ok(LogOutput { lines, truncated })
}

// ---------------------------------------------------------------------------------------------
// Stats

/// Samples collected from a stats socket.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsOutput {
    /// One JSON value per frame, as Arcane sent it, minus the bulky `statsHistory`.
    pub samples: Vec<Value>,
    /// Why fewer samples than asked were returned, if so.
    pub truncated: Option<String>,
}

/// Samples a container's stats (`target` is `…/containers/{id}/stats`): `samples` frames, the
/// first frame's `statsHistory` dropped. An `{"error": …}` frame → [`HandlerError::Arcane`].
pub async fn sample_stats(
    target: &WsTarget,
    samples: usize,
    timeout: Duration,
) -> Result<StatsOutput, HandlerError> {
    sample_frames(target, &[], samples, timeout).await
}

/// Samples the host's stats (`target` is `…/system/stats`): `samples` frames, one every
/// `interval` (whole seconds, at least 1; the first frame is immediate).
pub async fn sample_system_stats(
    target: &WsTarget,
    samples: usize,
    interval: Duration,
    timeout: Duration,
) -> Result<StatsOutput, HandlerError> {
    let secs = interval.as_secs().max(1);
    sample_frames(target, &[("interval", secs.to_string())], samples, timeout).await
}

async fn sample_frames(
    target: &WsTarget,
    query: &[(&str, String)],
    samples: usize,
    timeout: Duration,
) -> Result<StatsOutput, HandlerError> {
    let samples = samples.max(1);
    let deadline = Instant::now() + timeout;
    let mut ws = connect(target, query, timeout).await?;
    let mut out = Vec::new();
    let mut truncated = None;
    while out.len() < samples {
        let left = remaining(deadline);
        let next = if left.is_zero() {
            Err(())
        } else {
            tokio::time::timeout(left, ws.next()).await.map_err(|_| ())
        };
        let msg = match next {
            Err(()) => {
                if out.is_empty() {
                    close_politely(&mut ws).await;
                    return Err(HandlerError::Timeout(format!(
                        "no stats sample within {}; check that the container is running (container.get) and retry",
                        secs(timeout)
                    )));
                }
                truncated = Some(format!(
                    "{} of {samples} sample(s): the time limit of {} was reached",
                    out.len(),
                    secs(timeout)
                ));
                break;
            }
            Ok(None) | Ok(Some(Ok(Message::Close(_)))) | Ok(Some(Err(_))) if out.is_empty() => {
                return Err(HandlerError::Dropped(
                    "the stats socket closed before the first sample".into(),
                ));
            }
            Ok(None) | Ok(Some(Ok(Message::Close(_)))) | Ok(Some(Err(_))) => {
                truncated = Some(format!(
                    "{} of {samples} sample(s): Arcane closed the socket",
                    out.len()
                ));
                break;
            }
            Ok(Some(Ok(m))) => m,
        };
        let text = match msg {
            Message::Text(t) => t.as_str().to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            _ => continue,
        };
        // A frame that is not JSON is not a sample; skip it rather than fail the whole read.
        let Ok(mut v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let err = err
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            close_politely(&mut ws).await;
            return Err(HandlerError::Arcane(format!(
                "{}. Check the container ID with container.list and that it is running.",
                excerpt(&err, 300)
            )));
        }
        if let Some(obj) = v.as_object_mut() {
            obj.remove("statsHistory");
        }
        out.push(v);
    }
    close_politely(&mut ws).await;
    Ok(StatsOutput {
        samples: out,
        truncated,
    })
}

// ---------------------------------------------------------------------------------------------
// Exec

/// Bounds of a command run through the terminal.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Shell to start (`?shell=`); Arcane's default is `/bin/sh`.
    pub shell: Option<String>,
    /// Overall time cap (connect included).
    pub timeout: Duration,
    /// Stop reading after this much raw output.
    pub max_bytes: usize,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            shell: None,
            timeout: Duration::from_secs(15),
            max_bytes: 65_536,
        }
    }
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// The command's output: echoed input, prompts and terminal escapes removed, CRLF → LF.
    pub output: String,
    /// The exit status, when the shell printed it (the marker was seen).
    pub exit_code: Option<i32>,
    /// Why the read stopped early or why the exit code is unknown, if so.
    pub truncated: Option<String>,
}

/// A per-call marker, so that command output cannot fake the exit line by accident.
fn nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
    let x = t ^ (u64::from(std::process::id()) << 32) ^ c.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{x:016x}")
}

/// The exit-status line sent after the command. The marker is assembled by `printf`, so the
/// echoed input (`__AMCP_%s_%s__`) never matches `__AMCP_<nonce>_<digits>__`.
pub(crate) fn sentinel_line(nonce: &str) -> String {
    format!("printf '\\n__AMCP_%s_%s__\\n' {nonce} \"$?\"")
}

/// Runs one command non-interactively through the container's terminal (`target` is
/// `…/containers/{id}/terminal`). Sends the command, a line printing a marker with `$?`, and
/// `exit`, then reads the raw binary output until the marker (→ exit code), the socket closes,
/// or the time/size caps hit. A time or size cap returns what arrived so far with a note; the
/// command may still be running in the container then.
///
/// Errors: Arcane's `Error creating exec: …` frame (container missing or not running) →
/// [`HandlerError::Arcane`]; connection failures as described on [`HandlerError`].
pub async fn run_exec(
    target: &WsTarget,
    command: &str,
    opts: &ExecOptions,
) -> Result<ExecOutput, HandlerError> {
    let command = command.trim_end_matches(['\n', '\r']);
    if command.trim().is_empty() {
        return Err(HandlerError::InvalidTarget(
            "the command is empty; pass the command line to run, e.g. \"ls -la /app\"".into(),
        ));
    }
    let deadline = Instant::now() + opts.timeout;
    let mut query = Vec::new();
    if let Some(shell) = opts.shell.as_deref().filter(|s| !s.is_empty()) {
        query.push(("shell", shell.to_string()));
    }
    let mut ws = connect(target, &query, opts.timeout).await?;
    let nonce = nonce();
    let marker = regex::bytes::Regex::new(&format!(r"__AMCP_{nonce}_(\d+)__"))
        .map_err(|e| HandlerError::InvalidTarget(format!("internal marker error: {e}")))?;
    let input = format!("{command}\n{}\nexit\n", sentinel_line(&nonce));
    if let Err(e) = ws.send(Message::Binary(input.into_bytes().into())).await {
        return Err(HandlerError::Dropped(format!(
            "could not send the command to the terminal ({e})"
        )));
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut exit_code = None;
    let mut end: Option<usize> = None;
    let mut truncated = None;
    loop {
        let left = remaining(deadline);
        let next = if left.is_zero() {
            None
        } else {
            tokio::time::timeout(left, ws.next()).await.ok()
        };
        let Some(next) = next else {
            truncated = Some(format!(
                "stopped at the time limit of {}; the command may still be running — raise timeoutSeconds",
                secs(opts.timeout)
            ));
            break;
        };
        let data: Vec<u8> = match next {
            None | Some(Ok(Message::Close(_))) => {
                truncated = Some("the terminal closed before the exit status was printed".into());
                break;
            }
            Some(Err(e)) => {
                if buf.is_empty() {
                    return Err(HandlerError::Dropped(format!(
                        "the terminal connection broke before any output ({e})"
                    )));
                }
                truncated = Some(format!("the terminal connection broke ({e})"));
                break;
            }
            Some(Ok(Message::Binary(b))) => b.to_vec(),
            Some(Ok(Message::Text(t))) => {
                if buf.is_empty() && t.as_str().starts_with("Error creating exec") {
                    close_politely(&mut ws).await;
                    return Err(HandlerError::Arcane(format!(
                        "{}. Check that the container exists and is running (container.get), and that the shell exists in its image.",
                        excerpt(t.as_str(), 300)
                    )));
                }
                t.as_str().as_bytes().to_vec()
            }
            Some(Ok(_)) => continue,
        };
        // Search only the new bytes plus an overlap long enough for a split marker.
        let from = buf.len().saturating_sub(64);
        buf.extend_from_slice(&data);
        if let Some(c) = marker.captures(&buf[from..]) {
            let whole = c.get(0).map(|m| m.start() + from).unwrap_or(buf.len());
            exit_code = c
                .get(1)
                .and_then(|d| std::str::from_utf8(d.as_bytes()).ok())
                .and_then(|d| d.parse::<i32>().ok());
            end = Some(whole);
            if whole > opts.max_bytes {
                end = Some(opts.max_bytes);
                truncated = Some(format!(
                    "output cut at maxBytes={}; narrow the command (e.g. | head) or raise maxBytes",
                    opts.max_bytes
                ));
            }
            break;
        }
        if buf.len() > opts.max_bytes {
            end = Some(opts.max_bytes);
            truncated = Some(format!(
                "output cut at maxBytes={}; the command may still be running — narrow it (e.g. | head) or raise maxBytes",
                opts.max_bytes
            ));
            break;
        }
    }
    close_politely(&mut ws).await;
    let raw = &buf[..end.unwrap_or(buf.len()).min(buf.len())];
    let output = clean_exec_output(raw, command, &nonce);
    Ok(ExecOutput {
        output,
        exit_code,
        truncated,
    })
}

/// Turns raw TTY output into the command's output: escapes stripped, CRLF → LF, the echoed
/// input lines (with or without a prompt before them; a TTY may echo typed-ahead lines twice),
/// lines carrying the marker nonce, and a trailing bare prompt removed.
pub(crate) fn clean_exec_output(raw: &[u8], command: &str, nonce: &str) -> String {
    let text = String::from_utf8_lossy(raw);
    let text = sanitize(&text);
    let sent: Vec<&str> = command
        .split('\n')
        .map(|l| l.trim_end_matches('\r').trim())
        .filter(|l| !l.is_empty())
        .chain(["exit"])
        .collect();
    let ends_unterminated = !text.ends_with('\n');
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    if ends_unterminated
        && let Some(last) = lines.last()
        && looks_like_prompt(last)
    {
        lines.pop();
    }
    let kept: Vec<&str> = lines
        .into_iter()
        .filter(|l| !l.contains(nonce) && !sent.iter().any(|s| is_echo(l, s)))
        .collect();
    let joined = kept.join("\n");
    joined.trim_matches('\n').to_string()
}

const PROMPT_ENDS: [char; 4] = ['#', '$', '>', '%'];

fn looks_like_prompt(l: &str) -> bool {
    let t = l.trim_end();
    !t.is_empty() && t.len() <= 128 && t.ends_with(PROMPT_ENDS)
}

/// `line` is the echo of `sent`: equal, or a prompt followed by it (`/ # ls`, `root@x:/# ls`).
fn is_echo(line: &str, sent: &str) -> bool {
    let l = line.trim();
    if l == sent {
        return true;
    }
    match l.strip_suffix(sent) {
        Some(prefix) => {
            let p = prefix.trim_end();
            prefix.len() > p.len() && looks_like_prompt(p)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_and_marker_lines_are_removed() {
        let raw = b"/ # ls /app\r\nbin\r\nlib\r\n/ # printf '\\n__AMCP_%s_%s__\\n' abc \"$?\"\r\n/ # exit\r\n";
        assert_eq!(clean_exec_output(raw, "ls /app", "abc"), "bin\nlib");
    }

    #[test]
    fn output_ending_like_the_command_is_kept() {
        // "tools" ends with "ls" but is not an echo.
        let raw = b"ls\r\ntools\r\n\x1b[1;31mred\x1b[0m\r\n/ # ";
        assert_eq!(clean_exec_output(raw, "ls", "n"), "tools\nred");
    }

    #[test]
    fn urls() {
        assert_eq!(
            ws_url("https://a.example.com/", "/environments/0/ws/system/stats").unwrap(),
            "wss://a.example.com/api/environments/0/ws/system/stats"
        );
        assert_eq!(
            ws_url("http://h:3552/arcane", "environments/0/ws/x").unwrap(),
            "ws://h:3552/arcane/api/environments/0/ws/x"
        );
        assert!(ws_url("ftp://x", "/y").is_err());
        let u = with_query("ws://h/p?tail=1&x=2", &[("tail", "5".into())]).unwrap();
        assert_eq!(u.query(), Some("x=2&tail=5"));
    }
}
