//! The generic executor (docs/surfaces.md#how-a-call-runs): one table-driven pipeline for every action.
//!
//! resolve → policy (read-only, exclusions) → validate (jsonschema, locally) → confirm →
//! safe-mode preview → HTTP request → result (§6) or error (§8). Every failure is an `isError`
//! tool result with a next step, never a protocol error.

pub mod encode;
pub mod errors;
pub mod finish;
pub mod handlers;
pub mod jsonlines;
pub mod path;
pub mod request;
pub mod resolve;
pub mod response;
pub mod transfer;
pub mod websocket;

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use crate::catalog::{Action, ResultKind};
use crate::http::root_cause;
use crate::policy::catalog_exclusion;
use crate::render::escape::{excerpt, quoted_name};
use crate::render::markdown::{RenderContext, render_value};
use crate::snapshot::Snapshot;
use crate::surface::call_name;

pub use request::Auth;

/// How long a JSON-lines stream (pull, build, up) may run, as a multiple of the request timeout.
const STREAM_TIMEOUT_FACTOR: u32 = 20;
/// Largest download returned as text.
const MAX_TEXT_DOWNLOAD: usize = 256 * 1024;
/// Default of `--max-concurrent-requests`.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 32;
/// Largest tool result, serialized. rmcp's stdio reader drops a JSON-RPC line over 16 MiB
/// (`DEFAULT_MAX_LINE_LENGTH`); a result stays a little under it so that the envelope fits.
pub const MAX_RESULT_BYTES: usize = 15 * 1024 * 1024;

/// Connection settings of the executor.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Arcane base URL, without `/api`.
    pub base_url: String,
    pub auth: Auth,
    /// The default environment for `environmentId`.
    pub environment: String,
    pub timeout: Duration,
    /// Largest answer body read into memory (`--max-response-bytes`).
    pub max_response_bytes: usize,
    /// Most requests to Arcane in flight at once (`--max-concurrent-requests`).
    pub max_concurrent_requests: usize,
    /// Show secret values in the text of results (`--show-secrets`); masked by default.
    /// structuredContent always carries Arcane's values.
    pub show_secrets: bool,
}

/// How many progress reports may wait for a slow receiver before further ones are dropped: a
/// stream reports every line, and the result summarizes them anyway.
pub const PROGRESS_QUEUE: usize = 64;

/// What a call carries besides its arguments: the client's cancellation, and where progress
/// goes when the client sent a progress token.
#[derive(Default, Clone)]
pub struct CallContext {
    /// Cancelled when the client sends `notifications/cancelled`; the HTTP request is dropped.
    pub cancel: tokio_util::sync::CancellationToken,
    /// Receives progress of long calls (JSON-lines streams), forwarded as
    /// `notifications/progress`. A bounded queue ([`PROGRESS_QUEUE`]): when the receiver falls
    /// behind (a client that does not read), reports are dropped rather than held.
    pub progress: Option<tokio::sync::mpsc::Sender<jsonlines::Progress>>,
    /// The caller's own Arcane credential (HTTP `X-Arcane-API-Key`, docs/security.md): when
    /// set, every request of the call carries it instead of the configured one.
    pub credential: Option<Auth>,
}

impl CallContext {
    /// The credential this call's requests carry.
    pub fn auth<'a>(&'a self, configured: &'a Auth) -> &'a Auth {
        self.credential.as_ref().unwrap_or(configured)
    }
}

/// Runs actions against Arcane.
pub struct Executor {
    config: ExecConfig,
    /// GET/HEAD: follows redirects within the configured origin only.
    reads: reqwest::Client,
    /// Writes: follows no redirect, so a write is never repeated elsewhere.
    writes: reqwest::Client,
    /// Bounds the requests (and WebSocket sessions) to Arcane in flight at once.
    slots: std::sync::Arc<tokio::sync::Semaphore>,
    /// TLS settings of WebSocket (`wss://`) connections, the same trust as `http`.
    ws_tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// Lists fetched to turn names into IDs (`resolve.rs`).
    resolve_cache: resolve::Cache,
}

/// A text block for the model (audience `assistant`, docs/output-format.md).
pub fn assistant_text(text: impl Into<String>) -> ContentBlock {
    let mut t = rmcp::model::TextContent::new(text);
    t.annotations =
        Some(rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::Assistant]));
    ContentBlock::Text(t)
}

/// The text of a failed call: an `isError` result, no structuredContent. Every error text
/// passes here, so this is where a password written in a URL (`ARCANE_URL` with
/// `user:password@`, or one Arcane echoed) is masked.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    let text = text.into();
    let text = match crate::redact::mask_text(&text) {
        std::borrow::Cow::Owned(masked) => masked,
        std::borrow::Cow::Borrowed(_) => text,
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl Executor {
    /// An executor with its HTTP client (rustls; connect timeout; optional extra CA).
    pub fn new(
        config: ExecConfig,
        ca_cert: Option<&std::path::Path>,
        insecure: bool,
    ) -> anyhow::Result<Executor> {
        crate::http::ensure_crypto_provider();
        let origin = url::Url::parse(&config.base_url)
            .map_err(|e| anyhow::anyhow!("ARCANE_URL {:?} is not a URL: {e}", config.base_url))?
            .origin();
        let cert = match ca_cert {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    anyhow::anyhow!("cannot read CA certificate {}: {e}", path.display())
                })?;
                Some(reqwest::Certificate::from_pem(&pem).map_err(|e| {
                    anyhow::anyhow!("{} is not a PEM certificate: {e}", path.display())
                })?)
            }
            None => None,
        };
        let client = |redirects: reqwest::redirect::Policy| {
            let mut builder = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10).min(config.timeout))
                .user_agent(concat!("arcane-mcp/", env!("CARGO_PKG_VERSION")))
                .danger_accept_invalid_certs(insecure)
                .redirect(redirects)
                .pool_max_idle_per_host(config.max_concurrent_requests);
            if let Some(cert) = &cert {
                builder = builder.add_root_certificate(cert.clone());
            }
            builder.build()
        };
        let reads = client(crate::http::same_origin_redirects(origin))?;
        let writes = client(reqwest::redirect::Policy::none())?;
        let ws_tls = if config.base_url.starts_with("https://") {
            Some(crate::http::ws_tls_config(ca_cert, insecure)?)
        } else {
            None
        };
        Ok(Executor {
            reads,
            writes,
            slots: std::sync::Arc::new(tokio::sync::Semaphore::new(
                config.max_concurrent_requests.max(1),
            )),
            config,
            ws_tls,
            resolve_cache: resolve::Cache::default(),
        })
    }

    /// The executor's settings.
    /// Whether Arcane answers its public health endpoint (for `/readyz`; no credential is
    /// sent). The error says what failed without the URL, which may carry a password.
    pub async fn probe(&self) -> Result<(), String> {
        let url = format!("{}/api/health", self.config.base_url);
        match self
            .reads
            .get(&url)
            .timeout(Duration::from_secs(5))
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("Arcane's health endpoint answered {}", r.status())),
            Err(e) if e.is_timeout() => Err("Arcane did not answer within 5 s".into()),
            Err(_) => Err("Arcane is unreachable".into()),
        }
    }

    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    fn credential_name(&self, ctx: &CallContext) -> &'static str {
        if ctx.credential.is_some() {
            return "your Arcane API key (the X-Arcane-API-Key header)";
        }
        match self.config.auth {
            Auth::ApiKey(_) => "the API key (ARCANE_API_KEY / --api-key)",
            Auth::Bearer(_) => "the token (ARCANE_TOKEN / --token)",
        }
    }

    /// Runs one call on one snapshot: the whole pipeline of docs/surfaces.md#how-a-call-runs
    pub async fn execute(
        &self,
        snap: &Snapshot,
        name: &str,
        params: Map<String, Value>,
        confirm: bool,
        ctx: &CallContext,
    ) -> CallToolResult {
        // 1. Resolve; withdrawn → the reason.
        let Some(action) = snap.catalog.resolve(name) else {
            return error_result(unknown_action_text(snap, name));
        };
        if let Some(reason) = snap.policy.withdrawn(action) {
            return error_result(format!("{reason}. It cannot be run on this server."));
        }
        // 2. Validate locally, before anything reaches Arcane (the flat profile's JSON-text
        // parameters decoded first, so the original schema judges them); then names → IDs.
        let params = if snap.policy.flat() {
            match crate::flat::decode_params(action, params) {
                Ok(p) => p,
                Err(problem) => return error_result(errors::validation_text(action, &[problem])),
            }
        } else {
            params
        };
        if let Err(text) = validate(snap, action, &params) {
            return error_result(text);
        }
        let mut params = params;
        let resolved = tokio::select! {
            r = resolve::resolve_params(self, snap, action, &mut params, ctx) => r,
            _ = ctx.cancel.cancelled() => Err(format!(
                "{} was cancelled while looking up an ID; nothing was sent.",
                action.id
            )),
        };
        if let Err(text) = resolved {
            return error_result(text);
        }
        // Fields of parameters that carry JSON text go back into that text.
        let encoded;
        let sent = if action.encoded.is_empty() {
            &params
        } else {
            encoded = match encode::apply(action, params.clone()) {
                Ok(p) => p,
                Err(text) => return error_result(text),
            };
            &encoded
        };
        // 3. Destructive without confirm.
        if action.destructive && !confirm {
            return error_result(format!(
                "{} is destructive ({}), so it needs \"confirm\": true. Nothing was sent. Ask the \
                 user, then call again with confirm set to true.",
                action.id,
                excerpt(&action.title, 200)
            ));
        }
        let prepared = match request::build(
            action,
            sent,
            &self.config.base_url,
            &self.config.environment,
        ) {
            Ok(p) => p,
            Err(e) => {
                return error_result(format!(
                    "Cannot build the request of {}: {}. Nothing was sent to Arcane.",
                    action.id,
                    excerpt(&e, 300)
                ));
            }
        };
        // 4. Safe mode: the exact request instead of sending it.
        if snap.policy.safe_mode && action.mutating {
            return safe_mode_preview(action, &prepared, &self.config.auth);
        }
        // 5. Send and read the answer (a WebSocket for handlers); the client may cancel; then
        // next steps, the resource link, a last sanitize.
        let work = async {
            // Waiting for a slot is part of the call, so the client can cancel it.
            let Ok(_slot) = self.slots.acquire().await else {
                return error_result("The server is shutting down; nothing was sent.");
            };
            if action.kind == ResultKind::Handler {
                handlers::run(
                    &self.config,
                    ctx.auth(&self.config.auth),
                    self.ws_tls.clone(),
                    action,
                    sent,
                )
                .await
            } else {
                self.send(snap, action, prepared, ctx).await
            }
        };
        let result = tokio::select! {
            r = work => r,
            _ = ctx.cancel.cancelled() => error_result(format!(
                "{} was cancelled; the request to Arcane was dropped.{}",
                action.id,
                if action.mutating {
                    format!(" The change may have started: check{} before retrying.", errors::check_hint(snap, action))
                } else {
                    String::new()
                }
            )),
        };
        let result = finish::finish(snap, action, &params, &self.config.environment, result);
        fit_result(snap, action, result)
    }

    async fn send(
        &self,
        snap: &Snapshot,
        action: &Action,
        prepared: request::Prepared,
        ctx: &CallContext,
    ) -> CallToolResult {
        let timeout = match action.kind {
            ResultKind::Stream => self.config.timeout * STREAM_TIMEOUT_FACTOR,
            _ => self.config.timeout,
        };
        // A stream is stopped by its own time cap (which says so); the request's timeout is a
        // backstop just behind it.
        let request_timeout = match action.kind {
            ResultKind::Stream => timeout + Duration::from_secs(5),
            _ => timeout,
        };
        let method =
            reqwest::Method::from_bytes(prepared.method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let write = !matches!(method, reqwest::Method::GET | reqwest::Method::HEAD);
        let client = if write { &self.writes } else { &self.reads };
        let mut req = client
            .request(method, &prepared.url)
            .timeout(request_timeout);
        let (h, v) = ctx.auth(&self.config.auth).header();
        req = req.header(h, v);
        for (k, v) in &prepared.headers {
            req = req.header(k, v);
        }
        req = match &prepared.body {
            request::Body::None => req,
            request::Body::Json(v) => req.json(v),
            request::Body::Bytes(b) => req
                .header("Content-Type", "application/octet-stream")
                .body(b.clone()),
            request::Body::Multipart(fields) => match transfer::multipart_form(fields) {
                Ok(form) => req.multipart(form),
                Err(e) => {
                    return error_result(format!(
                        "Cannot build the request of {}: {e}.",
                        action.id
                    ));
                }
            },
        };
        let env = prepared.environment.as_deref();
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return self.transport_error(snap, action, &e, timeout),
        };
        let status = resp.status();
        if status.is_redirection() && status != reqwest::StatusCode::NOT_MODIFIED {
            let location = crate::http::redirect_location(&resp);
            tracing::warn!(
                action = %action.id,
                status = status.as_u16(),
                "Arcane answered a redirect that was not followed"
            );
            return error_result(crate::http::redirect_text(
                status.as_u16(),
                location.as_deref(),
                write,
            ));
        }
        let content_type = header(&resp, "content-type");
        let disposition = header(&resp, "content-disposition");
        if status.is_success()
            && matches!(action.kind, ResultKind::Stream | ResultKind::Download)
            && errors::is_html(&content_type, b"")
        {
            // A login page or proxy page in front of Arcane, not a stream or a file.
            return self
                .html_answer(snap, action, status.as_u16(), resp, ctx)
                .await;
        }
        if status.is_success() && action.kind == ResultKind::Stream {
            // Read to the end, forwarding progress; a stream cut mid-way is reported from what
            // arrived, not as a transport failure.
            let progress = ctx.progress.clone();
            let show_secrets = self.config.show_secrets;
            // Progress messages are the stream's lines (a build prints what its steps run):
            // text of the result, masked like log lines.
            let on_progress = move |mut p: jsonlines::Progress| {
                if let Some(tx) = &progress {
                    if !show_secrets && let Some(m) = &mut p.message {
                        *m = crate::redact::mask_text(m).into_owned();
                    }
                    // Full: the receiver is behind (a client not reading); drop this one.
                    let _ = tx.try_send(p);
                }
            };
            return match jsonlines::read_response_within(
                resp,
                on_progress,
                &ctx.cancel,
                Some(timeout),
            )
            .await
            {
                Ok(summary) => {
                    let text = format!(
                        "{}{}",
                        crate::render::markdown::title(&action.title),
                        jsonlines::summarize(&summary)
                    );
                    // The last lines, like log lines, mask secrets unless asked to show them;
                    // structuredContent keeps them as Arcane sent them.
                    let text = if self.config.show_secrets {
                        text
                    } else {
                        crate::redact::mask_text(&text).into_owned()
                    };
                    let mut r = CallToolResult::success(vec![assistant_text(text)]);
                    r.structured_content = Some(stream_json(&summary));
                    r
                }
                Err(e) => {
                    let hint = if matches!(e.kind, jsonlines::StreamErrorKind::CutShort) {
                        format!(
                            " Check the state{} before retrying.",
                            errors::check_hint(snap, action)
                        )
                    } else {
                        String::new()
                    };
                    error_result(format!("{}: {e}{hint}", action.id))
                }
            };
        }
        if status.is_success() && action.kind == ResultKind::Download {
            let cap = transfer::DEFAULT_MAX_DOWNLOAD.min(self.config.max_response_bytes);
            return match transfer::read_download(resp, cap).await {
                Ok(transfer::Download {
                    body: transfer::DownloadBody::Text(t),
                    ..
                }) if t.trim_start().starts_with('{')
                    && serde_json::from_str::<Value>(&t)
                        .is_ok_and(|v| errors::is_failure_shape(&v)) =>
                {
                    // Arcane's failure shape where a file was expected: an error, not a file.
                    let err = errors::error_detail(status.as_u16(), &content_type, t.as_bytes());
                    error_result(errors::http_error_text(
                        snap,
                        action,
                        &err,
                        env,
                        self.credential_name(ctx),
                    ))
                }
                Ok(d) => download_result(action, d, self.config.show_secrets),
                Err(e) => error_result(format!("{}: {e}", action.id)),
            };
        }
        if !status.is_success() {
            let bytes = crate::http::read_prefix(resp, crate::http::MAX_ERROR_BODY).await;
            let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
            tracing::debug!(action = %action.id, status = status.as_u16(), "Arcane answered an error");
            return error_result(errors::http_error_text(
                snap,
                action,
                &err,
                env,
                self.credential_name(ctx),
            ));
        }
        let bytes = match crate::http::read_capped(resp, self.config.max_response_bytes).await {
            Ok(b) => b,
            Err(e @ crate::http::BodyError::TooLarge { .. }) => {
                return error_result(too_large_text(snap, action, &e.to_string()));
            }
            Err(crate::http::BodyError::Read { timeout: true, .. }) => {
                return self.timeout_error(snap, action, timeout);
            }
            Err(crate::http::BodyError::Read { detail, .. }) => {
                return self.broken_error(snap, action, &detail);
            }
        };
        if errors::is_html(&content_type, &bytes) {
            // A login page or proxy page answered with a success status instead of Arcane.
            let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
            return error_result(errors::http_error_text(
                snap,
                action,
                &err,
                env,
                self.credential_name(ctx),
            ));
        }
        match action.kind {
            _ if bytes.iter().all(u8::is_ascii_whitespace) => success(
                snap,
                action,
                json!({"status": status.as_u16(), "ok": true}),
                self.config.show_secrets,
            ),
            _ => match serde_json::from_slice::<Value>(&bytes) {
                // Arcane's plain-JSON failure shape can come with a 2xx status.
                Ok(body) if errors::is_failure_shape(&body) => {
                    let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
                    error_result(errors::http_error_text(
                        snap,
                        action,
                        &err,
                        env,
                        self.credential_name(ctx),
                    ))
                }
                Ok(body) => success(
                    snap,
                    action,
                    response::unwrap_envelope(body),
                    self.config.show_secrets,
                ),
                Err(_) if !content_type.contains("json") => download_result(
                    action,
                    download_of(&content_type, &disposition, &bytes),
                    self.config.show_secrets,
                ),
                Err(e) => error_result(format!(
                    "{} answered {} but its JSON body could not be read ({e}); the answer may \
                     have been cut. {}",
                    action.id,
                    status.as_u16(),
                    if action.mutating {
                        format!(
                            "The change may have happened: check{} before retrying.",
                            errors::check_hint(snap, action)
                        )
                    } else {
                        "Retry the call.".into()
                    }
                )),
            },
        }
    }

    /// A 2xx HTML page where Arcane answers JSON or a file: a proxy's or login page. Reads a
    /// little of it for its title.
    async fn html_answer(
        &self,
        snap: &Snapshot,
        action: &Action,
        status: u16,
        resp: reqwest::Response,
        ctx: &CallContext,
    ) -> CallToolResult {
        let content_type = header(&resp, "content-type");
        let page = crate::http::read_prefix(resp, crate::http::MAX_ERROR_BODY).await;
        let err = errors::error_detail(status, &content_type, &page);
        error_result(errors::http_error_text(
            snap,
            action,
            &err,
            None,
            self.credential_name(ctx),
        ))
    }

    fn transport_error(
        &self,
        snap: &Snapshot,
        action: &Action,
        e: &reqwest::Error,
        timeout: Duration,
    ) -> CallToolResult {
        let base = crate::redact::mask_text(&self.config.base_url);
        if let Some(what) = crate::http::local_resource_error(e) {
            return error_result(format!(
                "{} could not reach Arcane because this machine ran out of a local resource: \
                 {what}. It is not a problem of Arcane or ARCANE_URL. Lower \
                 --max-concurrent-requests (ARCANE_MCP_MAX_CONCURRENT_REQUESTS) or raise the \
                 open-file limit (ulimit -n) of the server, then retry.",
                action.id
            ));
        }
        if e.is_builder() {
            // Refused before a byte left: a header value or a URL the HTTP stack cannot send.
            return error_result(format!(
                "Cannot send {}: {}. Nothing was sent to Arcane; check the parameters (header \
                 values must be printable text, and the URL must not be too long).",
                action.id,
                excerpt(&root_cause(e), 300)
            ));
        }
        if e.is_timeout() {
            return self.timeout_error(snap, action, timeout);
        }
        if e.is_connect() {
            return error_result(format!(
                "Cannot connect to Arcane at {base} ({}). Check ARCANE_URL and that Arcane is \
                 running and reachable from this machine.",
                root_cause(e)
            ));
        }
        self.broken_error(snap, action, &root_cause(e))
    }

    fn timeout_error(&self, snap: &Snapshot, action: &Action, timeout: Duration) -> CallToolResult {
        let base = crate::redact::mask_text(&self.config.base_url);
        if action.mutating {
            return error_result(format!(
                "{} timed out after {}s. The change may have happened anyway: check the \
                 current state{} before retrying, rather than repeating the call blindly.",
                action.id,
                timeout.as_secs(),
                errors::check_hint(snap, action)
            ));
        }
        error_result(format!(
            "{} timed out after {}s waiting for Arcane at {base}. Retry, narrow the request \
             (filters, a smaller limit), or raise ARCANE_MCP_TIMEOUT.",
            action.id,
            timeout.as_secs()
        ))
    }

    fn broken_error(&self, snap: &Snapshot, action: &Action, cause: &str) -> CallToolResult {
        let base = crate::redact::mask_text(&self.config.base_url);
        let maybe = if action.mutating {
            format!(
                " The change may have happened: check{} before retrying.",
                errors::check_hint(snap, action)
            )
        } else {
            " Retry the call.".into()
        };
        error_result(format!(
            "The connection to Arcane at {base} failed during {} ({cause}).{maybe}",
            action.id,
        ))
    }
}

/// The text of an answer over `--max-response-bytes`: what happened, and how to ask for less.
fn too_large_text(snap: &Snapshot, action: &Action, cause: &str) -> String {
    let how = how_to_ask_for_less(action);
    let done = if action.mutating {
        format!(
            " Arcane accepted the request, so the change has probably happened: check{} before \
             retrying.",
            errors::check_hint(snap, action)
        )
    } else {
        String::new()
    };
    format!(
        "{}: {cause}. {how}; or raise --max-response-bytes (ARCANE_MCP_MAX_RESPONSE_BYTES).{done}",
        action.id
    )
}

/// How to get a smaller answer of `action`.
fn how_to_ask_for_less(action: &Action) -> &'static str {
    if action.list {
        "Ask for a smaller page with `limit` (and `start` for the next ones), or narrow the list \
         with `search` or its filters"
    } else {
        "Narrow the request if it has filters, or read the object in Arcane itself"
    }
}

/// Counts the bytes a value serializes to, without holding them.
#[derive(Default)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps a result within [`MAX_RESULT_BYTES`] so that every client can read it: a larger one is
/// replaced by an error that says how to ask for less.
fn fit_result(snap: &Snapshot, action: &Action, result: CallToolResult) -> CallToolResult {
    let mut count = ByteCount::default();
    if serde_json::to_writer(&mut count, &result).is_err() {
        return result;
    }
    let size = count.0;
    if size <= MAX_RESULT_BYTES {
        return result;
    }
    tracing::warn!(action = %action.id, bytes = size, "a result was too large to send");
    let cause = format!(
        "the result would be {} ({size} bytes), more than fits in one MCP message (limit {}), \
         so it was not sent",
        crate::render::units::human_bytes(size as u64),
        crate::render::units::human_bytes(MAX_RESULT_BYTES as u64)
    );
    let how = how_to_ask_for_less(action);
    let done = if action.mutating && result.is_error != Some(true) {
        format!(
            " The call itself succeeded: check{} rather than repeating it.",
            errors::check_hint(snap, action)
        )
    } else {
        String::new()
    };
    error_result(format!("{}: {cause}. {how}.{done}", action.id))
}

fn header(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// The text of an unknown name: the reason when an overlay excludes it, else the closest IDs.
/// The name came from the client: it is echoed as a code span.
pub fn unknown_action_text(snap: &Snapshot, name: &str) -> String {
    if let Some(reason) = catalog_exclusion(&snap.catalog, name) {
        return format!("{} is not served: {reason}.", quoted_name(name, 100));
    }
    let closest: Vec<String> = snap
        .catalog
        .closest(name, 20)
        .into_iter()
        .filter_map(|id| snap.catalog.get(id))
        .filter(|a| snap.policy.serves(a))
        .take(5)
        .map(|a| call_name(snap.surface, a))
        .collect();
    let mut out = format!("Unknown action {}.", quoted_name(name, 100));
    if !closest.is_empty() {
        out.push_str(&format!(" Closest: {}.", closest.join(", ")));
    }
    if snap.surface == crate::config::Surface::Dynamic {
        out.push_str(" Search with arcane_find_action.");
    }
    out
}

/// Validates parameters against the action's full input schema.
fn validate(snap: &Snapshot, action: &Action, params: &Map<String, Value>) -> Result<(), String> {
    let validator = snap.validator(action)?;
    let instance = Value::Object(params.clone());
    let problems: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(errors::validation_text(action, &problems))
    }
}

fn safe_mode_preview(action: &Action, prepared: &request::Prepared, auth: &Auth) -> CallToolResult {
    let preview = prepared.preview(auth, &action.domain);
    let text = format!(
        "Safe mode: {} was not sent. This is the request it would send (secrets masked):\n\n```json\n{}\n```\n",
        action.id,
        serde_json::to_string_pretty(&preview).unwrap_or_default()
    );
    let mut r = CallToolResult::success(vec![crate::exec::assistant_text(text)]);
    r.structured_content = Some(json!({"safeMode": true, "action": action.id, "request": preview}));
    r
}

/// A successful JSON result: structuredContent (Arcane's value) plus the Markdown text, which
/// is rendered from a redacted copy unless `show_secrets`, or unless revealing a secret is the
/// action's purpose (then the text says so).
fn success(snap: &Snapshot, action: &Action, value: Value, show_secrets: bool) -> CallToolResult {
    let full_item = action
        .full_item
        .as_deref()
        .and_then(|id| snap.catalog.get(id))
        .filter(|a| snap.policy.serves(a))
        .map(|a| call_name(snap.surface, a));
    let ctx = RenderContext {
        title: &action.title,
        columns: action.columns.as_deref(),
        full_item_action: full_item.as_deref(),
        empty_hint: action.empty_hint.as_deref(),
        ..Default::default()
    };
    let mut text = if show_secrets || action.reveals_secret.is_some() {
        render_value(&ctx, &value)
    } else {
        render_value(&ctx, &crate::redact::redacted(&value, &action.domain))
    };
    if let Some(what) = &action.reveals_secret {
        text.push_str(&format!(
            "\n\nThis answer shows {what} in full: it is the purpose of this action, and Arcane \
             may not show it again. Hand it to the user to store; do not repeat it elsewhere."
        ));
    }
    let mut value = value;
    // Declared output schemas are enforced: a part that does not fit is sent as null, and the
    // text names it with Arcane's original value.
    if let Some(fitter) = &snap.fitter
        && snap.policy.declares_output_schema(action)
    {
        let mut adjusted = fitter.fit(&action.id, &mut value);
        if !show_secrets && action.reveals_secret.is_none() {
            // The note quotes Arcane's original values: the same redactor as the text, with
            // the part's own name deciding as a field name would.
            for a in &mut adjusted {
                let key = a.pointer.rsplit('/').next().unwrap_or_default().to_string();
                let mut wrapped = Value::Object(Map::from_iter([(key.clone(), a.original.take())]));
                crate::redact::redact_for(&mut wrapped, &action.domain);
                a.original = wrapped[&key].take();
            }
        }
        if !adjusted.is_empty() {
            text.push_str("\n\n");
            text.push_str(&crate::output_schema::note(&adjusted));
        }
    }
    let mut r = CallToolResult::success(vec![crate::exec::assistant_text(text)]);
    r.structured_content = Some(value);
    r
}

/// The structured form of a finished stream.
fn stream_json(s: &jsonlines::StreamSummary) -> Value {
    json!({
        "activityId": s.activity_id,
        "done": s.done,
        "lines": s.lines,
        "finalStatus": s.final_status,
        "items": s.items.iter().map(|i| json!({"item": i.item, "status": i.status})).collect::<Vec<_>>(),
        "lastLines": s.last_lines,
        "malformedLines": s.malformed,
    })
}

/// A body Arcane sent as something other than JSON, as a download.
fn download_of(content_type: &str, disposition: &str, bytes: &[u8]) -> transfer::Download {
    let ct = (!content_type.is_empty()).then(|| content_type.to_string());
    let body = if transfer::is_text(ct.as_deref(), bytes) {
        transfer::DownloadBody::Text(String::from_utf8_lossy(bytes).into_owned())
    } else {
        transfer::DownloadBody::Binary(bytes.to_vec())
    };
    transfer::Download {
        file_name: transfer::content_disposition_filename(disposition),
        content_type: ct,
        size: bytes.len(),
        body,
    }
}

/// A download (docs/output-format.md): text in a fenced block when small enough; otherwise the metadata in
/// the text and the file itself as an embedded resource for the user.
fn download_result(action: &Action, d: transfer::Download, show_secrets: bool) -> CallToolResult {
    let file_name = d.file_name.clone().unwrap_or_else(|| action.name.clone());
    let content_type = d
        .content_type
        .clone()
        .unwrap_or_else(|| "application/octet-stream".into());
    let size = d.size as u64;
    let meta = json!({"fileName": file_name, "size": size, "contentType": content_type});
    match d.body {
        transfer::DownloadBody::Text(text) if text.len() <= MAX_TEXT_DOWNLOAD => {
            let shown = if show_secrets {
                std::borrow::Cow::Borrowed(text.as_str())
            } else {
                crate::redact::mask_document(&text, &file_name)
            };
            let md = crate::render::markdown::render_text_download(
                &file_name,
                size,
                &content_type,
                &shown,
            );
            let mut r = CallToolResult::success(vec![assistant_text(md)]);
            let mut sc = meta;
            sc["text"] = Value::String(text);
            r.structured_content = Some(sc);
            r
        }
        body => {
            let bytes = match body {
                transfer::DownloadBody::Text(t) => t.into_bytes(),
                transfer::DownloadBody::Binary(b) => b,
            };
            let md = crate::render::markdown::render_binary_download_meta(
                &file_name,
                size,
                &content_type,
            );
            let uri = format!(
                "arcane://download/{}",
                path::segment("fileName", &file_name).unwrap_or_else(|_| "download".into())
            );
            let blob = rmcp::model::ResourceContents::BlobResourceContents {
                uri,
                mime_type: Some(content_type.clone()),
                blob: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes),
                meta: None,
            };
            let mut embedded = rmcp::model::EmbeddedResource::new(blob);
            embedded.annotations = Some(
                rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::User]),
            );
            let mut r =
                CallToolResult::success(vec![assistant_text(md), ContentBlock::Resource(embedded)]);
            r.structured_content = Some(meta);
            r
        }
    }
}
