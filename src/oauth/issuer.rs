//! The server as its own authorization server (`--oauth-issuer self`, docs/oauth.md): RFC 8414
//! metadata, registration (`clients.rs`), the sign-in page (`page.rs`) where a person signs in
//! with their Arcane account or pastes an Arcane API key (`sign_in.rs`), the code flow with PKCE S256, the
//! token endpoint with rotating refresh tokens, and revocation (RFC 7009). Codes and tokens are
//! sealed (`seal.rs`) and carry the person's Arcane key; what is kept in memory is only what
//! cannot be sealed — spent codes, revoked grants, the refresh generation of each grant.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::clients::{Client, Clients};
use super::page;
use super::scopes::{SCOPE_READ, SCOPE_WRITE};
use super::seal::{Kind, Sealer};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The path of the authorization-server metadata (RFC 8414 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// How long things live: the sign-in form, a code (single use), an access token, a refresh
/// token (each use gives a new one; the grant lasts as long as it is used within this).
pub const FORM_TTL: i64 = 600;
pub const CODE_TTL: i64 = 60;
pub const ACCESS_TTL: i64 = 900;
pub const REFRESH_TTL: i64 = 30 * 24 * 3600;
/// How long Arcane's word that a key works is trusted before it is asked again.
const KEY_CHECK_TTL: Duration = Duration::from_secs(60);
/// Most entries of each in-memory table. Unexpired entries are never dropped to make room
/// (that would undo a revocation or a reuse detection): when a table is full, new grants,
/// sign-in forms or attempts are refused until entries expire.
const MAX_STATE: usize = 100_000;
/// Most live grants of one Arcane user in this process (a person signing in again and again
/// fills only their own share).
const MAX_GRANTS_PER_USER: usize = 1000;
/// Sign-in attempts (password or key) one form may make, and the failed passwords of one
/// username after which it waits, first `LOCK_BASE` seconds, doubling with each further
/// failure up to `LOCK_MAX`; failures are forgotten `FAILURE_TTL` after the last one.
const MAX_FORM_ATTEMPTS: u32 = 5;
const MAX_USER_FAILURES: u32 = 5;
const LOCK_BASE: i64 = 60;
const LOCK_MAX: i64 = 900;
const FAILURE_TTL: i64 = 900;
/// The longest `state` parameter carried (it is sealed into the form and the code).
const MAX_STATE_PARAM: usize = 512;

/// The cookie of the sign-in form's CSRF token; under https with the `__Host-` prefix, so that
/// no sibling host can set it (RFC 6265bis §4.1.3.2).
const CSRF_COOKIE: &str = "arcane_mcp_csrf";
const CSRF_COOKIE_HOST: &str = "__Host-arcane_mcp_csrf";

/// What a sign-in form carries from the GET that showed it to the POST that answers it.
#[derive(Serialize, Deserialize)]
struct SignInForm {
    c: String,
    r: String,
    ch: String,
    st: Option<String>,
    w: bool,
    x: String,
    e: i64,
    /// The form's ID (random): what makes it single-use and counts its attempts.
    #[serde(default)]
    f: String,
}

/// A grant as a code, an access token or a refresh token carries it.
#[derive(Serialize, Deserialize, Clone)]
struct Grant {
    /// The grant's ID (random): what revocation and refresh rotation follow.
    g: String,
    /// The client's ID, digested (the client ID of a registration is long).
    c: String,
    /// The client's name, for the audit log.
    n: String,
    /// The Arcane username (or, for a pasted key, the name Arcane gives its owner).
    u: String,
    /// The Arcane API key calls run with.
    k: String,
    w: bool,
    e: i64,
    /// The redirect URI and PKCE challenge (codes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ch: Option<String>,
    /// The refresh generation (refresh tokens only): each refresh spends one.
    #[serde(default)]
    i: u64,
}

/// A grant this process issued or saw refreshed: whose, its next refresh generation, until when.
struct LiveGrant {
    user: String,
    next: u64,
    exp: i64,
}

/// How a sign-in form stands.
#[derive(Default)]
struct FormUse {
    attempts: u32,
    /// An answer of it is being handled (a second one at once is refused).
    busy: bool,
    /// It gave a code or was cancelled: it is spent.
    used: bool,
    exp: i64,
}

/// Why a form's answer is not taken.
#[derive(Debug, PartialEq, Eq)]
enum FormRefusal {
    Used,
    Busy,
    Attempts,
    Full,
}

/// Why a password is not tried now.
#[derive(Debug, PartialEq, Eq)]
enum Wait {
    /// The username is locked for this many more seconds.
    Locked(i64),
    /// Other attempts of the username are being checked and may use up what is left.
    InFlight,
}

/// A reserved password attempt, ended when dropped — also when the sign-in's request goes away
/// while Arcane is asked (an attempt left in flight would lock the username for good).
struct Attempt<'a> {
    issuer: &'a Issuer,
    user: String,
    worked: Option<bool>,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.issuer
            .state()
            .settle_password(&self.user, self.worked, now());
    }
}

/// What a refresh finds.
#[derive(Debug, PartialEq, Eq)]
enum Rotation {
    Ok,
    Reused,
    Full,
}

struct State {
    max: usize,
    /// Codes spent, by grant ID, until they expire.
    spent: HashMap<String, i64>,
    /// Revoked grants, until their longest token would expire.
    revoked: HashMap<String, i64>,
    /// The live grants of this process, by grant ID.
    live: HashMap<String, LiveGrant>,
    /// Sign-in forms answered, by form ID, until they expire.
    forms: HashMap<String, FormUse>,
    /// Failed passwords by username (lowercase): how many, locked until, forgotten at.
    failures: HashMap<String, (u32, i64, i64)>,
    /// Passwords of each username (lowercase) being checked by Arcane right now: counted with
    /// the failures, so concurrent forms cannot send more guesses than the lockout allows.
    in_flight: HashMap<String, u32>,
    /// Digests of keys Arcane accepted lately (a cache: emptied when full).
    alive: HashMap<[u8; 32], Instant>,
}

/// Whether `map` has room for one more entry once its expired entries are gone.
fn room<V>(map: &mut HashMap<String, V>, exp: impl Fn(&V) -> i64, now: i64, max: usize) -> bool {
    if map.len() >= max {
        map.retain(|_, v| exp(v) > now);
    }
    map.len() < max
}

impl State {
    fn new(max: usize) -> State {
        State {
            max,
            spent: HashMap::new(),
            revoked: HashMap::new(),
            live: HashMap::new(),
            forms: HashMap::new(),
            failures: HashMap::new(),
            in_flight: HashMap::new(),
            alive: HashMap::new(),
        }
    }

    /// Whether a new grant of `user` may begin: room in the tables, and the user under their
    /// share.
    fn grant_room(&mut self, user: &str, now: i64) -> bool {
        let max = self.max;
        room(&mut self.revoked, |e| *e, now, max)
            && room(&mut self.live, |l| l.exp, now, max)
            && self.live.values().filter(|l| l.user == user).count() < MAX_GRANTS_PER_USER.min(max)
    }

    /// Spends the code of grant `g` (expiring at `exp`): `Some(true)` the first time,
    /// `Some(false)` when it was spent already, `None` when there is no room to remember it.
    fn spend(&mut self, g: &str, exp: i64, now: i64) -> Option<bool> {
        if self.spent.contains_key(g) {
            return Some(false);
        }
        if !room(&mut self.spent, |e| *e, now, self.max) {
            return None;
        }
        self.spent.insert(g.to_string(), exp);
        Some(true)
    }

    /// Records grant `g` of `user` as begun (its first refresh token is generation 1).
    fn begin(&mut self, g: &str, user: &str, now: i64) -> bool {
        if !self.grant_room(user, now) {
            return false;
        }
        self.live.insert(
            g.to_string(),
            LiveGrant {
                user: user.to_string(),
                next: 1,
                exp: now + REFRESH_TTL,
            },
        );
        true
    }

    /// A refresh of grant `g` with its token of generation `i`.
    fn rotate(&mut self, g: &str, user: &str, i: u64, now: i64) -> Rotation {
        if let Some(l) = self.live.get_mut(g) {
            if i < l.next {
                return Rotation::Reused;
            }
            l.next = i + 1;
            l.exp = now + REFRESH_TTL;
            return Rotation::Ok;
        }
        // A grant of another process (a restart with the key file, another replica).
        if !self.grant_room(user, now) {
            return Rotation::Full;
        }
        self.live.insert(
            g.to_string(),
            LiveGrant {
                user: user.to_string(),
                next: i + 1,
                exp: now + REFRESH_TTL,
            },
        );
        Rotation::Ok
    }

    /// Undoes the rotation of grant `g` from generation `i` (its new tokens were not given).
    fn unrotate(&mut self, g: &str, i: u64) {
        if let Some(l) = self.live.get_mut(g)
            && l.next == i + 1
        {
            l.next = i;
        }
    }

    /// Revokes grant `g`. Always recorded, whatever the table's size: the revoked table grows
    /// past its cap only by grants that exist, and no new grant begins while it is full.
    fn revoke(&mut self, g: &str, now: i64) {
        if self.revoked.len() >= self.max {
            self.revoked.retain(|_, e| *e > now);
        }
        self.live.remove(g);
        self.revoked.insert(g.to_string(), now + REFRESH_TTL);
    }

    /// Takes up form `f` (expiring at `exp`) for one answer.
    fn claim_form(&mut self, f: &str, exp: i64, now: i64) -> Result<(), FormRefusal> {
        if !self.forms.contains_key(f) && !room(&mut self.forms, |u| u.exp, now, self.max) {
            return Err(FormRefusal::Full);
        }
        let u = self.forms.entry(f.to_string()).or_default();
        u.exp = exp;
        if u.used {
            return Err(FormRefusal::Used);
        }
        if u.busy {
            return Err(FormRefusal::Busy);
        }
        if u.attempts >= MAX_FORM_ATTEMPTS {
            return Err(FormRefusal::Attempts);
        }
        u.busy = true;
        Ok(())
    }

    /// Ends an answer of form `f`: `attempted` when it asked Arcane, `used` when it is spent.
    fn release_form(&mut self, f: &str, attempted: bool, used: bool) {
        if let Some(u) = self.forms.get_mut(f) {
            u.busy = false;
            u.attempts += u32::from(attempted);
            u.used |= used;
        }
    }

    /// Reserves a password attempt of `user`, or says why none may be made now: the username
    /// is locked, or the failures plus the attempts already in flight reach the lockout's
    /// count (after a lock, one attempt at a time). Reserved under the lock, before Arcane is
    /// asked: checking the count and asking later let 40 concurrent forms send 40 guesses.
    fn reserve_password(&mut self, user: &str, now: i64) -> Result<(), Wait> {
        let key = user.to_lowercase();
        if !self.failures.contains_key(&key) && !room(&mut self.failures, |f| f.2, now, self.max) {
            // No room to count this username's failures: no password is tried (fail closed).
            return Err(Wait::Locked(LOCK_BASE));
        }
        let failed = match self.failures.get(&key) {
            Some((_, until, _)) if *until > now => return Err(Wait::Locked(until - now)),
            Some((n, _, forget)) if *forget > now => *n,
            _ => 0,
        };
        let flying = self.in_flight.entry(key).or_default();
        if *flying >= MAX_USER_FAILURES.saturating_sub(failed).max(1) {
            return Err(Wait::InFlight);
        }
        *flying += 1;
        Ok(())
    }

    /// Ends a reserved attempt of `user`: `Some(true)` the password worked, `Some(false)` it
    /// was wrong, `None` Arcane said neither (the attempt is not counted).
    fn settle_password(&mut self, user: &str, worked: Option<bool>, now: i64) {
        let key = user.to_lowercase();
        if let Some(n) = self.in_flight.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.in_flight.remove(&key);
            }
        }
        match worked {
            Some(true) => self.password_worked(user),
            Some(false) => self.password_failed(user, now),
            None => {}
        }
    }

    fn password_failed(&mut self, user: &str, now: i64) {
        let key = user.to_lowercase();
        if !self.failures.contains_key(&key) && !room(&mut self.failures, |f| f.2, now, self.max) {
            return;
        }
        let f = self.failures.entry(key).or_insert((0, 0, 0));
        if f.2 <= now {
            *f = (0, 0, 0);
        }
        f.0 += 1;
        if f.0 >= MAX_USER_FAILURES {
            let wait = (LOCK_BASE << (f.0 - MAX_USER_FAILURES).min(4)).min(LOCK_MAX);
            f.1 = now + wait;
        }
        f.2 = now + FAILURE_TTL;
    }

    fn password_worked(&mut self, user: &str) {
        self.failures.remove(&user.to_lowercase());
    }
}

/// The built-in authorization server.
pub struct Issuer {
    /// `--public-url`: the issuer identifier and the base of every endpoint.
    pub issuer: String,
    pub resource: String,
    pub sealer: Sealer,
    pub clients: Clients,
    /// Whether cookies are marked `Secure` (an https public URL).
    secure: bool,
    http: reqwest::Client,
    /// Arcane's base URL and the client of the server's requests to it (its TLS settings,
    /// `--ca-cert` and `--insecure-skip-verify` included), known once the app is built.
    arcane: OnceLock<(String, reqwest::Client)>,
    state: Mutex<State>,
}

/// A grant the gate admitted: who, which client, what it may do, the key.
pub struct IssuedGrant {
    pub user: String,
    /// The grant's ID: the same for every token of one sign-in, refreshed or not.
    pub grant: String,
    pub client: String,
    pub write: bool,
    pub key: String,
}

/// An OAuth error answer (RFC 6749 §5.2) with `Cache-Control: no-store`.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    no_store(
        (
            status,
            axum::Json(json!({"error": error, "error_description": description})),
        )
            .into_response(),
    )
}

fn no_store(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    r
}

fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    if getrandom::fill(&mut b).is_err() {
        // Without randomness nothing may be issued: an empty ID is refused everywhere.
        return String::new();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn digest_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())[..16]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

pub(super) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The parameters of a query or a form body; a parameter given twice is refused (RFC 6749
/// §3.1: which one counts would be anyone's guess).
pub fn params(raw: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(raw) {
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("the parameter {k} is given more than once"));
        }
    }
    Ok(out)
}

/// Whether `verifier` is a PKCE code verifier (RFC 7636 §4.1) whose S256 digest is
/// `challenge`, compared in constant time.
pub fn pkce_ok(verifier: &str, challenge: &str) -> bool {
    use subtle::ConstantTimeEq;
    let shaped = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let made = B64.encode(Sha256::digest(verifier.as_bytes()));
    shaped && bool::from(made.as_bytes().ct_eq(challenge.as_bytes()))
}

/// Where a redirect URI sends the person, as the page names it (its origin, or its scheme).
fn returns_to(uri: &str) -> (String, String) {
    match url::Url::parse(uri) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
            let o = u.origin().ascii_serialization();
            (u.host_str().unwrap_or("").to_string(), o)
        }
        Ok(u) => (
            format!("the app ({}:)", u.scheme()),
            format!("{}:", u.scheme()),
        ),
        Err(_) => (String::new(), String::new()),
    }
}

/// `uri` with `params` added to its query.
fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    match url::Url::parse(uri) {
        Ok(mut u) => {
            {
                let mut q = u.query_pairs_mut();
                for (k, v) in params {
                    q.append_pair(k, v);
                }
            }
            u.to_string()
        }
        Err(_) => uri.to_string(),
    }
}

fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// A member of an Arcane answer: inside its `data` envelope, or (as some of Arcane's sign-in
/// answers are) beside it.
pub(super) fn pick<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get("data")
        .and_then(|d| d.get(key))
        .or_else(|| v.get(key))
}

/// How a sign-in went wrong, for the page.
pub(super) enum SignIn {
    Again(String),
    /// Arcane refused the username and password (counted against the username).
    Wrong(String),
    Failed(String),
}

/// Who vouches for the client's name, as the page says: a registration names itself (anyone
/// may register any name), a metadata document is vouched for by its URL's host.
fn name_note(client: &Client) -> String {
    match url::Url::parse(&client.id) {
        Ok(u) if client.id.starts_with("http") => {
            format!("its metadata is at {}", u.host_str().unwrap_or(""))
        }
        _ => "a name the client gave itself, not checked".to_string(),
    }
}

impl Issuer {
    pub fn new(
        public_url: &str,
        resource: &str,
        sealer: Sealer,
        allow_private: bool,
        tls: std::sync::Arc<rustls::ClientConfig>,
        http: reqwest::Client,
    ) -> Issuer {
        Issuer {
            issuer: public_url.to_string(),
            resource: resource.to_string(),
            // Sealed data opens only at this issuer: a key file shared by two deployments does
            // not make one's tokens good at the other.
            sealer: sealer.bound_to(public_url),
            clients: Clients::new(allow_private, tls),
            secure: public_url.starts_with("https://"),
            http,
            arcane: OnceLock::new(),
            state: Mutex::new(State::new(MAX_STATE)),
        }
    }

    /// Tells the issuer where Arcane is and how to reach it (once the app is built).
    pub fn set_arcane(&self, base_url: &str, client: reqwest::Client) {
        let _ = self
            .arcane
            .set((base_url.trim_end_matches('/').to_string(), client));
    }

    pub(super) fn arcane(&self, path: &str) -> String {
        let base = self.arcane.get().map_or("", |(b, _)| b.as_str());
        format!("{base}/api{path}")
    }

    /// The client to Arcane (the identity provider's until the app has set its own).
    pub(super) fn to_arcane(&self) -> &reqwest::Client {
        self.arcane.get().map_or(&self.http, |(_, c)| c)
    }

    /// Why a request naming another resource (RFC 8707 `resource`) is refused; `None` for
    /// this server's or none.
    fn other_resource(&self, p: &HashMap<String, String>) -> Option<String> {
        p.get("resource")
            .filter(|res| res.trim_end_matches('/') != self.resource)
            .map(|_| format!("this server issues tokens for {} only", self.resource))
    }

    fn csrf_cookie(&self) -> &'static str {
        if self.secure {
            CSRF_COOKIE_HOST
        } else {
            CSRF_COOKIE
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The authorization-server metadata (RFC 8414 §2).
    pub fn metadata(&self) -> Value {
        let at = |p: &str| format!("{}/{p}", self.issuer);
        json!({
            "issuer": self.issuer,
            "authorization_endpoint": at("authorize"),
            "token_endpoint": at("token"),
            "registration_endpoint": at("register"),
            "revocation_endpoint": at("revoke"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [SCOPE_READ, SCOPE_WRITE],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "service_documentation": "https://github.com/arcane-mcp/arcane-mcp/blob/main/docs/oauth.md",
        })
    }

    /// `POST /register` (RFC 7591).
    pub fn register(&self, body: &[u8]) -> Response {
        match super::clients::register(&self.sealer, body) {
            Ok(v) => no_store((StatusCode::CREATED, axum::Json(v)).into_response()),
            Err(e) => oauth_error(StatusCode::BAD_REQUEST, e.error, &e.description),
        }
    }

    /// `GET /authorize`: the request checked, then the sign-in page. Until the client and its
    /// redirect URI are known good, errors end here on a page (RFC 6749 §4.1.2.1); after,
    /// they go back to the client.
    pub async fn authorize(&self, query: Option<&str>, headers: &HeaderMap) -> Response {
        let nonce = random_hex(16);
        let p = match params(query.unwrap_or("").as_bytes()) {
            Ok(p) => p,
            Err(why) => return page::error(&nonce, StatusCode::BAD_REQUEST, &why),
        };
        let Some(client_id) = p.get("client_id") else {
            return page::error(
                &nonce,
                StatusCode::BAD_REQUEST,
                "The request names no client (client_id).",
            );
        };
        let client = match self.clients.find(&self.sealer, client_id).await {
            Ok(c) => c,
            Err(why) => {
                return page::error(
                    &nonce,
                    StatusCode::BAD_REQUEST,
                    &format!("The client is unknown: {why}."),
                );
            }
        };
        // Required even when the client has one (OAuth 2.1 §4.1.1): the token request must
        // then repeat it, and the code is bound to it.
        let redirect = match p.get("redirect_uri") {
            Some(r) if client.redirects_to(r) => r.clone(),
            None => {
                return page::error(
                    &nonce,
                    StatusCode::BAD_REQUEST,
                    "The request names no redirect URI (redirect_uri).",
                );
            }
            _ => {
                return page::error(
                    &nonce,
                    StatusCode::BAD_REQUEST,
                    "The redirect URI is not one this client registered (it must match exactly; \
                     only a loopback http:// one may name another port).",
                );
            }
        };
        let state = p.get("state").cloned();
        let (returns, target) = returns_to(&redirect);
        // Registration is open, so a registered redirect URI proves nothing about who gets the
        // person: an error is shown here, never redirected to automatically (RFC 9700
        // §4.11.2); the page links back with the error for the person to follow.
        let back = |error: &str, description: &str| {
            let mut q = vec![("error", error), ("error_description", description)];
            if let Some(s) = &state {
                q.push(("state", s));
            }
            q.push(("iss", &self.issuer));
            page::error_back(
                &nonce,
                StatusCode::BAD_REQUEST,
                description,
                &with_query(&redirect, &q),
                &returns,
            )
        };
        if let Some(s) = &state
            && (s.len() > MAX_STATE_PARAM || !s.bytes().all(|b| (0x20..=0x7e).contains(&b)))
        {
            return page::error(
                &nonce,
                StatusCode::BAD_REQUEST,
                &format!(
                    "The state parameter is longer than {MAX_STATE_PARAM} characters or holds \
                     characters other than printable ASCII (RFC 6749 appendix A.5)."
                ),
            );
        }
        if p.get("response_type").map(String::as_str) != Some("code") {
            return back(
                "unsupported_response_type",
                "only response_type=code is supported",
            );
        }
        let Some(challenge) = p.get("code_challenge") else {
            return back(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method=S256",
            );
        };
        if p.get("code_challenge_method").map(String::as_str) != Some("S256") {
            return back(
                "invalid_request",
                "only code_challenge_method=S256 is supported (never plain)",
            );
        }
        if challenge.len() != 43 || B64.decode(challenge).map_or(true, |d| d.len() != 32) {
            return back(
                "invalid_request",
                "code_challenge is not the base64url of a SHA-256 digest",
            );
        }
        if let Some(why) = self.other_resource(&p) {
            return back("invalid_target", &why);
        }
        // Without a scope the client gets what it may ask for; `arcane:read` alone reads.
        let scopes: Vec<&str> = p
            .get("scope")
            .map_or(vec![], |s| s.split_whitespace().collect());
        let write = scopes.is_empty() || scopes.contains(&SCOPE_WRITE);
        if !scopes.is_empty() && !write && !scopes.contains(&SCOPE_READ) {
            return back(
                "invalid_scope",
                &format!("ask for {SCOPE_READ} or {SCOPE_WRITE}"),
            );
        }
        // Always a new value: one chosen by whoever could set the cookie (a sibling host, a
        // script on another page of this origin) is never adopted.
        let _ = headers;
        let csrf = random_hex(16);
        let form = SignInForm {
            c: client.id.clone(),
            r: redirect.clone(),
            ch: challenge.clone(),
            st: state.clone(),
            w: write,
            x: csrf.clone(),
            e: now() + FORM_TTL,
            f: random_hex(16),
        };
        let Ok(sealed) = self.sealer.seal(Kind::Form, &form) else {
            return page::error(
                &nonce,
                StatusCode::INTERNAL_SERVER_ERROR,
                "The sign-in form could not be made.",
            );
        };
        let note = name_note(&client);
        let mut r = page::render(
            &page::Page {
                client: &client.name,
                name_note: &note,
                returns_to: &returns,
                write,
                form: &sealed,
                csrf: &csrf,
                message: None,
                username: "",
            },
            &nonce,
            StatusCode::OK,
            &target,
        );
        let secure = if self.secure { "; Secure" } else { "" };
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{}={csrf}; Path=/; HttpOnly; SameSite=Strict; Max-Age={FORM_TTL}{secure}",
            self.csrf_cookie()
        )) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        r
    }

    /// `POST /authorize`: the person's answer to the sign-in page.
    pub async fn authorize_answer(&self, body: &[u8], headers: &HeaderMap) -> Response {
        let nonce = random_hex(16);
        let p = match params(body) {
            Ok(p) => p,
            Err(why) => return page::error(&nonce, StatusCode::BAD_REQUEST, &why),
        };
        let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
        let Some(form) = self.sealer.open::<SignInForm>(Kind::Form, get("form")) else {
            return page::error(
                &nonce,
                StatusCode::BAD_REQUEST,
                "This sign-in form was not made by this server.",
            );
        };
        if form.e < now() {
            return page::error(
                &nonce,
                StatusCode::BAD_REQUEST,
                "This sign-in form has expired (10 minutes).",
            );
        }
        if form.f.is_empty() {
            return page::error(
                &nonce,
                StatusCode::BAD_REQUEST,
                "This sign-in form was not made by this server.",
            );
        }
        // The CSRF token: in the sealed form, in the page's field and in the cookie only this
        // server's page set. A page elsewhere can post neither the cookie nor a form whose
        // sealed token matches the person's cookie.
        use subtle::ConstantTimeEq;
        let cookie = cookie(headers, self.csrf_cookie()).unwrap_or_default();
        let field = get("csrf");
        let same = |a: &str, b: &str| bool::from(a.as_bytes().ct_eq(b.as_bytes()));
        if form.x.is_empty() || !same(&form.x, field) || !same(&form.x, &cookie) {
            return page::error(
                &nonce,
                StatusCode::FORBIDDEN,
                "This sign-in was not sent from this server's page (its CSRF token does not match). Connect again from the application.",
            );
        }
        let client = match self.clients.find(&self.sealer, &form.c).await {
            Ok(c) => c,
            Err(why) => return page::error(&nonce, StatusCode::BAD_REQUEST, &why),
        };
        let (returns, target) = returns_to(&form.r);
        let claimed = self.state().claim_form(&form.f, form.e, now());
        if let Err(why) = claimed {
            let (status, text) = match why {
                FormRefusal::Used => (
                    StatusCode::BAD_REQUEST,
                    "This sign-in form was already used. Connect again from the application.",
                ),
                FormRefusal::Busy => (
                    StatusCode::CONFLICT,
                    "This sign-in form is being answered already; wait for that answer.",
                ),
                FormRefusal::Attempts => (
                    StatusCode::TOO_MANY_REQUESTS,
                    "This sign-in form was tried too many times. Wait a minute, then connect again from the application.",
                ),
                FormRefusal::Full => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "This server has too many sign-ins under way; wait a few minutes and connect again.",
                ),
            };
            return page::error(&nonce, status, text);
        }
        let answered = self
            .answer(&form, &client, &p, &nonce, &returns, &target)
            .await;
        let (attempted, used) = (answered.1, answered.2);
        self.state().release_form(&form.f, attempted, used);
        answered.0
    }

    /// The answer to a claimed form; whether it asked Arcane, and whether the form is spent.
    async fn answer(
        &self,
        form: &SignInForm,
        client: &Client,
        p: &HashMap<String, String>,
        nonce: &str,
        returns: &str,
        target: &str,
    ) -> (Response, bool, bool) {
        let nonce = nonce.to_string();
        let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
        let back = |q: &[(&str, &str)]| {
            let mut q = q.to_vec();
            if let Some(s) = &form.st {
                q.push(("state", s));
            }
            q.push(("iss", &self.issuer));
            see_other(&with_query(&form.r, &q))
        };
        let write = form.w && get("access") != "read";
        let username = get("username").trim();
        let signed = match get("method") {
            "deny" => {
                let r = back(&[
                    ("error", "access_denied"),
                    ("error_description", "the person cancelled the sign-in"),
                ]);
                return (r, false, true);
            }
            "password" if !username.is_empty() && !get("password").is_empty() => {
                let reserved = self.state().reserve_password(username, now());
                if let Err(wait) = reserved {
                    let text = match wait {
                        Wait::Locked(wait) => format!(
                            "Too many wrong passwords for this username: wait {wait} seconds, then try again (or paste an API key)."
                        ),
                        Wait::InFlight => "Other sign-ins with this username are being checked: wait for them, then try again (or paste an API key).".to_string(),
                    };
                    return (
                        page::error(&nonce, StatusCode::TOO_MANY_REQUESTS, &text),
                        false,
                        false,
                    );
                }
                let mut attempt = Attempt {
                    issuer: self,
                    user: username.to_string(),
                    worked: None,
                };
                let r = self.sign_in(username, get("password"), client).await;
                attempt.worked = match &r {
                    Err(SignIn::Wrong(_)) => Some(false),
                    Ok(_) => Some(true),
                    _ => None,
                };
                drop(attempt);
                (r, true)
            }
            "password" => (self.sign_in(username, "", client).await, false),
            "key" => {
                let key = get("api_key").trim();
                (self.with_key(key).await, !key.is_empty())
            }
            _ => (Err(SignIn::Again("Choose how to sign in.".into())), false),
        };
        let (signed, attempted) = signed;
        let (user, key) = match signed {
            Ok(x) => x,
            Err(SignIn::Again(message) | SignIn::Wrong(message)) => {
                let note = name_note(client);
                let r = page::render(
                    &page::Page {
                        client: &client.name,
                        name_note: &note,
                        returns_to: returns,
                        write: form.w,
                        form: get("form"),
                        csrf: &form.x,
                        message: Some(&message),
                        username: get("username"),
                    },
                    &nonce,
                    StatusCode::OK,
                    target,
                );
                return (r, attempted, false);
            }
            Err(SignIn::Failed(why)) => {
                return (
                    page::error(&nonce, StatusCode::BAD_GATEWAY, &why),
                    attempted,
                    false,
                );
            }
        };
        let grant = Grant {
            g: random_hex(16),
            c: digest_hex(&client.id),
            n: client.name.clone(),
            u: user,
            k: key,
            w: write,
            e: now() + CODE_TTL,
            r: Some(form.r.clone()),
            ch: Some(form.ch.clone()),
            i: 0,
        };
        match self.sealer.seal(Kind::Code, &grant) {
            Ok(code) if !grant.g.is_empty() => {
                tracing::info!(user = %grant.u, client = %grant.c, client_name = %grant.n, write, "OAuth sign-in: code issued");
                (back(&[("code", &code)]), attempted, true)
            }
            _ => (
                page::error(
                    &nonce,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The sign-in could not be completed.",
                ),
                attempted,
                true,
            ),
        }
    }

    /// Whether Arcane still takes `key`. For an access token a positive answer is trusted for
    /// a minute (each call would otherwise cost Arcane a second request); a refresh asks
    /// afresh (`fresh`). Arcane unreachable counts as yes: the call will say so itself.
    /// `Err` when Arcane did not say (unreachable, an error): only a yes is cached.
    async fn key_alive(&self, key: &str, fresh: bool) -> Result<bool, ()> {
        let d: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if !fresh
            && let Some(at) = self.state().alive.get(&d)
            && at.elapsed() < KEY_CHECK_TTL
        {
            return Ok(true);
        }
        let answer = self.whoami(key).await.map(|w| w.is_some());
        let mut st = self.state();
        if answer == Ok(true) {
            if st.alive.len() >= st.max {
                st.alive.clear();
            }
            st.alive.insert(d, Instant::now());
        } else {
            st.alive.remove(&d);
        }
        answer
    }

    fn revoke_grant(&self, g: &str) {
        self.state().revoke(g, now());
    }

    fn revoked(&self, g: &str) -> bool {
        self.state().revoked.contains_key(g)
    }

    /// Access and refresh tokens for `grant` (its refresh generation `next`).
    fn tokens(&self, grant: &Grant, next: u64) -> Response {
        let access = Grant {
            e: now() + ACCESS_TTL,
            r: None,
            ch: None,
            i: 0,
            ..grant.clone()
        };
        let refresh = Grant {
            e: now() + REFRESH_TTL,
            r: None,
            ch: None,
            i: next,
            ..grant.clone()
        };
        let (Ok(a), Ok(r)) = (
            self.sealer.seal(Kind::Access, &access),
            self.sealer.seal(Kind::Refresh, &refresh),
        ) else {
            return oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "the tokens could not be sealed",
            );
        };
        let scope = if grant.w {
            format!("{SCOPE_READ} {SCOPE_WRITE}")
        } else {
            SCOPE_READ.to_string()
        };
        no_store(
            axum::Json(json!({
                "access_token": a,
                "token_type": "Bearer",
                "expires_in": ACCESS_TTL,
                "refresh_token": r,
                "scope": scope,
            }))
            .into_response(),
        )
    }

    /// `POST /token`: a code or a refresh token for new tokens.
    pub async fn token(&self, body: &[u8], headers: &HeaderMap) -> Response {
        let bad = |e: &str, d: &str| oauth_error(StatusCode::BAD_REQUEST, e, d);
        let p = match params(body) {
            Ok(p) => p,
            Err(why) => return bad("invalid_request", &why),
        };
        let get = |k: &str| p.get(k).map(String::as_str).unwrap_or("");
        // A public client names itself in the body; one that sends HTTP Basic names itself
        // there (its secret, having been issued none, is not checked).
        let basic = basic_client(headers);
        let client_id = match (get("client_id"), basic.as_deref()) {
            ("", Some(b)) => b.to_string(),
            (c, Some(b)) if c != b => {
                return bad(
                    "invalid_request",
                    "client_id differs from the client of the Authorization header",
                );
            }
            (c, _) => c.to_string(),
        };
        if client_id.is_empty() {
            return oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client_id is required",
            );
        }
        // RFC 8707 §2.2: a token asked for another resource is refused, not handed out for
        // this one — the client would take it for a token of the resource it named.
        if let Some(why) = self.other_resource(&p) {
            return bad("invalid_target", &why);
        }
        let sign_in_again = |d: &str| bad("invalid_grant", &format!("{d}: sign in again"));
        let busy = || {
            oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "this server holds as many grants as it can (or this user holds their share); retry later, or revoke unused sign-ins",
            )
        };
        match get("grant_type") {
            "authorization_code" => {
                let Some(code) = self.sealer.open::<Grant>(Kind::Code, get("code")) else {
                    return sign_in_again("the code is not one this server issued");
                };
                if code.c != digest_hex(&client_id) {
                    return sign_in_again("the code was issued to another client");
                }
                if code.e < now() {
                    return sign_in_again("the code has expired");
                }
                if code.r.as_deref() != Some(get("redirect_uri")) {
                    return sign_in_again(
                        "redirect_uri is not the one of the authorization request",
                    );
                }
                if !pkce_ok(get("code_verifier"), code.ch.as_deref().unwrap_or("")) {
                    return sign_in_again(
                        "the PKCE code_verifier does not match the code_challenge",
                    );
                }
                let spent = self.state().spend(&code.g, code.e, now());
                let Some(first) = spent else {
                    return busy();
                };
                if !first {
                    // RFC 6749 §4.1.2: a code used twice is stolen; what it gave is revoked.
                    tracing::warn!(client = %code.n, user = %code.u, "OAuth code used twice: its grant is revoked");
                    self.revoke_grant(&code.g);
                    return sign_in_again("the code was used already (its tokens are now revoked)");
                }
                if self.revoked(&code.g) {
                    return sign_in_again("this grant was revoked");
                }
                if !self.state().begin(&code.g, &code.u, now()) {
                    return busy();
                }
                self.tokens(&code, 1)
            }
            "refresh_token" => {
                let Some(rt) = self
                    .sealer
                    .open::<Grant>(Kind::Refresh, get("refresh_token"))
                else {
                    return sign_in_again("the refresh token is not one this server issued");
                };
                if rt.c != digest_hex(&client_id) {
                    return sign_in_again("the refresh token was issued to another client");
                }
                if rt.e < now() {
                    return sign_in_again("the refresh token has expired");
                }
                if self.revoked(&rt.g) {
                    return sign_in_again("this grant was revoked");
                }
                let rotation = self.state().rotate(&rt.g, &rt.u, rt.i, now());
                if rotation == Rotation::Full {
                    return busy();
                }
                if rotation == Rotation::Reused {
                    // A spent refresh token presented again: one of its two holders is not the
                    // client; the grant ends for both (OAuth 2.1 §4.3.1).
                    tracing::warn!(client = %rt.n, user = %rt.u, "OAuth refresh token reused: its grant is revoked");
                    self.revoke_grant(&rt.g);
                    return sign_in_again(
                        "the refresh token was used already (the grant is now revoked)",
                    );
                }
                let alive = self.key_alive(&rt.k, true).await;
                let Ok(alive) = alive else {
                    // Arcane did not say the key works: no new tokens on that (the refresh
                    // token stays good for a retry).
                    self.state().unrotate(&rt.g, rt.i);
                    return oauth_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "temporarily_unavailable",
                        "Arcane could not be asked whether the API key of this sign-in still works; retry the refresh later",
                    );
                };
                if !alive {
                    self.revoke_grant(&rt.g);
                    return sign_in_again(
                        "Arcane no longer accepts the API key of this sign-in (it was deleted or expired in Arcane)",
                    );
                }
                // A refresh may narrow the grant to reading (RFC 6749 §6), never widen it.
                let scope: Vec<&str> = get("scope").split_whitespace().collect();
                let write = rt.w && (scope.is_empty() || scope.contains(&SCOPE_WRITE));
                let next = rt.i + 1;
                self.tokens(&Grant { w: write, ..rt }, next)
            }
            "" => bad("invalid_request", "grant_type is required"),
            other => bad(
                "unsupported_grant_type",
                &format!(
                    "grant_type {other} is not supported: use authorization_code or refresh_token"
                ),
            ),
        }
    }

    /// `POST /revoke` (RFC 7009): the grant of an access or refresh token ends. The answer
    /// is 200 whatever the token (§2.2: an invalid token is no error).
    pub fn revoke(&self, body: &[u8], headers: &HeaderMap) -> Response {
        let Ok(p) = params(body) else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "a parameter is given twice",
            );
        };
        let token = p.get("token").map(String::as_str).unwrap_or("");
        let client = p
            .get("client_id")
            .cloned()
            .or_else(|| basic_client(headers));
        let grant = self
            .sealer
            .open::<Grant>(Kind::Refresh, token)
            .or_else(|| self.sealer.open::<Grant>(Kind::Access, token));
        // Only the client a token was issued to may revoke it (§2.1).
        if let (Some(g), Some(c)) = (grant, client)
            && g.c == digest_hex(&c)
        {
            tracing::info!(client = %g.c, client_name = %g.n, user = %g.u, "OAuth grant revoked by its client");
            self.revoke_grant(&g.g);
        }
        no_store(StatusCode::OK.into_response())
    }

    /// Opens an access token: the grant it carries, or why it is refused.
    pub async fn admit(&self, token: &str) -> Result<IssuedGrant, String> {
        let Some(g) = self.sealer.open::<Grant>(Kind::Access, token) else {
            return Err(if token.starts_with(Kind::Access.prefix()) {
                "it was not issued by this server's current key (a restart without \
                 --state-key-file, or another key file)"
                    .into()
            } else {
                "it is not an access token of this server".into()
            });
        };
        if g.e < now() {
            return Err("it has expired".into());
        }
        if self.revoked(&g.g) {
            return Err("its grant was revoked".into());
        }
        // An access token lives 15 minutes: when Arcane cannot be asked, the call goes on and
        // Arcane itself refuses a dead key.
        if self.key_alive(&g.k, false).await == Ok(false) {
            return Err(
                "Arcane no longer accepts the API key of this sign-in (it was deleted or \
                        expired in Arcane)"
                    .into(),
            );
        }
        Ok(IssuedGrant {
            user: g.u,
            grant: g.g,
            // The audit log names the client by its ID's digest first: the name is only what
            // the client calls itself.
            client: format!("{} ({})", g.c, g.n),
            write: g.w,
            key: g.k,
        })
    }
}

/// The client ID of an HTTP Basic `Authorization` header (RFC 6749 §2.3.1), if any.
fn basic_client(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let id = text.split_once(':').map_or(text.as_str(), |(a, _)| a);
    Some(
        percent_encoding::percent_decode_str(id)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_takes_s256_of_a_well_formed_verifier_only() {
        // RFC 7636 appendix B.
        let v = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(pkce_ok(v, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        // `plain` (the verifier as its own challenge) is not S256.
        assert!(!pkce_ok(v, v));
        assert!(!pkce_ok(
            "short",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_ok("", ""));
    }

    #[test]
    fn a_full_table_refuses_new_grants_and_forgets_no_revocation() {
        let mut st = State::new(4);
        let n = 1_000;
        for i in 0..4 {
            assert!(st.begin(&format!("g{i}"), "alice", n), "g{i}");
        }
        // Full: a new grant (and a foreign grant's first refresh) waits; none is dropped.
        assert!(!st.begin("g4", "alice", n));
        assert_eq!(st.rotate("g9", "bob", 3, n), Rotation::Full);
        assert_eq!(st.rotate("g0", "alice", 1, n), Rotation::Ok);
        assert_eq!(st.rotate("g0", "alice", 1, n), Rotation::Reused);
        for i in 0..6 {
            st.revoke(&format!("r{i}"), n);
        }
        for i in 0..6 {
            assert!(st.revoked.contains_key(&format!("r{i}")), "r{i}");
        }
        assert!(!st.begin("g5", "carol", n), "the revoked table is full");
        // Once the entries expire, there is room again.
        let later = n + REFRESH_TTL + 1;
        assert!(st.begin("g5", "carol", later));
        assert!(st.spend("c", later + 60, later).unwrap());
        assert!(!st.spend("c", later + 60, later).unwrap());
    }

    #[test]
    fn one_user_holds_only_their_share_of_grants() {
        let mut st = State::new(MAX_GRANTS_PER_USER + 10);
        for i in 0..MAX_GRANTS_PER_USER {
            assert!(st.begin(&format!("g{i}"), "alice", 0));
        }
        assert!(!st.begin("more", "alice", 0));
        assert!(st.begin("more", "bob", 0));
    }

    #[test]
    fn a_form_is_answered_once_and_tried_a_few_times() {
        let mut st = State::new(16);
        assert_eq!(st.claim_form("f", 100, 0), Ok(()));
        assert_eq!(st.claim_form("f", 100, 0), Err(FormRefusal::Busy));
        st.release_form("f", true, false);
        for _ in 1..MAX_FORM_ATTEMPTS {
            assert_eq!(st.claim_form("f", 100, 0), Ok(()));
            st.release_form("f", true, false);
        }
        assert_eq!(st.claim_form("f", 100, 0), Err(FormRefusal::Attempts));
        assert_eq!(st.claim_form("g", 100, 0), Ok(()));
        st.release_form("g", true, true);
        assert_eq!(st.claim_form("g", 100, 0), Err(FormRefusal::Used));
        // A username waits after five wrong passwords, longer after more.
        for _ in 0..MAX_USER_FAILURES {
            assert_eq!(st.reserve_password("Alice", 0), Ok(()));
            st.settle_password("Alice", Some(false), 0);
        }
        assert_eq!(
            st.reserve_password("alice", 0),
            Err(Wait::Locked(LOCK_BASE))
        );
        st.password_failed("alice", 0);
        assert_eq!(
            st.reserve_password("alice", 0),
            Err(Wait::Locked(2 * LOCK_BASE))
        );
        assert_eq!(st.reserve_password("bob", 0), Ok(()));
        st.settle_password("bob", None, 0);
        st.password_worked("alice");
        assert_eq!(st.reserve_password("alice", 0), Ok(()));
        st.settle_password("alice", Some(true), 0);
        // Attempts in flight count with the failures: never more than five guesses at once,
        // and after a lock one at a time.
        for _ in 0..MAX_USER_FAILURES {
            assert_eq!(st.reserve_password("carol", 0), Ok(()));
        }
        assert_eq!(st.reserve_password("carol", 0), Err(Wait::InFlight));
        for _ in 0..MAX_USER_FAILURES {
            st.settle_password("carol", Some(false), 0);
        }
        let later = 10 * LOCK_MAX;
        assert_eq!(st.reserve_password("carol", LOCK_BASE), Ok(()));
        assert_eq!(st.reserve_password("carol", LOCK_BASE), Err(Wait::InFlight));
        st.settle_password("carol", None, LOCK_BASE);
        assert!(st.in_flight.is_empty(), "{:?}", st.in_flight);
        // Failures are forgotten after a while: five more may be tried.
        for _ in 0..MAX_USER_FAILURES {
            assert_eq!(st.reserve_password("carol", later), Ok(()));
        }
    }

    #[test]
    fn a_parameter_given_twice_is_refused() {
        assert!(params(b"a=1&b=2").is_ok());
        assert!(
            params(b"redirect_uri=x&redirect_uri=y")
                .unwrap_err()
                .contains("redirect_uri")
        );
    }
}
