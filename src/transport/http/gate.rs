//! The gate in front of `/mcp` and `/metrics` as a stack of layers, each one job, outermost
//! first: [`outer`] (every route: the per-address rate limit, Host and Origin, the answer's
//! count), then [`authenticate`] (who calls), [`per_token`] (a token's requests in flight),
//! [`body`] (the body within its limits; JSON-RPC's answer to an undecodable one) and
//! [`sessions`] (a session serves only the caller that opened it, within its token's share).
//! Each layer after `authenticate` reads the [`Admitted`] caller it left on the request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::guard::{self, Admitted, RateLimit, Tokens};
use super::limits::{self, Pending, PerKey};
use super::sessions;
use crate::app::App;
use crate::config::KeySource;
use crate::mcp::caller::{HttpCaller, TokenLabel};
use crate::metrics::Metrics;
use crate::oauth;
use arcane_engine::Auth;

/// The MCP side's view of an admitted request ([`HttpCaller`]): the handler reads this, never
/// the request's headers.
fn http_caller(req: &Request, admitted: &Admitted, key_source: KeySource) -> HttpCaller {
    let headers = req.headers();
    let header = |name: &str| headers.get(name).map_or(&b""[..], |v| v.as_bytes());
    let quota_key = if admitted.token.is_some() || admitted.oauth.is_some() {
        let mut key = b"token:".to_vec();
        key.extend_from_slice(admitted.identity.digest());
        Some(key)
    } else {
        req.extensions()
            .get::<axum::extract::ConnectInfo<SocketAddr>>()
            .map(|c| format!("address:{}", guard::bucket_of(c.0.ip())).into_bytes())
    };
    HttpCaller {
        session: headers
            .get(guard::SESSION_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        token: admitted.token.clone(),
        credential: match admitted.oauth.as_ref().and_then(|o| o.key.clone()) {
            Some(key) => Some(Auth::ApiKey(key)),
            None => guard::client_key(key_source, headers).map(Auth::ApiKey),
        },
        // An error's next step names the key the person knows: the one their sign-in made, the
        // users file's, or the header they sent.
        credential_label: admitted
            .oauth
            .as_ref()
            .filter(|o| o.key.is_some())
            .map(|o| {
                if o.grant.grant_id.is_some() {
                    "the Arcane API key your sign-in made (sign in again to make a new one; deleting it in Arcane under Settings → API Keys ends the access)"
                } else {
                    "the Arcane key the server's users file (ARCANE_MCP_OAUTH_USERS) gives you"
                }
            }),
        quota_key,
        binding: crate::mcp::confirm::binding([
            header(guard::SESSION_HEADER),
            header("authorization"),
            header(guard::CLIENT_KEY_HEADER),
        ]),
        grant: admitted.oauth.as_ref().map(|o| o.grant.clone()),
    }
}

/// Shared by the middleware and the health routes.
pub(super) struct Shared {
    pub(super) tokens: Tokens,
    pub(super) oauth: Option<Arc<oauth::OAuth>>,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Vec<String>,
    /// Which caller opened each session, and the service's own table of live sessions.
    pub(super) sessions: guard::Sessions,
    pub(super) live_sessions: Arc<sessions::Bounded>,
    pub(super) key_source: KeySource,
    pub(super) rate: RateLimit,
    /// Requests in flight per token (`--max-connections-per-token`).
    pub(super) token_requests: Arc<PerKey<Option<usize>>>,
    pub(super) max_sessions_per_token: usize,
    pub(super) max_request_bytes: usize,
    pub(super) request_body_timeout: Duration,
    pub(super) metrics: Arc<Metrics>,
    pub(super) app: Arc<App>,
    pub(super) ready: tokio::sync::Mutex<Option<(Instant, Result<(), arcane_engine::ProbeError>)>>,
}

/// Counts every answer by status, applies the per-client rate limit, and validates Host and
/// Origin for every route (rmcp validates them again for `/mcp`). A refused Host or Origin is
/// logged (WARN) with the setting that would allow it.
pub(super) async fn outer(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    let response = match shared.rate.take(peer.ip()) {
        Ok(()) if !guard::host_allowed(&shared.allowed_hosts, req.headers()) => {
            let host = req.headers().get(header::HOST).map(|h| h.as_bytes());
            match host {
                Some(h) => crate::logging::warn_throttled!(
                    client = %peer.ip(),
                    "Host '{}' not allowed (403): if clients reach this server by that name, add \
                     it with --allowed-hosts / ARCANE_MCP_ALLOWED_HOSTS",
                    guard::shown(h)
                ),
                None => crate::logging::warn_throttled!(
                    client = %peer.ip(),
                    "a request without a Host header was refused (403)"
                ),
            }
            guard::plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed (--allowed-hosts)",
            )
        }
        Ok(())
            if !guard::origin_allowed(&shared.allowed_origins, req.headers())
                && !own_page(&shared, &req) =>
        {
            let origin = req
                .headers()
                .get(header::ORIGIN)
                .map(|h| guard::shown(h.as_bytes()))
                .unwrap_or_default();
            crate::logging::warn_throttled!(
                client = %peer.ip(),
                "Origin '{origin}' not allowed (403): if that web page may call this server, add \
                 it with --allowed-origins / ARCANE_MCP_ALLOWED_ORIGINS (with its scheme)"
            );
            guard::plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed (--allowed-origins)",
            )
        }
        Ok(()) => next.run(req).await,
        Err(retry) => {
            let mut r = guard::plain(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests from this address; retry after the time in Retry-After.",
            );
            if let Ok(v) = retry.to_string().parse() {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
    };
    shared.metrics.record_http(response.status().as_u16());
    response
}

/// Whether a request is the sign-in page's own form, posted from this server's public origin
/// (the built-in authorization server's page; a browser sends its Origin with a POST).
fn own_page(shared: &Shared, req: &Request) -> bool {
    let Some(own) = shared.oauth.as_ref().and_then(|o| o.own.as_ref()) else {
        return false;
    };
    let ours = url::Url::parse(&own.issuer).map(|u| u.origin().ascii_serialization());
    req.uri().path() == "/authorize"
        && req
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok())
            .zip(ours.ok())
            .is_some_and(|(o, ours)| o.eq_ignore_ascii_case(&ours))
}

/// Who calls: the bearer token or OAuth access token of `/mcp` and `/metrics`, and the
/// caller's-key policy (`guard::admit`). The admitted caller and the handler's view of it
/// ([`HttpCaller`]) go on with the request.
pub(super) async fn authenticate(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let mcp = req.uri().path() == "/mcp";
    let checked = {
        use tracing::Instrument;
        let span = tracing::warn_span!("http", client = %peer.ip());
        let oauth = shared.oauth.as_deref();
        guard::admit(&shared.tokens, oauth, shared.key_source, req.headers(), mcp)
            .instrument(span)
            .await
    };
    let admitted = match checked {
        Ok(admitted) => admitted,
        Err(refused) => return refused.into_response(),
    };
    // Admitted: the connection no longer counts as unadmitted (and what counted it does not
    // travel on with the request).
    if let Some(pending) = req.extensions_mut().remove::<Arc<Pending>>() {
        pending.leave();
    }
    let caller = http_caller(&req, &admitted, shared.key_source);
    req.extensions_mut().insert(caller);
    req.extensions_mut().insert(admitted);
    next.run(req).await
}

/// The caller [`authenticate`] admitted, as the inner layers take it; a layer stacked
/// without `authenticate` answers 500 rather than serve an unauthenticated request.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Admitted {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Admitted, Response> {
        parts.extensions.get::<Admitted>().cloned().ok_or_else(|| {
            guard::plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request reached the gate's inner layers unauthenticated",
            )
        })
    }
}

/// Which of a token's shares a request counts against: the OAuth grant's or the bearer
/// token's (`None`: the server runs without tokens).
fn token_key(admitted: &Admitted) -> Option<usize> {
    match &admitted.oauth {
        Some(o) => Some(o.limit_key),
        None => admitted.token.as_ref().map(|t| t.index),
    }
}

/// A token holds at most `--max-connections-per-token` requests in flight; its place is held
/// until the answer is sent (an event stream: until it ends).
pub(super) async fn per_token(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    admitted: Admitted,
    req: Request,
    next: Next,
) -> Response {
    let token_key = token_key(&admitted);
    let Some(in_flight) = shared.token_requests.try_take(token_key) else {
        crate::logging::warn_throttled!(
            client = %peer.ip(),
            token = %token_shown(&admitted),
            limit = shared.token_requests.max(),
            "a token reached its limit of requests in flight (429): \
             --max-connections-per-token / ARCANE_MCP_MAX_CONNECTIONS_PER_TOKEN"
        );
        let mut r = limits::closing(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many requests in flight with this bearer token: it holds {} at once, its \
                 limit (--max-connections-per-token). Close idle connections and event streams \
                 or wait for answers, then retry; people sharing a token can ask the operator \
                 for one each.",
                shared.token_requests.max()
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        return r;
    };
    let response = next.run(req).await;
    limits::holding(response, in_flight)
}

/// The body arrives within `--request-body-timeout` and `--max-request-bytes`; a body rmcp
/// could not decode gets JSON-RPC's answer, and a 2025-11-25 call's `task` field goes on
/// beside the request.
pub(super) async fn body(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let mcp = req.uri().path() == "/mcp";
    let mut req =
        match limits::read_body(req, shared.max_request_bytes, shared.request_body_timeout).await {
            Ok(req) => req,
            Err(refused) => return refused,
        };
    // A body rmcp could not decode (a lone surrogate, broken JSON) would get a plain-text 415:
    // a JSON-RPC client hears a JSON-RPC error instead, with the request's id when it can be
    // read (`crate::transport::jsonrpc`). A notification's gets no body.
    if mcp && req.method() == http::Method::POST {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        if let Some(reply) = crate::transport::jsonrpc::undecodable(&bytes) {
            let mut r = (StatusCode::BAD_REQUEST, reply.to_string()).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            return r;
        }
        // A 2025-11-25 call's `task` field, which rmcp drops, goes on beside the request.
        let task = crate::transport::jsonrpc::augmented(&bytes);
        req = Request::from_parts(parts, axum::body::Body::from(bytes));
        if let Some(task) = task {
            req.extensions_mut().insert(task);
        }
    }
    next.run(req).await
}

/// A session serves only the caller that opened it (`guard::Sessions`), within its token's
/// share (`--max-sessions-per-token`); an ended one is 204, an unknown one 404.
pub(super) async fn sessions(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    admitted: Admitted,
    req: Request,
    next: Next,
) -> Response {
    let token_key = token_key(&admitted);
    let who = admitted.identity;
    let token = admitted.token;
    let session = req
        .headers()
        .get(guard::SESSION_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(id) = &session
        && !shared.sessions.admits(id, &who)
    {
        // The answer the service gives for an unknown session.
        return guard::plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
    }
    let ending = req.method() == http::Method::DELETE;
    if ending
        && let Some(id) = &session
        && !shared.live_sessions.has(id).await
    {
        // rmcp ends a session it does not know without a word; an ended or unknown one is
        // 404, as for any other request naming it.
        return guard::plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
    }
    let mut response = next.run(req).await;
    if ending && response.status() == StatusCode::ACCEPTED {
        // rmcp answers an ended session 202, which clients read as a failure (the Python SDK
        // logs "Session termination failed: 202"): the session is gone, nothing is pending.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    let opened = response
        .headers()
        .get(guard::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match (&session, opened) {
        // A session the service opened (also for a request whose session header it could not
        // read as one) belongs to this caller, within its token's share of the sessions.
        (_, Some(id)) if session.as_deref() != Some(id.as_str()) => {
            let live = shared.live_sessions.ids().await;
            if shared.sessions.wants_pruning() {
                shared.sessions.prune(&live);
            }
            let quota = shared.max_sessions_per_token;
            if let Err(held) = shared
                .sessions
                .bind_within(&id, who, token_key, quota, &live)
            {
                use rmcp::transport::streamable_http_server::session::SessionManager;
                let _ = shared.live_sessions.close_session(&id.into()).await;
                crate::logging::warn_throttled!(
                    client = %peer.ip(),
                    token = %token_shown_of(token.as_deref()),
                    held,
                    "a token reached its share of MCP sessions (429): \
                     --max-sessions-per-token / ARCANE_MCP_MAX_SESSIONS_PER_TOKEN"
                );
                let mut r = limits::closing(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "This bearer token has {held} MCP sessions open, its share of this \
                         server (--max-sessions-per-token {quota}). End one you no longer use \
                         (DELETE /mcp with its Mcp-Session-Id), wait until idle ones expire \
                         (--session-idle-timeout), or ask the operator for a token of your own \
                         or a higher limit."
                    ),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, http::HeaderValue::from_static("30"));
                return r;
            }
        }
        (Some(id), _) if ending && response.status().is_success() => shared.sessions.forget(id),
        // rmcp answers a session refused at the ceiling as its own failure (500); it is the
        // client's to retry later.
        (None, None)
            if response.status() == StatusCode::INTERNAL_SERVER_ERROR
                && shared.live_sessions.open().await >= shared.live_sessions.max =>
        {
            let mut r = guard::plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "This server has as many MCP sessions open as it allows (--max-sessions); \
                 retry later, when idle sessions have expired (--session-idle-timeout), or ask \
                 the operator to raise the limit.",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, http::HeaderValue::from_static("30"));
            return r;
        }
        _ => {}
    }
    response
}

/// How a log line names the token of a request: its name and fingerprint, or that the server
/// runs without tokens.
fn token_shown(admitted: &Admitted) -> String {
    match &admitted.oauth {
        Some(o) => format!("OAuth {:?} of {}", o.grant.subject, o.grant.issuer),
        None => token_shown_of(admitted.token.as_deref()),
    }
}

fn token_shown_of(token: Option<&TokenLabel>) -> String {
    token.map_or_else(|| "none (unauthenticated)".into(), ToString::to_string)
}
