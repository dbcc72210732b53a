//! The engine (docs/surfaces.md#how-a-call-runs): one table-driven pipeline for every action.
//!
//! resolve → policy (read-only, exclusions) → validate (jsonschema, locally) → confirm →
//! safe-mode preview → HTTP request → an [`Outcome`] or a [`CallError`] whose text carries the
//! next step (docs/output-format.md#errors). The engine neither renders nor speaks the
//! protocol: the server's presentation (`src/present/`) turns its answer into a tool result. It sees the
//! server's state only through a [`Scope`].

use std::time::Duration;

use arcane_catalog::{Action, Catalog, ResultKind, catalog_exclusion};
use arcane_markdown::{excerpt, quoted_name};
use serde_json::{Map, Value};

use tracing::Instrument;

use crate::context::{CallContext, ExecConfig};
use crate::http::{Auth, root_cause};
use crate::outcome::{CallError, ChangeState, Outcome, Produced, Then, check_before_retrying};
use crate::scope::Scope;
use crate::{encode, errors, handlers, jsonlines, request, resolve, transfer};

/// How long a JSON-lines stream (pull, build, up) may run, as a multiple of the request timeout.
const STREAM_TIMEOUT_FACTOR: u32 = 20;
/// Longest wait for the current version of a document the person's question diffs against:
/// past it the question says so and shows the new document whole.
const READ_CURRENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of `--max-concurrent-requests`.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 32;

/// A call checked and built, not yet confirmed or sent ([`Executor::prepare`]).
pub struct Ready<'s> {
    pub action: &'s Action,
    /// The parameters, validated, names turned into IDs.
    pub params: Map<String, Value>,
    /// The parameters as sent (fields of JSON-text parameters folded back into their text).
    sent: Map<String, Value>,
    prepared: request::Prepared,
    effect: crate::effect::Effect,
}

impl Ready<'_> {
    /// What the call will do: the words of the person's confirmation and of the safe-mode
    /// preview.
    pub fn effect(&self) -> &crate::effect::Effect {
        &self.effect
    }

    /// The parameters as they will be sent, for binding a confirmation to this very call.
    pub fn sent(&self) -> &Map<String, Value> {
        &self.sent
    }

    /// The call apart from its catalog's lifetime, to be carried to where it is run (the
    /// server decides between preparing and running whether the call becomes a task).
    pub fn detach(self) -> Detached {
        Detached {
            action: self.action.id.clone(),
            params: self.params,
            sent: self.sent,
            prepared: self.prepared,
            effect: self.effect,
        }
    }
}

/// A [`Ready`] call that names its action by ID ([`Ready::detach`]).
pub struct Detached {
    action: String,
    params: Map<String, Value>,
    sent: Map<String, Value>,
    prepared: request::Prepared,
    effect: crate::effect::Effect,
}

impl Detached {
    /// The action's ID.
    pub fn action(&self) -> &str {
        &self.action
    }

    /// The call again, against the catalog it was prepared with; `None` for another catalog
    /// that lacks the action.
    pub fn attach(self, catalog: &Catalog) -> Option<Ready<'_>> {
        Some(Ready {
            action: catalog.get(&self.action)?,
            params: self.params,
            sent: self.sent,
            prepared: self.prepared,
            effect: self.effect,
        })
    }
}

/// Runs actions against Arcane.
pub struct Executor {
    pub(crate) config: ExecConfig,
    /// The one client to Arcane (`http.rs`).
    pub(crate) arcane: crate::http::Arcane,
    /// Lists fetched to turn names into IDs (`resolve.rs`).
    pub(crate) resolve_cache: resolve::Cache,
}

/// Why Arcane's health endpoint did not answer ready ([`Executor::probe`]); no URL in the text,
/// which may carry a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// An answer that is not a success.
    #[error("Arcane's health endpoint answered {0}")]
    Status(reqwest::StatusCode),
    /// No answer within the probe's deadline.
    #[error("Arcane did not answer within 5 s")]
    Timeout,
    /// No connection (refused, DNS, TLS…).
    #[error("Arcane is unreachable")]
    Unreachable,
}

impl Executor {
    /// An executor with its HTTP clients over the server's one TLS configuration
    /// (`crate::http::tls_config`: trust store, `--ca-cert`, `--insecure-skip-verify`).
    pub fn new(
        config: ExecConfig,
        tls: std::sync::Arc<rustls::ClientConfig>,
    ) -> anyhow::Result<Executor> {
        let arcane = crate::http::Arcane::new(
            &config.base_url,
            config.timeout,
            config.max_concurrent_requests,
            tls,
        )?;
        Ok(Executor {
            config,
            arcane,
            resolve_cache: resolve::Cache::default(),
        })
    }

    /// The executor's settings.
    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// The one client to Arcane, for the server's own requests beside the catalog's actions
    /// (signing a person in).
    pub fn arcane(&self) -> &crate::http::Arcane {
        &self.arcane
    }

    /// What name lookups read with: the settings, the client and the lists already read.
    pub(crate) fn lookup(&self) -> resolve::Lookup<'_> {
        resolve::Lookup {
            config: &self.config,
            arcane: &self.arcane,
            cache: &self.resolve_cache,
        }
    }

    /// Whether Arcane answers its public health endpoint (for `/readyz`; no credential is
    /// sent). The error says what failed without the URL, which may carry a password.
    pub async fn probe(&self) -> Result<(), ProbeError> {
        let url = format!("{}/api/health", self.config.base_url);
        match self
            .arcane
            .reads
            .get(&url)
            .timeout(Duration::from_secs(5))
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(ProbeError::Status(r.status())),
            Err(e) if e.is_timeout() => Err(ProbeError::Timeout),
            Err(_) => Err(ProbeError::Unreachable),
        }
    }

    fn credential_name(&self, ctx: &CallContext) -> &'static str {
        if ctx.credential.is_some() {
            return ctx
                .credential_label
                .unwrap_or("your Arcane API key (the X-Arcane-API-Key header)");
        }
        match self.config.auth {
            Auth::ApiKey(_) => "the API key (ARCANE_API_KEY / --api-key)",
            Auth::Bearer(_) => "the token (ARCANE_TOKEN / --token)",
        }
    }

    /// Runs one call on one view of the server's state: the whole pipeline of
    /// docs/surfaces.md#how-a-call-runs ([`Executor::prepare`], then [`Executor::run`]).
    pub async fn execute<'s>(
        &self,
        scope: &Scope<'s>,
        name: &str,
        params: Map<String, Value>,
        confirm: bool,
        ctx: &CallContext,
    ) -> Result<Outcome<'s>, CallError> {
        let ready = self.prepare(scope, name, params, ctx).await?;
        self.run(scope, ready, confirm, ctx).await
    }

    /// Everything before a call is confirmed and sent: resolve, policy, validation, names to
    /// IDs, the request built. Nothing reaches Arcane but the lists that turn names into IDs.
    /// The [`Ready`] call says what it will do ([`Ready::effect`]), for the person to confirm.
    pub async fn prepare<'s>(
        &self,
        scope: &Scope<'s>,
        name: &str,
        params: Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Ready<'s>, CallError> {
        // 1. Resolve; withdrawn → the reason.
        let Some(action) = scope.catalog.resolve(name) else {
            return Err(CallError::UnknownAction(unknown_action_text(scope, name)));
        };
        self.prepare_action(scope, action, params, ctx).await
    }

    /// [`Executor::prepare`] for an action the caller has resolved already.
    pub async fn prepare_action<'s>(
        &self,
        scope: &Scope<'s>,
        action: &'s Action,
        params: Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Ready<'s>, CallError> {
        if let Some(reason) = scope.policy.withdrawn(action) {
            return Err(CallError::Withdrawn {
                reason: reason.to_string(),
            });
        }
        // 2. Validate locally, before anything reaches Arcane (parameters in the caller's own
        // shape turned into the action's first, so the original schema judges them); then
        // names → IDs.
        let params = scope
            .policy
            .profile
            .action_params(action, params)
            .map_err(|problem| {
                CallError::Invalid(errors::validation_text(action, &[problem.to_string()]))
            })?;
        validate(scope, action, &params).map_err(CallError::Invalid)?;
        let before = params.clone();
        let had_environment = params.contains_key("environmentId");
        let mut params = params;
        let lookup = self.lookup();
        let resolved = tokio::select! {
            r = resolve::resolve_params(&lookup, scope, action, &mut params, ctx) => r.map_err(|e| match e {
                resolve::Unresolved::Value(text) => CallError::Resolve(text),
                resolve::Unresolved::Lookup(text) => CallError::LookupFailed(text),
            }),
            _ = ctx.cancel.cancelled() => Err(CallError::CancelledLookup {
                action: action.id.clone(),
            }),
        };
        resolved?;
        // What the caller gave for each value a lookup replaced (a name beside its ID).
        let mut given: Map<String, Value> = before
            .into_iter()
            .filter(|(k, v)| params.get(k).is_some_and(|now| now != v))
            .collect();
        if !given.contains_key("environmentId")
            && params.contains_key("environmentId")
            && !had_environment
        {
            // The configured default environment was a name: the lookup put in its ID.
            given.insert(
                "environmentId".into(),
                Value::String(self.config.environment.clone()),
            );
        }
        // Fields of parameters that carry JSON text go back into that text.
        let sent = if action.request.encoded.is_empty() {
            params.clone()
        } else {
            encode::apply(action, params.clone()).map_err(CallError::Invalid)?
        };
        let prepared = request::build(
            action,
            &sent,
            &self.config.base_url,
            &self.config.environment,
        )
        .map_err(|e| CallError::Unbuildable {
            action: action.id.clone(),
            detail: excerpt(&e, 300),
        })?;
        // The current documents the call replaces, for a diff — only when someone will read
        // the words: the person's question or the safe-mode preview.
        // In a mode that never asks (`param`), nobody reads a question, so nothing is read
        // for one.
        let shown =
            (action.needs_confirmation() && scope.policy.asks_for(action) && !ctx.cannot_ask)
                || (scope.policy.safe_mode && action.safety.mutating);
        let baseline = if shown && !action.safety.confirm_diff.is_empty() {
            tokio::select! {
                b = self.read_baseline(scope, action, &params, ctx) => b,
                _ = ctx.cancel.cancelled() => return Err(CallError::CancelledLookup {
                    action: action.id.clone(),
                }),
            }
        } else {
            crate::effect::Baseline::new()
        };
        // The targets' names and what a prune would remove: for the same readers, bounded
        // alike, never failing the call (docs/security.md#what-the-confirmation-shows).
        let known = if shown {
            let limit = READ_CURRENT_TIMEOUT.min(self.config.timeout);
            tokio::select! {
                k = crate::known::read(&lookup, scope, action, &params, &given, ctx, limit) => k,
                _ = ctx.cancel.cancelled() => return Err(CallError::CancelledLookup {
                    action: action.id.clone(),
                }),
            }
        } else {
            crate::effect::Known::default()
        };
        let effect = crate::effect::describe_known(
            action,
            &params,
            &given,
            prepared.environment.as_deref(),
            &crate::effect::Known { baseline, ..known },
        );
        Ok(Ready {
            action,
            params,
            sent,
            prepared,
            effect,
        })
    }

    /// The current version of each document the call replaces (overlay `confirmDiff`), read
    /// through the reading action the overlay names, with the call's own parameters. Each
    /// read is bounded by [`READ_CURRENT_TIMEOUT`]; whatever goes wrong (not served, an error,
    /// no answer, no such field) becomes the reason the question gives instead of a diff —
    /// the call itself is never held up or refused for it.
    async fn read_baseline(
        &self,
        scope: &Scope<'_>,
        action: &Action,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> crate::effect::Baseline {
        let mut answers: std::collections::HashMap<&str, Result<Value, String>> =
            std::collections::HashMap::new();
        let mut baseline = crate::effect::Baseline::new();
        for d in &action.safety.confirm_diff {
            if params.get(&d.param).is_none_or(Value::is_null) {
                continue;
            }
            if !answers.contains_key(d.from.as_str()) {
                let limit = READ_CURRENT_TIMEOUT.min(self.config.timeout);
                let answer =
                    tokio::time::timeout(limit, self.read_document(scope, &d.from, params, ctx))
                        .await
                        .unwrap_or_else(|_| {
                            Err(format!(
                                "Arcane did not answer within {} s",
                                limit.as_secs()
                            ))
                        });
                if let Err(why) = &answer {
                    tracing::debug!(action = %action.id, from = %d.from, %why,
                        "the current document could not be read for the confirmation's diff");
                }
                answers.insert(&d.from, answer);
            }
            let current = match &answers[d.from.as_str()] {
                Ok(body) => d
                    .field
                    .split('.')
                    .try_fold(body, |v, key| v.get(key))
                    .map(|v| match v {
                        // No document yet (no override file): the diff is all additions.
                        Value::Null => Value::String(String::new()),
                        other => other.clone(),
                    })
                    .ok_or_else(|| format!("Arcane's answer to {} has no {}", d.from, d.field)),
                Err(why) => Err(why.clone()),
            };
            baseline.insert(d.param.clone(), current);
        }
        baseline
    }

    /// One read of a current document: the reading action's request built from the call's
    /// parameters of the same names and sent as any read is, if the policy serves that action.
    async fn read_document(
        &self,
        scope: &Scope<'_>,
        from: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, String> {
        let Some(read) = scope.catalog.get(from) else {
            return Err(format!("{from} is not in the catalog"));
        };
        if let Some(reason) = scope.policy.withdrawn(read) {
            return Err(format!("{from} is not served here ({reason})"));
        }
        let args: Map<String, Value> = read
            .params
            .iter()
            .filter_map(|p| params.get(&p.name).map(|v| (p.name.clone(), v.clone())))
            .collect();
        let prepared = request::build(read, &args, &self.config.base_url, &self.config.environment)
            .map_err(|e| excerpt(&e, 200))?;
        let Ok(_slot) = self.arcane.slot().await else {
            return Err("the server is shutting down".into());
        };
        match self.send(scope, read, prepared, ctx).await {
            Ok(Produced::Json(body)) => Ok(body),
            Ok(_) => Err(format!("{from} did not answer with JSON")),
            // The first line: the error's own words, without the next steps meant for a model.
            Err(e) => Err(e.to_string().lines().next().unwrap_or_default().to_string()),
        }
    }

    /// Confirmation, safe mode and the request of a prepared call: a call that needs the
    /// person's confirmation runs only when `confirmed`.
    pub async fn run<'s>(
        &self,
        scope: &Scope<'s>,
        ready: Ready<'s>,
        confirmed: bool,
        ctx: &CallContext,
    ) -> Result<Outcome<'s>, CallError> {
        let Ready {
            action,
            params,
            sent,
            prepared,
            effect,
        } = ready;
        // 3. Confirmation: an impact class that asks, or `confirm: always`.
        if action.needs_confirmation() && !confirmed {
            return Err(CallError::NeedsConfirm {
                action: action.id.clone(),
                what: excerpt(&action.title, 200),
                why: action.safety.impact.why_asked(),
            });
        }
        // 4. Safe mode: the exact request instead of sending it.
        if scope.policy.safe_mode && action.safety.mutating {
            return Ok(Outcome {
                action,
                params,
                produced: Produced::Preview(
                    prepared.preview(&self.config.auth, &action.domain),
                    effect,
                ),
            });
        }
        // 5. Send and read the answer (a WebSocket for handlers); the client may cancel.
        let work = async {
            // Waiting for a slot is part of the call, so the client can cancel it.
            let Ok(_slot) = self.arcane.slot().await else {
                return Err(CallError::ShuttingDown);
            };
            if action.output.kind == ResultKind::Handler {
                let path = action
                    .request
                    .handler
                    .as_ref()
                    .map_or("", |h| h.path.as_str());
                let span = crate::trace::request(&prepared.method, path);
                let done = handlers::run(
                    &self.config,
                    ctx.auth(&self.config.auth),
                    self.arcane.ws_tls.clone(),
                    action,
                    &sent,
                )
                .instrument(span.clone())
                .await;
                if let Err(e) = &done {
                    crate::trace::failed(&span, e.kind());
                }
                done.map(Produced::Handler)
            } else {
                self.send(scope, action, prepared, ctx).await
            }
        };
        let produced = tokio::select! {
            r = work => r,
            _ = ctx.cancel.cancelled() => Err(CallError::Cancelled {
                action: action.id.clone(),
                then: Then(action.safety.mutating.then(|| unsure(scope, action, ChangeState::Started))),
            }),
        }?;
        Ok(Outcome {
            action,
            params,
            produced,
        })
    }

    /// Sends a prepared request and reads its answer, in a span of its own
    /// (`crate::trace::request`).
    async fn send(
        &self,
        scope: &Scope<'_>,
        action: &Action,
        prepared: request::Prepared,
        ctx: &CallContext,
    ) -> Result<Produced, CallError> {
        let span = crate::trace::request(&prepared.method, &action.request.path);
        let done = self
            .send_traced(scope, action, prepared, ctx, &span)
            .instrument(span.clone())
            .await;
        if let Err(e) = &done {
            crate::trace::failed(&span, e.kind());
        }
        done
    }

    async fn send_traced(
        &self,
        scope: &Scope<'_>,
        action: &Action,
        prepared: request::Prepared,
        ctx: &CallContext,
        span: &tracing::Span,
    ) -> Result<Produced, CallError> {
        let timeout = match action.output.kind {
            ResultKind::Stream => self.config.timeout * STREAM_TIMEOUT_FACTOR,
            _ => self.config.timeout,
        };
        // A stream is stopped by its own time cap (which says so); the request's timeout is a
        // backstop just behind it.
        let request_timeout = match action.output.kind {
            ResultKind::Stream => timeout + Duration::from_secs(5),
            _ => timeout,
        };
        let method =
            reqwest::Method::from_bytes(prepared.method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let write = !matches!(method, reqwest::Method::GET | reqwest::Method::HEAD);
        let client = if write {
            &self.arcane.writes
        } else {
            &self.arcane.reads
        };
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
                    return Err(CallError::Multipart {
                        action: action.id.clone(),
                        detail: e.to_string(),
                    });
                }
            },
        };
        for (k, v) in crate::trace::context_headers(span) {
            req = req.header(k, v);
        }
        let env = prepared.environment.as_deref();
        // Built, then sent (what `send` does), so that the span learns the body's size.
        let (client, built) = req.build_split();
        let sent = match built {
            Ok(request) => {
                if let Some(n) = request.body().and_then(|b| b.as_bytes()).map(<[u8]>::len) {
                    span.record("http.request.body.size", n as i64);
                }
                client.execute(request).await
            }
            Err(e) => Err(e),
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => return Err(self.transport_error(scope, action, &e, timeout)),
        };
        let status = resp.status();
        crate::trace::status(span, status.as_u16());
        if let Some(n) = resp.content_length() {
            span.record("http.response.body.size", n as i64);
        }
        if status.is_redirection() && status != reqwest::StatusCode::NOT_MODIFIED {
            let location = crate::http::redirect_location(&resp);
            tracing::warn!(
                action = %action.id,
                status = status.as_u16(),
                "Arcane answered a redirect that was not followed"
            );
            return Err(CallError::Redirect(crate::http::redirect_text(
                status.as_u16(),
                location.as_deref(),
                write,
            )));
        }
        let content_type = header(&resp, "content-type");
        let disposition = header(&resp, "content-disposition");
        let arcane_error = |err: &errors::ArcaneError, env: Option<&str>| CallError::Arcane {
            text: errors::http_error_text(scope, action, err, env, self.credential_name(ctx)),
            status: err.status,
        };
        if status.is_success()
            && matches!(
                action.output.kind,
                ResultKind::Stream | ResultKind::Download
            )
            && errors::is_html(&content_type, b"")
        {
            // A login page or proxy page in front of Arcane, not a stream or a file. A little
            // of it is read for its title.
            let page = crate::http::read_prefix(resp, crate::http::MAX_ERROR_BODY).await;
            let err = errors::error_detail(status.as_u16(), &content_type, &page);
            return Err(arcane_error(&err, None));
        }
        if status.is_success() && action.output.kind == ResultKind::Stream {
            // Read to the end, forwarding progress; a stream cut mid-way is reported from what
            // arrived, not as a transport failure.
            let progress = ctx.progress.clone();
            let show_secrets = self.config.show_secrets;
            // Progress messages are the stream's lines (a build prints what its steps run):
            // text of the result, masked like log lines.
            let on_progress = move |mut p: jsonlines::Progress| {
                if let Some(tx) = &progress {
                    if !show_secrets && let Some(m) = &mut p.message {
                        *m = arcane_redact::mask_text(m).into_owned();
                    }
                    // Full: the receiver is behind (a client not reading); drop this one.
                    let _ = tx.try_send(p);
                }
            };
            return jsonlines::read_response_within(resp, on_progress, &ctx.cancel, Some(timeout))
                .await
                .map(Produced::Stream)
                .map_err(|e| CallError::Stream {
                    action: action.id.clone(),
                    then: Then(
                        matches!(e.kind, jsonlines::StreamErrorKind::CutShort)
                            .then(|| unsure(scope, action, ChangeState::Unknown)),
                    ),
                    cause: e.to_string(),
                });
        }
        if status.is_success() && action.output.kind == ResultKind::Download {
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
                    Err(arcane_error(&err, env))
                }
                Ok(d) => Ok(Produced::Download(d)),
                Err(e) => Err(CallError::Download {
                    action: action.id.clone(),
                    cause: e.to_string(),
                }),
            };
        }
        if !status.is_success() {
            let bytes = crate::http::read_prefix(resp, crate::http::MAX_ERROR_BODY).await;
            let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
            tracing::debug!(action = %action.id, status = status.as_u16(), "Arcane answered an error");
            return Err(arcane_error(&err, env));
        }
        let bytes = match crate::http::read_capped(resp, self.config.max_response_bytes).await {
            Ok(b) => {
                span.record("http.response.body.size", b.len() as i64);
                b
            }
            Err(e @ crate::http::BodyError::TooLarge { .. }) => {
                return Err(CallError::TooLarge {
                    action: action.id.clone(),
                    cause: e.to_string(),
                    how: how_to_ask_for_less(action),
                    then: Then(
                        action
                            .safety
                            .mutating
                            .then(|| unsure(scope, action, ChangeState::Probably)),
                    ),
                });
            }
            Err(crate::http::BodyError::Read { timeout: true, .. }) => {
                return Err(self.timeout_error(scope, action, timeout));
            }
            Err(crate::http::BodyError::Read { detail, .. }) => {
                return Err(self.broken_error(scope, action, &detail));
            }
        };
        if errors::is_html(&content_type, &bytes) {
            // A login page or proxy page answered with a success status instead of Arcane.
            let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
            return Err(arcane_error(&err, env));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Produced::NoBody {
                status: status.as_u16(),
            });
        }
        match serde_json::from_slice::<Value>(&bytes) {
            // Arcane's plain-JSON failure shape can come with a 2xx status.
            Ok(body) if errors::is_failure_shape(&body) => {
                let err = errors::error_detail(status.as_u16(), &content_type, &bytes);
                Err(arcane_error(&err, env))
            }
            Ok(body) => Ok(Produced::Json(body)),
            Err(_) if !content_type.contains("json") => Ok(Produced::Download(download_of(
                &content_type,
                &disposition,
                &bytes,
            ))),
            Err(e) => Err(CallError::BadJson {
                action: action.id.clone(),
                status: status.as_u16(),
                cause: e.to_string(),
                then: if action.safety.mutating {
                    unsure(scope, action, ChangeState::MayHaveHappened)
                } else {
                    "Retry the call.".into()
                },
            }),
        }
    }

    fn transport_error(
        &self,
        scope: &Scope<'_>,
        action: &Action,
        e: &reqwest::Error,
        timeout: Duration,
    ) -> CallError {
        if let Some(what) = crate::http::local_resource_error(e) {
            return CallError::LocalResource {
                action: action.id.clone(),
                what: what.to_string(),
            };
        }
        if e.is_builder() {
            // Refused before a byte left: a header value or a URL the HTTP stack cannot send.
            return CallError::Unsendable {
                action: action.id.clone(),
                cause: excerpt(&root_cause(e), 300),
            };
        }
        if e.is_timeout() {
            return self.timeout_error(scope, action, timeout);
        }
        if e.is_connect() {
            return CallError::Unreachable {
                base: arcane_redact::mask_text(&self.config.base_url).into_owned(),
                cause: root_cause(e),
            };
        }
        self.broken_error(scope, action, &root_cause(e))
    }

    fn timeout_error(&self, scope: &Scope<'_>, action: &Action, timeout: Duration) -> CallError {
        if action.safety.mutating {
            return CallError::WriteTimedOut {
                action: action.id.clone(),
                secs: timeout.as_secs(),
                then: unsure(scope, action, ChangeState::Anyway),
            };
        }
        CallError::TimedOut {
            action: action.id.clone(),
            secs: timeout.as_secs(),
            base: arcane_redact::mask_text(&self.config.base_url).into_owned(),
        }
    }

    fn broken_error(&self, scope: &Scope<'_>, action: &Action, cause: &str) -> CallError {
        CallError::Broken {
            base: arcane_redact::mask_text(&self.config.base_url).into_owned(),
            action: action.id.clone(),
            cause: cause.to_string(),
            then: Then(Some(if action.safety.mutating {
                unsure(scope, action, ChangeState::MayHaveHappened)
            } else {
                "Retry the call.".into()
            })),
        }
    }
}

/// The sentence that asks to check before retrying a write that may have happened, naming the
/// served read of its domain.
pub fn unsure(scope: &Scope<'_>, action: &Action, state: ChangeState) -> String {
    check_before_retrying(&errors::check_hint(scope, action), state)
}

/// How to get a smaller answer of `action`.
pub fn how_to_ask_for_less(action: &Action) -> &'static str {
    if action.output.list {
        "Ask for a smaller page with `limit` (and `start` for the next ones), or narrow the list \
         with `search` or its filters"
    } else {
        "Narrow the request if it has filters, or read the object in Arcane itself"
    }
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
pub fn unknown_action_text(scope: &Scope<'_>, name: &str) -> String {
    if let Some(reason) = catalog_exclusion(scope.catalog, name) {
        return format!("{} is not served: {reason}.", quoted_name(name, 100));
    }
    let closest: Vec<String> = scope
        .catalog
        .closest(name, 20)
        .into_iter()
        .filter_map(|id| scope.catalog.get(id))
        .filter(|a| scope.policy.serves(a))
        .take(5)
        .map(|a| scope.caller.action_name(a))
        .collect();
    let mut out = format!("Unknown action {}.", quoted_name(name, 100));
    if !closest.is_empty() {
        out.push_str(&format!(" Closest: {}.", closest.join(", ")));
    }
    if let Some(hint) = scope.caller.unknown_action_hint() {
        out.push_str(hint);
    }
    out
}

/// Validates parameters against the action's full input schema.
fn validate(scope: &Scope<'_>, action: &Action, params: &Map<String, Value>) -> Result<(), String> {
    let validator = scope
        .validators
        .get(scope.catalog, action)
        .map_err(|e| e.to_string())?;
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
