//! Streamable HTTP serving for a team (docs/security.md): rmcp's Streamable HTTP service at
//! `/mcp` over the same [`ArcaneServer`] stdio uses, behind a gate (bearer tokens, the
//! caller's Arcane key policy, a per-client rate limit), with Host/Origin validation, a body
//! size limit and idle session expiry; `/healthz`, `/readyz` and `/metrics` beside it.

pub mod guard;
mod limits;
mod sessions;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::{HttpArgs, KeySource};
use crate::mcp::caller::{HttpCaller, TokenLabel};
use crate::metrics::Metrics;
use crate::oauth;
use arcane_engine::Auth;
use guard::{Admitted, RateLimit, Tokens};
use limits::{Pending, PerKey, Unauthenticated};

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

/// The settings of the listener, checked before anything is bound.
pub struct Settings {
    pub listen: SocketAddr,
    pub tokens: Tokens,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub max_request_bytes: usize,
    pub rate_limit: u32,
    pub idle: Duration,
    pub max_sessions: usize,
    pub max_sessions_per_token: usize,
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub max_connections_per_token: usize,
    pub request_body_timeout: Duration,
    pub key_source: KeySource,
    /// The bearer tokens (the command line's, the environment's and the token file's), masked
    /// by value wherever text leaves the server while it serves.
    pub secrets: Vec<arcane_redact::SecretHold>,
    /// OAuth resource-server mode (`--oauth-issuer`, docs/oauth.md).
    pub oauth: Option<Arc<oauth::OAuth>>,
    /// `--state-key-file`'s key: replicas sharing it open each other's confirmation request
    /// states (and, with `--oauth-issuer self`, sign-ins).
    pub state_key: Option<[u8; 32]>,
}

/// The token of an `--auth-token` entry (`name=token` or a plain token).
pub(crate) fn token_secret(entry: &str) -> &str {
    crate::config::split_named(entry).1
}

impl Settings {
    /// The settings of the flags; refuses what would be unsafe on a network.
    /// `ca_cert` (`--ca-cert`) is trusted for the identity provider too.
    pub fn from_args(args: &HttpArgs, ca_cert: Option<&std::path::Path>) -> Result<Settings> {
        let mut tokens: Vec<String> = args.auth_tokens.clone();
        if let Some(path) = &args.auth_token_file {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!(
                    "reading the bearer tokens of --auth-token-file {}",
                    path.display()
                )
            })?;
            tokens.extend(guard::tokens_from_file(&text));
        }
        let secrets = tokens
            .iter()
            .map(|t| arcane_redact::hold_secret(token_secret(t)))
            .collect();
        let tokens = Tokens::new(tokens.iter().map(String::as_str))
            .map_err(|e| anyhow::anyhow!("{e} (ARCANE_MCP_AUTH_TOKEN, --auth-token-file)"))?;
        // Tokens that were given but are all blank (an empty secret file, a variable set to
        // nothing) are a mistake, never a wish to serve without authentication.
        if tokens.is_empty() && (!args.auth_tokens.is_empty() || args.auth_token_file.is_some()) {
            let file = args
                .auth_token_file
                .as_ref()
                .map(|p| format!(" (--auth-token-file {})", p.display()))
                .unwrap_or_default();
            bail!(
                "the bearer tokens given hold no token{file}: every line is empty or a # \
                 comment, or ARCANE_MCP_AUTH_TOKEN is blank; put at least one token there \
                 (an empty token list never turns authentication off)"
            );
        }
        let loopback = args.listen.ip().is_loopback();
        let state_key = args
            .state_key_file
            .as_deref()
            .map(oauth::seal::read_key_file)
            .transpose()?;
        let oauth = oauth_settings(args, ca_cert, state_key)?;
        if oauth.is_some() && args.allow_unauthenticated {
            bail!(
                "--allow-unauthenticated and --oauth-issuer contradict each other: OAuth mode \
                 always asks for a token; drop --allow-unauthenticated"
            );
        }
        if tokens.is_empty() && oauth.is_none() {
            if !args.allow_unauthenticated {
                bail!(
                    "HTTP transport refuses to start without authentication: set \
                     ARCANE_MCP_AUTH_TOKEN (one or more comma-separated tokens) or \
                     --auth-token-file, or --oauth-issuer with --public-url (OAuth, \
                     docs/oauth.md), or pass --allow-unauthenticated to serve loopback only"
                );
            }
            if !loopback {
                bail!(
                    "--allow-unauthenticated serves loopback addresses only, not {}: listen on \
                     127.0.0.1 or set ARCANE_MCP_AUTH_TOKEN",
                    args.listen
                );
            }
        }
        let allowed_hosts: Vec<String> = trimmed(&args.allowed_hosts);
        let allowed_hosts = if allowed_hosts.is_empty() {
            if !loopback {
                bail!(
                    "listening on {} beyond loopback: set ARCANE_MCP_ALLOWED_HOSTS \
                     (--allowed-hosts) to the host names clients reach this server by, e.g. \
                     mcp.example.com (requests naming another Host are refused)",
                    args.listen
                );
            }
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
        } else {
            allowed_hosts
        };
        let max_sessions_per_token = match args.max_sessions_per_token {
            Some(n) if n > args.max_sessions => bail!(
                "--max-sessions-per-token {n} is above --max-sessions {}: a token's share \
                 cannot be more than the whole; lower it or raise --max-sessions",
                args.max_sessions
            ),
            Some(n) => n,
            // A quarter of the ceiling (rounded up): four tokens at their share fill it.
            None => args.max_sessions.div_ceil(4),
        };
        Ok(Settings {
            listen: args.listen,
            tokens,
            allowed_hosts,
            allowed_origins: trimmed(&args.allowed_origins),
            max_request_bytes: args.max_request_bytes,
            rate_limit: args.rate_limit,
            idle: Duration::from_secs(args.session_idle_timeout),
            max_sessions: args.max_sessions,
            max_sessions_per_token,
            max_connections: args.max_connections,
            max_connections_per_address: args.max_connections_per_address,
            max_connections_per_token: args.max_connections_per_token,
            request_body_timeout: Duration::from_secs(args.request_body_timeout),
            key_source: args.arcane_key_source,
            secrets,
            oauth,
            state_key,
        })
    }
}

/// The OAuth settings of the flags (`--oauth-issuer` and the ones beside it), checked.
fn oauth_settings(
    args: &HttpArgs,
    ca_cert: Option<&std::path::Path>,
    state_key: Option<[u8; 32]>,
) -> Result<Option<Arc<oauth::OAuth>>> {
    let Some(issuer) = args
        .oauth_issuer
        .as_deref()
        .map(str::trim)
        .filter(|i| !i.is_empty())
    else {
        let beside = [
            ("--oauth-audience", args.oauth_audience.is_some()),
            (
                "--oauth-introspection-url",
                args.oauth_introspection_url.is_some(),
            ),
            ("--oauth-users", args.oauth_users.is_some()),
        ];
        if let Some((flag, _)) = beside.iter().find(|(_, set)| *set) {
            bail!("{flag} needs --oauth-issuer (the identity provider whose tokens to accept)");
        }
        return Ok(None);
    };
    let Some(public_url) = args.public_url.as_deref() else {
        bail!(
            "--oauth-issuer needs --public-url (ARCANE_MCP_PUBLIC_URL): the address clients \
             reach this server by, e.g. https://mcp.example.com — the MCP endpoint's resource \
             URI, {{public-url}}/mcp, is what access tokens must be issued for"
        );
    };
    let client = match (
        &args.oauth_introspection_client_id,
        &args.oauth_introspection_secret_file,
    ) {
        (Some(id), Some(path)) => {
            let secret = std::fs::read_to_string(path).with_context(|| {
                format!(
                    "reading --oauth-introspection-secret-file {}",
                    path.display()
                )
            })?;
            Some((id.clone(), secret.trim().to_string()))
        }
        (None, None) => None,
        _ => bail!(
            "--oauth-introspection-client-id and --oauth-introspection-secret-file go together \
             (the credentials this server introspects tokens with)"
        ),
    };
    let introspection = args.oauth_introspection_url.clone().map(|u| (u, client));
    // The identity provider is reached with the platform's trust store (and --ca-cert, for a
    // provider behind a private CA), never without verification.
    let tls = arcane_engine::tls_config(ca_cert, false)?;
    let http = arcane_engine::client_builder(&tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("building the HTTP client of the identity provider")?;
    let own = issuer
        .eq_ignore_ascii_case("self")
        .then(|| oauth::SelfSettings {
            state_key,
            tls: tls.clone(),
        });
    let o = oauth::OAuth::new(
        public_url,
        issuer,
        args.oauth_audience.as_deref(),
        introspection,
        args.oauth_users.as_deref(),
        http,
        own,
    )?;
    if let Some(own) = &o.own
        && !own.sealer.from_file
    {
        tracing::warn!(
            "--oauth-issuer self without --state-key-file: a random key seals the sign-ins, so \
             they end when this process does and no second replica can read them; set \
             ARCANE_MCP_STATE_KEY_FILE to keep them"
        );
    }
    Ok(Some(Arc::new(o)))
}

fn trimmed(list: &[String]) -> Vec<String> {
    list.iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Shared by the middleware and the health routes.
struct Shared {
    tokens: Tokens,
    oauth: Option<Arc<oauth::OAuth>>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    /// Which caller opened each session, and the service's own table of live sessions.
    sessions: guard::Sessions,
    live_sessions: Arc<sessions::Bounded>,
    key_source: KeySource,
    rate: RateLimit,
    /// Requests in flight per token (`--max-connections-per-token`).
    token_requests: Arc<PerKey<Option<usize>>>,
    max_sessions_per_token: usize,
    max_request_bytes: usize,
    request_body_timeout: Duration,
    metrics: Arc<Metrics>,
    app: Arc<App>,
    ready: tokio::sync::Mutex<Option<(Instant, Result<(), arcane_engine::ProbeError>)>>,
}

/// How long a `/readyz` verdict is reused, so the endpoint cannot be used to hammer Arcane.
const READY_CACHE: Duration = Duration::from_secs(5);

/// The router of the listener (without the TCP loop, so tests can drive it in-process too).
fn router(
    app: Arc<App>,
    settings: Settings,
    metrics: Arc<Metrics>,
    ct: CancellationToken,
) -> Router {
    let mut server = app.server().with_http(metrics.clone());
    if let Some(key) = settings.state_key {
        let trips = crate::mcp::confirm::RoundTrips::with_key(key, &app.deployment());
        server = server.with_round_trips(Arc::new(trips));
    }
    let server = crate::mcp::trace::Traced::new(server, crate::mcp::trace::Transport::Tcp);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(settings.idle);
    let (allowed_hosts, allowed_origins) = (
        settings.allowed_hosts.clone(),
        settings.allowed_origins.clone(),
    );
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts)
        .with_max_request_body_bytes(settings.max_request_bytes)
        .with_cancellation_token(ct);
    // Origin is always validated: an empty list refuses every browser origin (clients that
    // are not browsers send none).
    config = if settings.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(settings.allowed_origins)
    };
    let sessions = Arc::new(sessions::Bounded {
        inner: sessions,
        max: settings.max_sessions,
        max_calls_in_flight: app.max_calls_in_flight(),
    });
    let live_sessions = sessions.clone();
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let shared = Arc::new(Shared {
        tokens: settings.tokens,
        oauth: settings.oauth,
        allowed_hosts,
        allowed_origins,
        sessions: guard::Sessions::default(),
        live_sessions,
        key_source: settings.key_source,
        rate: RateLimit::new(settings.rate_limit),
        token_requests: PerKey::new(settings.max_connections_per_token),
        max_sessions_per_token: settings.max_sessions_per_token,
        max_request_bytes: settings.max_request_bytes,
        request_body_timeout: settings.request_body_timeout,
        metrics: metrics.clone(),
        app,
        ready: tokio::sync::Mutex::new(None),
    });
    let guarded = Router::new()
        .route_service("/mcp", mcp)
        .route("/metrics", get(metrics_route))
        .route_layer(middleware::from_fn_with_state(shared.clone(), gate));
    let mut open = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready_route))
        .route(oauth::METADATA_PATH, get(resource_metadata))
        .route(oauth::METADATA_ROOT, get(resource_metadata));
    if let Some(own) = shared.oauth.as_ref().and_then(|o| o.own.clone()) {
        let executor = &shared.app.executor;
        own.set_arcane(
            &executor.config().base_url,
            executor.arcane().writes().clone(),
        );
        open = open.merge(oauth::routes::routes(own));
    }
    open.merge(guarded)
        .layer(middleware::from_fn_with_state(shared.clone(), outer))
        .with_state(shared)
}

/// Counts every answer by status, applies the per-client rate limit, and validates Host and
/// Origin for every route (rmcp validates them again for `/mcp`). A refused Host or Origin is
/// logged (WARN) with the setting that would allow it.
async fn outer(
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

/// Bearer token and the caller's-key policy of `/mcp` and `/metrics`; a session serves only
/// the caller that opened it (`guard::Sessions`); a token holds at most
/// `--max-connections-per-token` requests in flight and `--max-sessions-per-token` sessions;
/// the body must arrive within `--request-body-timeout`.
async fn gate(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
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
    let mut req = req;
    if let Some(pending) = req.extensions_mut().remove::<Arc<Pending>>() {
        pending.leave();
    }
    let token_key = match &admitted.oauth {
        Some(o) => Some(o.limit_key),
        None => admitted.token.as_ref().map(|t| t.index),
    };
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
    let caller = http_caller(&req, &admitted, shared.key_source);
    req.extensions_mut().insert(caller);
    let who = admitted.identity;
    let token = admitted.token.clone();
    req.extensions_mut().insert(admitted);
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
    // The token's place is held until the answer is sent (an event stream: until it ends).
    limits::holding(response, in_flight)
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

/// The protected-resource metadata (RFC 9728) in OAuth mode; 404 otherwise.
async fn resource_metadata(State(shared): State<Arc<Shared>>) -> Response {
    match &shared.oauth {
        Some(o) => axum::Json(o.metadata()).into_response(),
        None => guard::plain(
            StatusCode::NOT_FOUND,
            "Not Found: this server runs without OAuth (--oauth-issuer)",
        ),
    }
}

async fn metrics_route(State(shared): State<Arc<Shared>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        shared.metrics.render(),
    )
        .into_response()
}

/// Ready when the catalog has actions and Arcane answers its health endpoint (verdict cached).
async fn ready_route(State(shared): State<Arc<Shared>>) -> Response {
    if shared.app.live.load().catalog.actions.is_empty() {
        return guard::plain(StatusCode::SERVICE_UNAVAILABLE, "catalog is empty\n");
    }
    let mut cached = shared.ready.lock().await;
    let verdict = match &*cached {
        Some((at, v)) if at.elapsed() < READY_CACHE => v.clone(),
        _ => {
            let v = shared.app.executor.probe().await;
            *cached = Some((Instant::now(), v.clone()));
            v
        }
    };
    drop(cached);
    match verdict {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

/// Serves MCP over Streamable HTTP until Ctrl-C / SIGTERM.
pub async fn serve(app: App, mut settings: Settings) -> Result<()> {
    // Held for as long as the listener serves.
    let _secrets = std::mem::take(&mut settings.secrets);
    if settings.tokens.is_empty() && settings.oauth.is_none() {
        tracing::warn!(
            "HTTP transport WITHOUT AUTHENTICATION (--allow-unauthenticated) on {}: any local \
             program can operate Arcane through it",
            settings.listen
        );
    }
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    let addr = listener.local_addr().unwrap_or(settings.listen);
    app.announce();
    let _watch = app.watch();
    let ct = CancellationToken::new();
    tracing::info!(
        url = %format!("http://{addr}/mcp"),
        tokens = settings.tokens.len(),
        token_names = ?settings.tokens.names(),
        arcane_key_source = settings.key_source.as_str(),
        allowed_hosts = ?settings.allowed_hosts,
        allowed_origins = ?settings.allowed_origins,
        oauth_issuer = settings.oauth.as_ref().map(|o| o.provider.issuer.as_str()),
        oauth_resource = settings.oauth.as_ref().map(|o| o.resource.as_str()),
        max_connections = settings.max_connections,
        max_connections_per_address = settings.max_connections_per_address,
        max_connections_per_token = settings.max_connections_per_token,
        max_sessions_per_token = settings.max_sessions_per_token,
        "serving MCP over Streamable HTTP"
    );
    let caps = Caps {
        slots: Arc::new(tokio::sync::Semaphore::new(settings.max_connections)),
        max_connections: settings.max_connections,
        per_address: PerKey::new(settings.max_connections_per_address),
        overflow: Arc::new(tokio::sync::Semaphore::new(OVERFLOW)),
        overflow_per_address: PerKey::new(OVERFLOW_PER_ADDRESS),
        unauthenticated: Unauthenticated::new(UNAUTHENTICATED_SHARE),
    };
    let metrics = app.metrics.clone();
    let router = router(Arc::new(app), settings, metrics.clone(), ct.clone());
    let stop = ct.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stop.cancel();
    });
    serve_connections(listener, router, caps, metrics, ct).await;
    tracing::info!("HTTP transport stopped");
    Ok(())
}

/// Longest a client may take to send the head of a request, also while a kept-alive
/// connection waits for its next one: a client that trickles its headers a byte at a time
/// (slowloris) or opens connections and sends nothing is disconnected instead of holding a
/// connection, a task and a file descriptor for ever. A response being streamed (SSE) is not
/// affected. The body has a deadline of its own (`--request-body-timeout`, `limits.rs`).
const HEADER_READ: Duration = Duration::from_secs(10);

/// Connections answered beyond the caps — `/healthz`, and a refusal saying which cap for
/// anything else — one request each, at most this many at once and
/// [`OVERFLOW_PER_ADDRESS`] per address. Beyond those, a connection is closed at once.
const OVERFLOW: usize = 64;
const OVERFLOW_PER_ADDRESS: usize = 4;

/// Connections waiting for a request head with none admitted yet that one address may hold
/// while the listener is full without losing its oldest to another address's new connection
/// (`limits::Unauthenticated`); at its own cap an address's new connection takes the place of
/// its own oldest such one. A client sends its head at once, so few wait at any time; 1,030
/// that sent nothing kept `/healthz` unanswered for the 10 s head timeout.
const UNAUTHENTICATED_SHARE: usize = 32;

/// How long a stop waits for the requests in flight to finish.
const DRAIN: Duration = Duration::from_secs(10);

/// The connection caps of the accept loop.
struct Caps {
    /// `--max-connections`: more are answered from the overflow (503, `/healthz` served).
    slots: Arc<tokio::sync::Semaphore>,
    max_connections: usize,
    /// `--max-connections-per-address`, keyed as the rate limit is (an IPv6 client's /64).
    per_address: Arc<PerKey<std::net::IpAddr>>,
    overflow: Arc<tokio::sync::Semaphore>,
    overflow_per_address: Arc<PerKey<std::net::IpAddr>>,
    /// The connections of each address no request has been admitted on yet.
    unauthenticated: Arc<Unauthenticated>,
}

/// Why a connection is answered from the overflow.
#[derive(Clone, Copy)]
enum Full {
    Listener(usize),
    Address(usize),
}

/// The accept loop: every connection served by hyper with [`HEADER_READ`] within the caps
/// (`--max-connections`, `--max-connections-per-address`), each request carrying its peer
/// address (`ConnectInfo`). A connection beyond a cap is still accepted and answered, one
/// request, from the overflow: `/healthz` as usual (a probe must see the process alive while
/// the listener is full), anything else with the cap that refused it.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    router: Router,
    caps: Caps,
    metrics: Arc<Metrics>,
    ct: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accepting an HTTP connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = ct.cancelled() => break,
        };
        let key = guard::bucket_of(peer.ip());
        let pending = caps.unauthenticated.enter(key);
        let take = || {
            let address = caps.per_address.try_take(key);
            let slot = address
                .as_ref()
                .and_then(|_| caps.slots.clone().try_acquire_owned().ok());
            (address, slot)
        };
        let (mut address, mut slot) = take();
        // No room: a connection that sent nothing gives its places up (its address's own
        // oldest, else one of an address holding too many; `limits::Unauthenticated`).
        if (address.is_none() || slot.is_none()) && caps.unauthenticated.make_room(key) {
            drop((address, slot));
            (address, slot) = take();
        }
        let full = match (&address, &slot) {
            (Some(_), Some(_)) => None,
            (None, _) => Some(Full::Address(caps.per_address.max())),
            (Some(_), None) => Some(Full::Listener(caps.max_connections)),
        };
        let Some(full) = full else {
            pending.hold((address, slot), true);
            spawn_connection(
                stream,
                peer,
                router.clone(),
                None,
                metrics.clone(),
                ct.clone(),
                pending,
            );
            continue;
        };
        drop((address, slot));
        let overflow = caps
            .overflow_per_address
            .try_take(key)
            .zip(caps.overflow.clone().try_acquire_owned().ok());
        match overflow {
            Some(held) => {
                pending.hold(held, false);
                spawn_connection(
                    stream,
                    peer,
                    router.clone(),
                    Some(full),
                    metrics.clone(),
                    ct.clone(),
                    pending,
                );
            }
            // Even the overflow is full: closed unanswered (the client retries).
            None => {
                pending.leave();
                drop(stream);
            }
        }
    }
    // Wait (bounded) until every connection has finished its request in flight.
    let all = u32::try_from(caps.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN, caps.slots.acquire_many(all)).await;
}

/// Serves one connection, keeping its places in the caps (held by `pending`) until it ends
/// or is closed to make room for a newer one of its address. `full`: it was accepted beyond a
/// cap, so it is answered once — `/healthz` by the router, anything else with the refusal of
/// that cap.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    full: Option<Full>,
    metrics: Arc<Metrics>,
    ct: CancellationToken,
    pending: Arc<Pending>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt;

    tokio::spawn(async move {
        let serving = pending.clone();
        let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            // The gate takes it out of the unadmitted connections once it admits a request.
            req.extensions_mut().insert(serving.clone());
            let router = router.clone();
            let metrics = metrics.clone();
            let serving = serving.clone();
            async move {
                serving.busy(true);
                let r = match full {
                    Some(full) if req.uri().path() != "/healthz" => {
                        let r = beyond_cap(full, peer);
                        metrics.record_http(r.status().as_u16());
                        Ok::<_, std::convert::Infallible>(r)
                    }
                    _ => router.oneshot(req.map(axum::body::Body::new)).await,
                };
                serving.busy(false);
                r
            }
        });
        // HTTP/1.1 only, as before: a version sniffing step would wait for the first bytes
        // before the header-read timer starts.
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ)
            .keep_alive(full.is_none());
        let conn = http1.serve_connection(TokioIo::new(stream), service);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            // Closed to make room: it was waiting for a head, so nothing is cut short.
            _ = pending.closing() => {}
            _ = ct.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
        pending.ended();
    });
}

/// The answer to a request on a connection beyond a cap.
fn beyond_cap(full: Full, peer: SocketAddr) -> Response {
    let (status, text) = match full {
        Full::Address(n) => {
            crate::logging::warn_throttled!(
                client = %peer.ip(),
                limit = n,
                "a client address reached its limit of connections (429): \
                 --max-connections-per-address / ARCANE_MCP_MAX_CONNECTIONS_PER_ADDRESS \
                 (behind a reverse proxy every client shares its address: raise it there)"
            );
            (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too many connections from this address: it holds {n} at once, its limit \
                     (--max-connections-per-address). Close idle connections, then retry."
                ),
            )
        }
        Full::Listener(n) => {
            crate::logging::warn_throttled!(
                limit = n,
                "the listener is full (503): --max-connections / ARCANE_MCP_MAX_CONNECTIONS"
            );
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "This server is serving as many connections as it allows ({n}, \
                     --max-connections); retry after the time in Retry-After."
                ),
            )
        }
    };
    let mut r = limits::closing(status, text);
    r.headers_mut()
        .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    r
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
