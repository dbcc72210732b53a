//! The HTTP front of the simulator: connections (with the `drop` fault's kill switch) and the
//! pipeline every `/api` request goes through — log → public documents → authentication (which
//! user; a viewer only reads) → faults → environment proxy checks → routing against the spec
//! and request validation → the route handlers ([`routes`], [`ws`]). The `/__sim` hooks are
//! merged in from [`hooks::serve`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::config::{ArcaneVersion, Caller, SimRole, SimUser};
use crate::ctx::Ctx;
use crate::faults::{FaultKind, FaultSpec};
use crate::reply::{MAX_BODY, json_response, problem, proxy_error, unknown_route};
use crate::spec::parse_query;
use crate::world::Shared;
use crate::{hooks, routes, ws};

/// Lets a handler close its connection without answering (the `drop` fault).
#[derive(Clone)]
pub struct ConnKill(Arc<Notify>);

impl ConnKill {
    pub fn kill(&self) {
        self.0.notify_one();
    }
}

/// Accepts connections until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let app = router(shared);
    let mut conns = tokio::task::JoinSet::new();
    let conn_stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let app = app.clone();
                let mut stop = conn_stop.clone();
                conns.spawn(async move {
                    let kill = Arc::new(Notify::new());
                    let k = ConnKill(kill.clone());
                    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(k.clone());
                        let app = app.clone();
                        async move {
                            use tower::ServiceExt;
                            let resp = app.oneshot(req.map(Body::new)).await;
                            Ok::<_, Infallible>(resp.unwrap_or_else(|e| match e {}))
                        }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc)
                        .with_upgrades();
                    tokio::select! {
                        r = conn => if let Err(e) = r { tracing::debug!(%peer, "connection ended: {e}") },
                        _ = kill.notified() => tracing::debug!(%peer, "connection dropped on purpose"),
                        _ = stopped(&mut stop) => {},
                    }
                });
            }
            _ = stopped(&mut shutdown) => break,
        }
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
    tracing::info!("arcane-sim stopped");
}

async fn stopped(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|s| *s).await.is_err() {
        // Sender gone: treat as stopped.
    }
}

/// The `/__sim` hooks, and every other path through [`entry`].
fn router(shared: Arc<Shared>) -> Router {
    hooks::serve::routes().fallback(entry).with_state(shared)
}

type St = axum::extract::State<Arc<Shared>>;

const SECRET_HEADERS: [&str; 5] = [
    "authorization",
    "x-api-key",
    "cookie",
    "x-arcane-agent-token",
    "proxy-authorization",
];

fn headers_for_log(h: &HeaderMap) -> Value {
    let mut m = Map::new();
    for (k, v) in h {
        if SECRET_HEADERS.contains(&k.as_str()) {
            continue;
        }
        m.insert(
            k.as_str().to_string(),
            json!(String::from_utf8_lossy(v.as_bytes())),
        );
    }
    Value::Object(m)
}

fn is_public(method: &Method, sub: &str) -> bool {
    let parts: Vec<&str> = sub.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["health"] | ["version"] | ["app-version"] | ["openapi.json"] | ["docs"] => true,
        ["auth", "login" | "logout" | "refresh"] => true,
        ["auth", "passkey" | "mfa", ..] => true,
        ["oidc", rest @ ..] => !matches!(rest.first(), Some(&"role-mappings")),
        ["app-images", ..] | ["schemas", ..] => true,
        ["users", _, "avatar"] => method == Method::GET,
        ["environments", "pair"] => true,
        ["environments", _, "settings", "public"] => true,
        ["webhooks", "trigger", _] => true,
        _ => false,
    }
}

/// The authentication check of docs/arcane-wire.md#authentication: `X-API-Key` first, then
/// `Authorization: Bearer` (an access token of `POST /auth/login`, or an API key); the caller,
/// or the 401 text.
fn authenticate(sh: &Shared, headers: &HeaderMap) -> Result<Caller, &'static str> {
    let keyed = |user: SimUser| Caller {
        user,
        session: false,
    };
    if let Some(k) = headers.get("x-api-key") {
        return sh
            .user_with_key(k.as_bytes())
            .map(keyed)
            .ok_or("Unauthorized: invalid API key");
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or("Unauthorized: valid authentication required")?;
    if let Some(user) = sh.user_with_session(token) {
        return Ok(Caller {
            user,
            session: true,
        });
    }
    sh.user_with_key(token.as_bytes())
        .map(keyed)
        .ok_or("Unauthorized: valid authentication required")
}

/// Arcane's permission name of a write, `<resource>:<verb>` (e.g. `containers:start`): the
/// resource after the environment (or the first segment), the verb the last word of the path,
/// or the method's for a write to the resource or one item.
fn permission(method: &Method, sub: &str) -> String {
    let parts: Vec<&str> = sub.trim_matches('/').split('/').collect();
    let rest = match parts.as_slice() {
        ["environments", _, rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    let resource = rest.first().copied().unwrap_or("api");
    let verb = match method.as_str() {
        "DELETE" => "delete",
        _ if rest.len() >= 3 => rest[rest.len() - 1],
        "POST" => "create",
        _ => "update",
    };
    format!("{resource}:{verb}")
}

async fn entry(st: St, req: Request) -> Response {
    let sh = st.0;
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let Some(sub) = path.strip_prefix("/api").map(str::to_string) else {
        return (
            StatusCode::NOT_FOUND,
            "not found (arcane-sim serves /api and /__sim)\n",
        )
            .into_response();
    };
    let raw_body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return problem(
                400,
                &format!("cannot read request body: {e}"),
                None,
                "localhost",
            );
        }
    };
    let parsed: Option<Value> = if raw_body.is_empty() {
        None
    } else {
        serde_json::from_slice(&raw_body).ok()
    };
    let is_ws = parts
        .headers
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let log_body = match (&parsed, raw_body.is_empty()) {
        (Some(v), _) => v.clone(),
        (None, true) => Value::Null,
        (None, false) => Value::String(String::from_utf8_lossy(&raw_body).into_owned()),
    };
    let log_idx = {
        let mut e = json!({"method": parts.method.as_str(), "path": path, "query": raw_query,
                           "body": log_body, "headers": headers_for_log(&parts.headers),
                           "user": null, "role": null});
        if is_ws {
            e["websocket"] = json!(true);
        }
        sh.log_request(e)
    };
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost:3552")
        .to_string();
    tracing::debug!(method = %parts.method, %path, "request");

    // Public documents.
    if sub == "/openapi.json" && (parts.method == Method::GET || parts.method == Method::HEAD) {
        return (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            sh.spec.json.clone(),
        )
            .into_response();
    }
    if sub == "/health" && (parts.method == Method::GET || parts.method == Method::HEAD) {
        // docs/arcane-wire.md#authentication: `/api/health` is public and answers {$schema, status:"UP"}.
        let body = json!({"$schema": format!("http://{host}/api/schemas/HealthResponse.json"), "status": "UP"});
        return json_response(StatusCode::OK, &body);
    }

    // Authentication (docs/arcane-wire.md#authentication, docs/arcane-wire.md#websockets).
    let mut caller = None;
    if !is_public(&parts.method, &sub) {
        let who = match authenticate(&sh, &parts.headers) {
            Ok(u) => u,
            Err(msg) => {
                if is_ws {
                    return json_response(
                        StatusCode::UNAUTHORIZED,
                        &json!({"message": "Authentication required", "code": "UNAUTHORIZED", "statusCode": 0}),
                    );
                }
                return problem(401, msg, None, &host);
            }
        };
        // The log names who made the request, never with the key.
        let user = &who.user;
        sh.log_user(log_idx, user);
        let reads = parts.method == Method::GET || parts.method == Method::HEAD;
        // A viewer manages its own personal keys (Arcane's self-service routes).
        let own = sub.starts_with("/auth/me/");
        if user.role == SimRole::Viewer && !reads && !own {
            let perm = permission(&parts.method, &sub);
            return problem(403, &format!("permission denied: {perm}"), None, &host);
        }
        caller = Some(who);
    }

    let mut ctx = Ctx {
        caller,
        sh: sh.clone(),
        method: parts.method.as_str().to_string(),
        path: path.clone(),
        query: parse_query(&raw_query),
        body: parsed,
        raw_body,
        params: Vec::new(),
        op: None,
        log_idx,
        host,
        truncate: false,
        stream_error: None,
        slow_body: None,
    };

    // Faults.
    let fault = sh.take_fault(&ctx.method, &path);
    if let Some(f) = fault {
        match apply_fault(&mut ctx, &f, parts.extensions.get::<ConnKill>().cloned()).await {
            FaultOutcome::Respond(r) => return r,
            FaultOutcome::Continue => {}
        }
    }

    // Environment proxy checks for remote environments (docs/arcane-wire.md#errors).
    let segs: Vec<&str> = sub.trim_matches('/').split('/').collect();
    let mut remote = false;
    if segs.len() >= 3 && segs[0] == "environments" && segs[1] != "0" {
        let env_id = crate::spec::percent_decode(segs[1]);
        let suffix = format!("/{}", segs[2..].join("/"));
        if !is_management_path(&ctx.method, &suffix) {
            remote = true;
            let env = sh
                .state()
                .environments
                .iter()
                .find(|e| e.id == env_id)
                .cloned();
            match env {
                None => return proxy_error(404, "Environment not found"),
                Some(e) if !e.enabled => return proxy_error(400, "Environment is disabled"),
                Some(e) if !e.agent_connected => {
                    return proxy_error(502, "Edge agent is not connected");
                }
                Some(_) => {}
            }
        }
    }

    // The segments as Arcane's handlers see them (docs/arcane-wire.md, path parameters).
    let (hsegs, raw) = handler_segments(sh.version(), remote, &path, &sub);
    let psegs: Vec<&str> = hsegs.iter().map(String::as_str).collect();

    // WebSockets (docs/handlers.md, docs/arcane-wire.md#websockets).
    if psegs.len() >= 4 && psegs[0] == "environments" && psegs[2] == "ws" {
        let Ok(upgrade) =
            axum::extract::ws::WebSocketUpgrade::from_request_parts(&mut parts, &()).await
        else {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"success": false, "error": "WebSocket upgrade required"}),
            );
        };
        return ws::route(ctx, upgrade, &psegs);
    }

    // Routing against the spec.
    let method = if ctx.method == "HEAD" && sh.spec.find_segments("HEAD", &psegs).is_none() {
        "GET".to_string()
    } else {
        ctx.method.clone()
    };
    let Some((op, params)) = sh.spec.find_segments(&method, &psegs) else {
        return unknown_route(&path);
    };
    ctx.op = Some(op);
    let shape = sh.spec.ops[op].shape.clone();
    let decodes_itself = raw && decodes_own_parameters(&shape);
    ctx.params = params
        .into_iter()
        .map(|(name, v)| {
            if decodes_itself {
                (name, crate::spec::percent_decode(&v))
            } else {
                (name, v)
            }
        })
        .collect();
    if let Some(r) = validate_request(&ctx) {
        return r;
    }
    let resp = routes::dispatch(&ctx, &method, &shape).await;
    match ctx.slow_body {
        Some(slow) => crate::faults::slow_body(resp, slow),
        None => resp,
    }
}

/// The path's segments (without `/api`) as Arcane's router and handlers see them, and
/// whether they are still percent-encoded.
///
/// - main decodes every path parameter;
/// - 2.8.x, local: Go keeps the raw path for routing when the request's escaping differs from
///   Go's default escaping of the decoded path, and the handlers then get the raw text;
/// - 2.8.x, remote environment: the manager decodes the path before proxying it, so the agent
///   sees decoded segments, and a decoded `/` splits a segment.
fn handler_segments(
    version: ArcaneVersion,
    remote: bool,
    full_path: &str,
    sub: &str,
) -> (Vec<String>, bool) {
    let split = |p: &str| -> Vec<String> {
        crate::spec::split_path(p)
            .into_iter()
            .map(str::to_string)
            .collect()
    };
    match version {
        ArcaneVersion::Main => (
            split(sub)
                .iter()
                .map(|s| crate::spec::percent_decode(s))
                .collect(),
            false,
        ),
        ArcaneVersion::V2_8 if remote => (split(&crate::spec::percent_decode(sub)), false),
        ArcaneVersion::V2_8 => {
            let default_escaping =
                crate::spec::go_escape_path(&crate::spec::percent_decode(full_path)) == full_path;
            if default_escaping {
                (
                    split(sub)
                        .iter()
                        .map(|s| crate::spec::percent_decode(s))
                        .collect(),
                    false,
                )
            } else {
                (split(sub), true)
            }
        }
    }
}

/// The routes whose 2.8.x handlers decode their path parameter themselves: image export, tag,
/// history and attestations, and the template routes.
fn decodes_own_parameters(shape: &str) -> bool {
    matches!(
        shape,
        "/environments/{}/images/{}/export"
            | "/environments/{}/images/{}/tag"
            | "/environments/{}/images/{}/history"
            | "/environments/{}/images/{}/attestations"
    ) || shape.starts_with("/templates/{}")
}

/// Endpoints the manager serves itself even for remote environments.
fn is_management_path(method: &str, suffix: &str) -> bool {
    const SET: [&str; 10] = [
        "/test",
        "/heartbeat",
        "/sync-registries",
        "/sync",
        "/deployment",
        "/agent/pair",
        "/version",
        "/settings",
        "/job-schedules",
        "/jobs",
    ];
    SET.contains(&suffix)
        || suffix == "/activities"
        || suffix.starts_with("/activities/")
        || suffix.starts_with("/notifications")
        || suffix == "/webhooks"
        || suffix.starts_with("/webhooks/")
        || suffix.starts_with("/deployment/mtls/")
        || (method == "GET" && (suffix == "/swarm/join-candidates" || suffix == "/swarm/nodes"))
}

enum FaultOutcome {
    Respond(Response),
    Continue,
}

async fn apply_fault(ctx: &mut Ctx, f: &FaultSpec, kill: Option<ConnKill>) -> FaultOutcome {
    tracing::info!(kind = ?f.kind, path = %ctx.path, "injecting fault");
    if let Some(ms) = f.delay_ms
        && ms > 0
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    match f.kind {
        FaultKind::Delay => FaultOutcome::Continue,
        FaultKind::SlowBody => {
            ctx.slow_body = f.slow_body();
            FaultOutcome::Continue
        }
        FaultKind::Status => {
            let status = f.status.unwrap_or(500);
            let r = match &f.body {
                Some(b) => {
                    let is_problem = b.get("title").is_some() && b.get("status").is_some();
                    let mut r = json_response(
                        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                        b,
                    );
                    if is_problem {
                        r.headers_mut().insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/problem+json"),
                        );
                    }
                    r
                }
                None => ctx.problem(status, "simulated fault"),
            };
            FaultOutcome::Respond(r)
        }
        FaultKind::Drop => {
            if let Some(k) = kill {
                k.kill();
            }
            // The connection task drops this future; never answer.
            std::future::pending::<()>().await;
            FaultOutcome::Respond(StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        FaultKind::MalformedJson => {
            let status = StatusCode::from_u16(f.status.unwrap_or(200)).unwrap_or(StatusCode::OK);
            FaultOutcome::Respond(
                (
                    status,
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    "{\"success\":true,\"data\":{\"id\":\"abc\",\"name\":",
                )
                    .into_response(),
            )
        }
        FaultKind::TruncatedStream => {
            ctx.truncate = true;
            FaultOutcome::Continue
        }
        FaultKind::StreamError => {
            let msg = f
                .body
                .as_ref()
                .and_then(|b| {
                    b.get("error")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .or_else(|| b.as_str().map(str::to_string))
                })
                .unwrap_or_else(|| "simulated stream failure".to_string());
            ctx.stream_error = Some(msg);
            FaultOutcome::Continue
        }
        FaultKind::AgentUnreachable => {
            let status = f.status.unwrap_or(502);
            let r = match &f.body {
                Some(b) => json_response(
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                    b,
                ),
                None => proxy_error(status, "Edge agent is not connected"),
            };
            FaultOutcome::Respond(r)
        }
    }
}

/// Arcane's request checks (docs/arcane-wire.md#errors): required body, bad JSON, unexpected or missing
/// top-level properties, non-integer integer query parameters.
fn validate_request(ctx: &Ctx) -> Option<Response> {
    let spec = &ctx.sh.spec;
    let op = &spec.ops[ctx.op?].op;
    // Query integers.
    if let Some(ps) = op.get("parameters").and_then(Value::as_array) {
        for p in ps {
            let p = spec.resolve(p);
            if p.get("in").and_then(Value::as_str) != Some("query") {
                continue;
            }
            let Some(name) = p.get("name").and_then(Value::as_str) else {
                continue;
            };
            let ty = p
                .get("schema")
                .map(|s| spec.resolve(s))
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str);
            if ty == Some("integer")
                && let Some(v) = ctx.q(name)
                && v.parse::<i64>().is_err()
            {
                return Some(ctx.validation(422, vec![json!({"message": "invalid integer", "location": format!("query.{name}"), "value": v})]));
            }
        }
    }
    let (schema, required) = spec.request_body(op)?;
    if ctx.raw_body.is_empty() || ctx.raw_body.iter().all(u8::is_ascii_whitespace) {
        return required.then(|| ctx.problem(400, "request body is required"));
    }
    let Some(body) = &ctx.body else {
        return Some(ctx.validation(400, vec![json!({"message": "invalid JSON", "location": "body", "value": String::from_utf8_lossy(&ctx.raw_body)})]));
    };
    let schema = spec.resolve(schema);
    let mut errors = Vec::new();
    if let (Some(obj), Some(props)) = (
        body.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    errors.push(json!({"message": format!("expected required property {r} to be present"), "location": "body", "value": body}));
                }
            }
        }
        if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            for (k, v) in obj {
                if !props.contains_key(k) {
                    errors.push(json!({"message": "unexpected property", "location": format!("body.{k}"), "value": v}));
                }
            }
        }
    }
    (!errors.is_empty()).then(|| ctx.validation(422, errors))
}
