//! Streamable HTTP serving for a team (docs/security.md): rmcp's Streamable HTTP service at
//! `/mcp` over the same [`ArcaneServer`] stdio uses, behind a gate (bearer tokens, the
//! caller's Arcane key policy, a per-client rate limit), with Host/Origin validation, a body
//! size limit and idle session expiry; `/healthz`, `/readyz` and `/metrics` beside it.

mod gate;
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
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::config::{HttpArgs, KeySource};
use crate::metrics::Metrics;
use crate::oauth;
use guard::{RateLimit, Tokens};
use limits::{Pending, PerKey, Unauthenticated};

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
    let shared = Arc::new(gate::Shared {
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
        // The gate's layers, outermost last: who calls, the token's share of requests in flight,
        // the body, the sessions.
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            gate::sessions,
        ))
        .route_layer(middleware::from_fn_with_state(shared.clone(), gate::body))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            gate::per_token,
        ))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            gate::authenticate,
        ));
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
        .layer(middleware::from_fn_with_state(shared.clone(), gate::outer))
        .with_state(shared)
}

/// The protected-resource metadata (RFC 9728) in OAuth mode; 404 otherwise.
async fn resource_metadata(State(shared): State<Arc<gate::Shared>>) -> Response {
    match &shared.oauth {
        Some(o) => axum::Json(o.metadata()).into_response(),
        None => guard::plain(
            StatusCode::NOT_FOUND,
            "Not Found: this server runs without OAuth (--oauth-issuer)",
        ),
    }
}

async fn metrics_route(State(shared): State<Arc<gate::Shared>>) -> Response {
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
async fn ready_route(State(shared): State<Arc<gate::Shared>>) -> Response {
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
                let with_body = sends_body(req.headers());
                let mut r = match full {
                    Some(full) if req.uri().path() != "/healthz" => {
                        let r = beyond_cap(full, peer);
                        metrics.record_http(r.status().as_u16());
                        Ok::<_, std::convert::Infallible>(r)
                    }
                    _ => router.oneshot(req.map(axum::body::Body::new)).await,
                };
                serving.busy(false);
                // A refusal may be answered before the request's body has arrived (a 401
                // to an MCP client's first POST); hyper then closes the connection after the
                // answer without saying so, and a client that sent its next request on it
                // gets no answer at all. Saying so makes it open a new one.
                if let Ok(r) = &mut r
                    && with_body
                    && (r.status().is_client_error() || r.status().is_server_error())
                {
                    r.headers_mut().insert(
                        header::CONNECTION,
                        header::HeaderValue::from_static("close"),
                    );
                }
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

/// Whether a request has a body to send (a length above zero, or chunks).
fn sends_body(headers: &http::HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
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
