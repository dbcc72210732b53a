//! The HTTP server: connection handling, the request pipeline (log → public routes → auth →
//! faults → environment proxy checks → routing) and the `/__sim` hooks.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::faults::{self, Fault, FaultKind, FaultSpec};
use crate::spec::{Spec, parse_query};
use crate::state::State;
use crate::{ArcaneVersion, SimRole, SimUser, routes, ws};

/// Everything the server shares between requests.
pub struct Shared {
    pub spec: Spec,
    /// Every accepted key with its user.
    users: Vec<SimUser>,
    seed: Mutex<State>,
    state: Mutex<State>,
    log: Mutex<Vec<Value>>,
    faults: Mutex<Vec<Fault>>,
    streams: Mutex<Vec<Value>>,
    /// Every activity ID handed out, with the stream that reports it (if any).
    activities: Mutex<Vec<(String, Option<usize>)>>,
    pub stream_pace_ms: AtomicU64,
    activity: AtomicU64,
    /// Imitating Arcane's main branch (else 2.8.x); switchable through `/__sim/config`.
    main: AtomicBool,
    /// Counts list requests: Docker's order of some lists changes from one request to the
    /// next, and this makes the change deterministic per request sequence.
    list_seq: AtomicU64,
}

/// A change applied to the state when a stream completes.
pub type StateChange = Box<dyn FnOnce(&mut State) + Send>;

/// Default pause between two lines of a JSON-lines stream.
pub const DEFAULT_STREAM_PACE_MS: u64 = 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(spec: Spec, seed: State, users: Vec<SimUser>, version: ArcaneVersion) -> Shared {
        Shared {
            spec,
            users,
            state: Mutex::new(seed.clone()),
            seed: Mutex::new(seed),
            log: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
            activities: Mutex::new(Vec::new()),
            stream_pace_ms: AtomicU64::new(DEFAULT_STREAM_PACE_MS),
            activity: AtomicU64::new(1),
            main: AtomicBool::new(version == ArcaneVersion::Main),
            list_seq: AtomicU64::new(0),
        }
    }

    /// The Arcane version being imitated.
    pub fn version(&self) -> ArcaneVersion {
        if self.main.load(Ordering::Relaxed) {
            ArcaneVersion::Main
        } else {
            ArcaneVersion::V2_8
        }
    }

    /// The number of this list request (0, 1, 2… since the last reset).
    pub fn next_list_seq(&self) -> u64 {
        self.list_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Locks the state.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// A new activity ID (`act-…`), as Arcane's streams announce first.
    pub fn next_activity(&self) -> String {
        let n = self.activity.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "{:08x}-5a1e-4c0d-9e00-{:012x}",
            0x5157_0000u32 + n as u32,
            n
        );
        lock(&self.activities).push((id.clone(), None));
        id
    }

    /// Whether an activity is still running (its stream has not ended); `None` when unknown.
    pub fn activity_running(&self, id: &str) -> Option<bool> {
        let stream = lock(&self.activities)
            .iter()
            .find(|(a, _)| a == id)
            .map(|(_, s)| *s)?;
        let Some(i) = stream else {
            return Some(false);
        };
        let streams = lock(&self.streams);
        let s = streams.get(i)?;
        let ended = s.get("completed") == Some(&Value::Bool(true))
            || s.get("aborted") == Some(&Value::Bool(true));
        Some(!ended)
    }

    fn link_activity(&self, id: &str, stream: usize) {
        if let Some(e) = lock(&self.activities).iter_mut().find(|(a, _)| a == id) {
            e.1 = Some(stream);
        }
    }

    fn mark_log(&self, idx: usize, key: &str, v: Value) {
        if let Some(Value::Object(e)) = lock(&self.log).get_mut(idx) {
            e.insert(key.to_string(), v);
        }
    }

    /// Registers a stream; returns its index in `/__sim/streams`.
    pub fn stream_started(&self, log_idx: usize, method: &str, path: &str) -> usize {
        let mut s = lock(&self.streams);
        let id = s.len();
        s.push(
            json!({"id": id, "requestIndex": log_idx, "method": method, "path": path,
                      "linesSent": 0, "completed": false, "aborted": false}),
        );
        s.len() - 1
    }

    pub fn stream_line_sent(&self, id: usize) {
        if let Some(Value::Object(s)) = lock(&self.streams).get_mut(id) {
            let n = s.get("linesSent").and_then(Value::as_u64).unwrap_or(0);
            s.insert("linesSent".into(), json!(n + 1));
        }
    }

    pub fn stream_finished(&self, id: usize, log_idx: usize, completed: bool) {
        if let Some(Value::Object(s)) = lock(&self.streams).get_mut(id) {
            s.insert("completed".into(), json!(completed));
            s.insert("aborted".into(), json!(!completed));
        }
        if !completed {
            self.mark_log(log_idx, "aborted", json!(true));
        }
    }
}

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

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/__sim/requests", get(hook_requests))
        .route("/__sim/reset", post(hook_reset))
        .route("/__sim/state", get(hook_get_state).post(hook_set_state))
        .route(
            "/__sim/faults",
            get(hook_get_faults)
                .post(hook_add_faults)
                .delete(hook_clear_faults),
        )
        .route("/__sim/streams", get(hook_streams))
        .route("/__sim/config", get(hook_get_config).post(hook_set_config))
        .fallback(entry)
        .with_state(shared)
}

type St = axum::extract::State<Arc<Shared>>;

async fn hook_requests(st: St) -> Response {
    json_response(StatusCode::OK, &Value::Array(lock(&st.log).clone()))
}

async fn hook_reset(st: St) -> Response {
    let seed = lock(&st.seed).clone();
    *st.state() = seed;
    lock(&st.log).clear();
    lock(&st.faults).clear();
    lock(&st.streams).clear();
    lock(&st.activities).clear();
    st.stream_pace_ms
        .store(DEFAULT_STREAM_PACE_MS, Ordering::Relaxed);
    st.list_seq.store(0, Ordering::Relaxed);
    json_response(StatusCode::OK, &json!({"reset": true}))
}

async fn hook_get_state(st: St) -> Response {
    let s = st.state().clone();
    json_response(
        StatusCode::OK,
        &serde_json::to_value(s).unwrap_or(Value::Null),
    )
}

async fn hook_set_state(st: St, body: Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body)
        .map_err(anyhow::Error::from)
        .and_then(State::from_json);
    match parsed {
        Ok(s) => {
            *st.state() = s.clone();
            *lock(&st.seed) = s;
            json_response(StatusCode::OK, &json!({"ok": true}))
        }
        Err(e) => json_response(
            StatusCode::BAD_REQUEST,
            &json!({"error": format!("invalid state: {e:#}")}),
        ),
    }
}

async fn hook_get_faults(st: St) -> Response {
    let n = lock(&st.faults).len();
    json_response(StatusCode::OK, &json!({"pending": n}))
}

async fn hook_add_faults(st: St, body: Bytes) -> Response {
    match faults::parse(&body) {
        Ok(fs) => {
            let n = fs.len();
            lock(&st.faults).extend(fs);
            json_response(StatusCode::OK, &json!({"added": n}))
        }
        Err(e) => json_response(StatusCode::BAD_REQUEST, &json!({"error": format!("{e:#}")})),
    }
}

async fn hook_clear_faults(st: St) -> Response {
    lock(&st.faults).clear();
    json_response(StatusCode::OK, &json!({"cleared": true}))
}

async fn hook_streams(st: St) -> Response {
    json_response(StatusCode::OK, &Value::Array(lock(&st.streams).clone()))
}

async fn hook_get_config(st: St) -> Response {
    json_response(
        StatusCode::OK,
        &json!({"streamPaceMs": st.stream_pace_ms.load(Ordering::Relaxed),
                "arcaneVersion": st.version().as_str()}),
    )
}

async fn hook_set_config(st: St, body: Bytes) -> Response {
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": format!("body is not JSON: {e}")}),
            );
        }
    };
    let version = match v.get("arcaneVersion") {
        None => None,
        Some(x) => match x.as_str().map(str::parse::<ArcaneVersion>) {
            Some(Ok(ver)) => Some(ver),
            Some(Err(e)) => {
                return json_response(StatusCode::BAD_REQUEST, &json!({"error": e}));
            }
            None => {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "arcaneVersion must be \"2.8\" or \"main\""}),
                );
            }
        },
    };
    let pace = match v.get("streamPaceMs").map(Value::as_u64) {
        Some(Some(ms)) => Some(ms),
        Some(None) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "streamPaceMs must be a non-negative integer"}),
            );
        }
        None => None,
    };
    if let Some(ms) = pace {
        st.stream_pace_ms.store(ms, Ordering::Relaxed);
    }
    if let Some(ver) = version {
        st.main.store(ver == ArcaneVersion::Main, Ordering::Relaxed);
    }
    hook_get_config(st).await
}

/// A JSON response with `application/json`.
pub fn json_response(status: StatusCode, v: &Value) -> Response {
    let body = serde_json::to_vec(v).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The context of one `/api` request.
pub struct Ctx {
    pub sh: Arc<Shared>,
    pub method: String,
    /// Full path, with `/api`.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    pub raw_body: Bytes,
    /// Path parameters of the matched template, by name, in path order.
    pub params: Vec<(String, String)>,
    pub op: Option<usize>,
    pub log_idx: usize,
    pub host: String,
    /// Set by the `truncated_stream` fault.
    pub truncate: bool,
    /// Set by the `stream_error` fault: the error message to end the stream with.
    pub stream_error: Option<String>,
}

impl Ctx {
    /// A decoded query parameter.
    pub fn q(&self, k: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }

    /// The path parameter `name` of the matched template (`""` when it has none by that
    /// name). Arcane names them alike in every release the simulator loads
    /// (`containerId`, `imageId`, `projectId`, `volumeName`…).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// The environment of an `/environments/{id}/…` route.
    pub fn env_id(&self) -> &str {
        self.param("id")
    }

    /// The last path parameter: the item ID of a collection's item route, whatever the
    /// collection calls it.
    pub fn last_param(&self) -> &str {
        self.params.last().map(|(_, v)| v.as_str()).unwrap_or("")
    }

    /// The body field `k` as a string.
    pub fn body_str(&self, k: &str) -> Option<&str> {
        self.body.as_ref()?.get(k)?.as_str()
    }

    /// The `$schema` URL huma puts first in bodies (docs/arcane-wire.md#json-encoding).
    pub fn schema_url(&self, name: &str) -> String {
        format!("http://{}/api/schemas/{name}.json", self.host)
    }

    /// The operation's success status and response schema.
    pub fn response_schema(&self) -> (u16, Option<&Value>, Option<String>) {
        let Some(i) = self.op else {
            return (200, None, None);
        };
        let (status, schema) = self.sh.spec.success_response(&self.sh.spec.ops[i].op);
        let name = schema
            .and_then(|s| s.get("$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .map(str::to_string);
        (status, schema, name)
    }

    /// A successful JSON answer: `{$schema, success:true, data, …members}` fitted to the
    /// operation's response schema (missing required members synthesized, unknown dropped).
    pub fn ok(&self, data: Value, members: Vec<(&str, Value)>) -> Response {
        self.envelope(data, members, true)
    }

    /// The envelope of [`Ctx::ok`] not fitted to the response schema, for answers Arcane
    /// sends short of what its document requires.
    pub fn ok_unfitted(&self, data: Value) -> Response {
        self.envelope(data, vec![], false)
    }

    fn envelope(&self, data: Value, members: Vec<(&str, Value)>, fit: bool) -> Response {
        let mut body = Map::new();
        let (status, schema, name) = self.response_schema();
        if let Some(n) = &name {
            body.insert("$schema".into(), Value::String(self.schema_url(n)));
        }
        body.insert("success".into(), Value::Bool(true));
        body.insert("data".into(), data);
        for (k, v) in members {
            body.insert(k.to_string(), v);
        }
        let mut v = Value::Object(body);
        if let Some(s) = schema.filter(|_| fit) {
            v = crate::synth::conform(&self.sh.spec, s, v, &self.path);
        }
        self.finish_json(status, v, name.as_deref())
    }

    /// Sends a complete JSON body with the operation's status and a `Link` header.
    pub fn finish_json(&self, status: u16, v: Value, schema_name: Option<&str>) -> Response {
        let mut resp = json_response(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), &v);
        if let Some(n) = schema_name
            && let Ok(h) =
                HeaderValue::from_str(&format!("<{}>; rel=\"describedBy\"", self.schema_url(n)))
        {
            resp.headers_mut().insert(header::LINK, h);
        }
        resp
    }

    /// A huma problem+json error (docs/arcane-wire.md#errors).
    pub fn problem(&self, status: u16, detail: &str) -> Response {
        problem(status, detail, None, &self.host)
    }

    /// A problem+json 422 `validation failed` with `errors[]`.
    pub fn validation(&self, status: u16, errors: Vec<Value>) -> Response {
        problem(
            status,
            "validation failed",
            Some(Value::Array(errors)),
            &self.host,
        )
    }
}

/// A huma problem+json body: `{$schema, title, status, detail, errors?}`.
pub fn problem(status: u16, detail: &str, errors: Option<Value>, host: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = Map::new();
    body.insert(
        "$schema".into(),
        json!(format!("http://{host}/api/schemas/ErrorModel.json")),
    );
    body.insert(
        "title".into(),
        json!(code.canonical_reason().unwrap_or("Error")),
    );
    body.insert("status".into(), json!(status));
    body.insert("detail".into(), json!(detail));
    if let Some(e) = errors {
        body.insert("errors".into(), e);
    }
    (
        code,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        )],
        serde_json::to_vec(&Value::Object(body)).unwrap_or_default(),
    )
        .into_response()
}

/// Arcane's plain-JSON error of the environment proxy: `{"success":false,"data":{"error":…}}`.
pub fn proxy_error(status: u16, msg: &str) -> Response {
    json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
        &json!({"success": false, "data": {"error": msg}}),
    )
}

/// Arcane's unknown-route 404 (docs/arcane-wire.md#errors).
pub fn unknown_route(path: &str) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"success": false, "error": format!("API endpoint not found: {path}")}),
    )
}

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
/// `Authorization: Bearer`; the user whose key it is, or the 401 text.
fn authenticate<'a>(sh: &'a Shared, headers: &HeaderMap) -> Result<&'a SimUser, &'static str> {
    let user = |key: &[u8]| sh.users.iter().find(|u| u.key.as_bytes() == key);
    if let Some(k) = headers.get("x-api-key") {
        return user(k.as_bytes()).ok_or("Unauthorized: invalid API key");
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .and_then(|tok| user(tok.trim().as_bytes()))
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

const MAX_BODY: usize = 64 * 1024 * 1024;

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
        let mut log = lock(&sh.log);
        let mut e = json!({"method": parts.method.as_str(), "path": path, "query": raw_query,
                           "body": log_body, "headers": headers_for_log(&parts.headers),
                           "user": null, "role": null});
        if is_ws {
            e["websocket"] = json!(true);
        }
        log.push(e);
        log.len() - 1
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
    if !is_public(&parts.method, &sub) {
        let user = match authenticate(&sh, &parts.headers) {
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
        if let Some(e) = lock(&sh.log).get_mut(log_idx) {
            e["user"] = json!(user.name);
            e["role"] = json!(user.role.as_str());
        }
        let reads = parts.method == Method::GET || parts.method == Method::HEAD;
        if user.role == SimRole::Viewer && !reads {
            let perm = permission(&parts.method, &sub);
            return problem(403, &format!("permission denied: {perm}"), None, &host);
        }
    }

    let mut ctx = Ctx {
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
    };

    // Faults.
    let fault = lock(&sh.faults).pipe_take(&ctx.method, &path);
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
    routes::dispatch(&ctx, &method, &shape).await
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

trait PipeTake {
    fn pipe_take(&mut self, method: &str, path: &str) -> Option<FaultSpec>;
}
impl PipeTake for Vec<Fault> {
    fn pipe_take(&mut self, method: &str, path: &str) -> Option<FaultSpec> {
        faults::take(self, method, path)
    }
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

/// A paced JSON-lines stream (docs/arcane-wire.md#streams): an activity line, the `{"log"}` lines, then
/// `{"done":true}` (running `on_done` on the state) or `{"error"}`.
pub fn json_stream(
    ctx: &Ctx,
    logs: Vec<String>,
    outcome: Result<(), String>,
    on_done: Option<StateChange>,
) -> Response {
    let sh = ctx.sh.clone();
    let activity = sh.next_activity();
    let mut lines: Vec<Value> = vec![json!({"type": "activity", "activityId": activity})];
    lines.extend(logs.into_iter().map(|l| json!({"log": l})));
    let outcome = match &ctx.stream_error {
        Some(e) => Err(e.clone()),
        None => outcome,
    };
    let final_line = match &outcome {
        Ok(()) => json!({"done": true}),
        Err(e) => json!({"error": e}),
    };
    lines.push(final_line);
    let cut_after = if ctx.truncate { Some(2usize) } else { None };
    let stream_id = sh.stream_started(ctx.log_idx, &ctx.method, &ctx.path);
    sh.link_activity(&activity, stream_id);
    struct Guard {
        sh: Arc<Shared>,
        id: usize,
        log_idx: usize,
        done: bool,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            self.sh.stream_finished(self.id, self.log_idx, self.done);
        }
    }
    struct S {
        guard: Guard,
        lines: std::vec::IntoIter<Value>,
        sent: usize,
        cut_after: Option<usize>,
        on_done: Option<StateChange>,
        ok: bool,
    }
    let s = S {
        guard: Guard {
            sh: sh.clone(),
            id: stream_id,
            log_idx: ctx.log_idx,
            done: false,
        },
        lines: lines.into_iter(),
        sent: 0,
        cut_after,
        on_done,
        ok: outcome.is_ok(),
    };
    let stream = futures::stream::unfold(s, |mut s| async move {
        if s.cut_after.is_some_and(|n| s.sent >= n) {
            // Truncated: the connection is cut with no final line.
            s.guard.done = true;
            return Some((Err(std::io::Error::other("simulated truncated stream")), s));
        }
        let line = s.lines.next()?;
        if s.sent > 0 {
            let pace = s.guard.sh.stream_pace_ms.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(pace)).await;
        }
        let is_last = s.lines.len() == 0;
        if is_last {
            if s.ok
                && let Some(f) = s.on_done.take()
            {
                f(&mut s.guard.sh.state());
            }
            s.guard.done = true;
        }
        s.sent += 1;
        s.guard.sh.stream_line_sent(s.guard.id);
        let mut b = serde_json::to_vec(&line).unwrap_or_default();
        b.push(b'\n');
        Some((Ok::<Bytes, std::io::Error>(Bytes::from(b)), s))
    })
    .take_while_inclusive_err();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/x-json-stream")
        .header(header::CACHE_CONTROL, "no-store, no-cache, must-revalidate")
        .header("X-Accel-Buffering", "no")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Ends a stream after its first error item.
trait TakeWhileInclusiveErr: futures::Stream<Item = Result<Bytes, std::io::Error>> + Sized {
    fn take_while_inclusive_err(
        self,
    ) -> futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>>
    where
        Self: Send + 'static,
    {
        let mut failed = false;
        self.take_while(move |item| {
            let keep = !failed;
            if item.is_err() {
                failed = true;
            }
            futures::future::ready(keep)
        })
        .boxed()
    }
}
impl<T: futures::Stream<Item = Result<Bytes, std::io::Error>> + Sized> TakeWhileInclusiveErr for T {}

/// A download (docs/arcane-wire.md#downloads). A `truncate` fault cuts it in the middle.
pub fn download(ctx: &Ctx, content_type: &str, disposition: &str, bytes: Vec<u8>) -> Response {
    let builder = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_DISPOSITION, disposition);
    if ctx.truncate {
        let half = Bytes::from(bytes[..bytes.len() / 2].to_vec());
        let s = futures::stream::iter(vec![
            Ok::<Bytes, std::io::Error>(half),
            Err(std::io::Error::other("simulated truncated download")),
        ]);
        return builder
            .header(header::CONTENT_LENGTH, bytes.len())
            .body(Body::from_stream(s))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    builder
        .body(Body::from(bytes))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Cuts a complete JSON response in the middle (the `truncated_stream` fault on a
/// non-stream route).
pub fn truncate_response(resp: Response) -> Response {
    let (parts, body) = resp.into_parts();
    let s = futures::stream::once(async move {
        let b = axum::body::to_bytes(body, MAX_BODY)
            .await
            .unwrap_or_default();
        Ok::<Bytes, std::io::Error>(b.slice(..b.len() / 2))
    })
    .chain(futures::stream::once(async {
        Err(std::io::Error::other("simulated truncated body"))
    }));
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from_stream(s))
}
