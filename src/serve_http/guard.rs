//! The gate in front of `/mcp` and `/metrics`: bearer tokens (compared in constant time), the
//! caller's Arcane key policy, and a per-client rate limit (docs/security.md).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::KeySource;

/// The header carrying a caller's own Arcane API key.
pub const CLIENT_KEY_HEADER: &str = "x-arcane-api-key";

/// The accepted bearer tokens, kept only as SHA-256 digests: comparing digests in constant time
/// reveals neither a token's bytes nor its length through timing.
pub struct Tokens(Vec<[u8; 32]>);

impl Tokens {
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Tokens {
        Tokens(
            tokens
                .into_iter()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(digest)
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `presented` is one of the tokens. Every token is compared, so the time taken
    /// does not say which one matched.
    pub fn accepts(&self, presented: &str) -> bool {
        let d = digest(presented);
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, t| found | t.ct_eq(&d))
            .into()
    }
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Parses a token file: one token per line; blank lines and `#` comments are skipped.
pub fn tokens_from_file(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Checks one request to a guarded path; `Err` is the answer to send instead.
pub fn check(
    tokens: &Tokens,
    key_source: KeySource,
    headers: &HeaderMap,
    mcp: bool,
) -> Result<(), Refusal> {
    if !tokens.is_empty() {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        match presented {
            None => {
                return Err(unauthorized(
                    r#"Bearer realm="arcane-mcp""#,
                    "Missing bearer token: send `Authorization: Bearer <token>` with a token \
                     from the server's ARCANE_MCP_AUTH_TOKEN.",
                ));
            }
            Some(t) if !tokens.accepts(t) => {
                return Err(unauthorized(
                    r#"Bearer realm="arcane-mcp", error="invalid_token""#,
                    "The bearer token is not accepted by this server; ask its operator for a \
                     valid one.",
                ));
            }
            Some(_) => {}
        }
    }
    if !mcp {
        return Ok(());
    }
    let client_key = headers
        .get(CLIENT_KEY_HEADER)
        .map(|v| v.to_str().map(str::trim).unwrap_or(""));
    match (key_source, client_key) {
        (KeySource::Server, Some(_)) => Err(bad_request(
            "This server runs every call with its own Arcane key \
             (ARCANE_MCP_ARCANE_KEY_SOURCE=server) and does not accept X-Arcane-API-Key; \
             remove the header, or ask the operator to allow client keys.",
        )),
        (KeySource::Client, None) => Err(unauthorized(
            r#"Bearer realm="arcane-mcp""#,
            "This server runs calls with each user's own Arcane key: send it in the \
             X-Arcane-API-Key header (create one in Arcane under Settings → API Keys).",
        )),
        (_, Some("")) => Err(bad_request(
            "X-Arcane-API-Key is empty or not text; send your Arcane API key.",
        )),
        _ => Ok(()),
    }
}

/// The caller's Arcane key of a request, when the policy lets it be used.
pub fn client_key(key_source: KeySource, headers: &HeaderMap) -> Option<String> {
    if key_source == KeySource::Server {
        return None;
    }
    headers
        .get(CLIENT_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
}

/// A refused request: its status, the `WWW-Authenticate` challenge of a 401, what to do.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub challenge: Option<&'static str>,
    pub text: &'static str,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = plain(self.status, self.text);
        if let Some(c) = self.challenge {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        r
    }
}

fn unauthorized(challenge: &'static str, text: &'static str) -> Refusal {
    Refusal {
        status: StatusCode::UNAUTHORIZED,
        challenge: Some(challenge),
        text,
    }
}

fn bad_request(text: &'static str) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        challenge: None,
        text,
    }
}

pub fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Most client addresses remembered at once; beyond it, buckets that have refilled are
/// forgotten first, then the whole table (a flood of addresses costs bounded memory).
const MAX_CLIENTS: usize = 10_000;

/// A token bucket per client address: `per_minute` requests, refilled continuously.
pub struct RateLimit {
    per_minute: f64,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimit {
    pub fn new(per_minute: u32) -> RateLimit {
        RateLimit {
            per_minute: f64::from(per_minute.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// Takes one request from `client`'s bucket; `Err(seconds)` says when to retry.
    pub fn take(&self, client: IpAddr) -> Result<(), u64> {
        self.take_at(client, Instant::now())
    }

    fn take_at(&self, client: IpAddr, now: Instant) -> Result<(), u64> {
        let rate = self.per_minute / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_CLIENTS && !buckets.contains_key(&client) {
            let full = self.per_minute;
            buckets.retain(|_, (level, at)| {
                *level + now.saturating_duration_since(*at).as_secs_f64() * rate < full
            });
            if buckets.len() >= MAX_CLIENTS {
                buckets.clear();
            }
        }
        let (level, at) = buckets.entry(client).or_insert((self.per_minute, now));
        *level =
            (*level + now.saturating_duration_since(*at).as_secs_f64() * rate).min(self.per_minute);
        *at = now;
        if *level >= 1.0 {
            *level -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *level) / rate).ceil() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tokens_accept_only_their_own() {
        let t = Tokens::new(["alpha", " beta ", ""]);
        assert_eq!(t.len(), 2);
        assert!(t.accepts("alpha") && t.accepts("beta"));
        assert!(!t.accepts("alph") && !t.accepts("alphaa") && !t.accepts(""));
    }

    #[test]
    fn token_file_skips_comments_and_blanks() {
        assert_eq!(
            tokens_from_file("# team\n  one \n\ntwo\n"),
            vec!["one".to_string(), "two".to_string()]
        );
    }

    #[test]
    fn fingerprint_is_short_stable_and_not_the_key() {
        use arcane_engine::fingerprint;
        let f = fingerprint("secret-key-123");
        assert_eq!(f.len(), 12);
        assert_eq!(f, fingerprint("secret-key-123"));
        assert_ne!(f, fingerprint("secret-key-124"));
        assert!(!f.contains("secret"));
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn bearer_and_client_key_rules() {
        let t = Tokens::new(["tok"]);
        let status = |src, h: &HeaderMap| check(&t, src, h, true).err().map(|r| r.status);
        let ok = headers(&[("authorization", "Bearer tok")]);
        assert_eq!(status(KeySource::Server, &ok), None);
        let missing = headers(&[]);
        let r = check(&t, KeySource::Server, &missing, true)
            .unwrap_err()
            .into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(
            r.headers()[header::WWW_AUTHENTICATE]
                .to_str()
                .unwrap()
                .starts_with("Bearer")
        );
        let wrong = headers(&[("authorization", "Bearer nope")]);
        assert_eq!(
            status(KeySource::Server, &wrong),
            Some(StatusCode::UNAUTHORIZED)
        );
        let with_key = headers(&[("authorization", "Bearer tok"), ("x-arcane-api-key", "k1")]);
        assert_eq!(
            status(KeySource::Server, &with_key),
            Some(StatusCode::BAD_REQUEST)
        );
        assert_eq!(status(KeySource::Client, &with_key), None);
        assert_eq!(status(KeySource::Either, &with_key), None);
        assert_eq!(
            status(KeySource::Client, &ok),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(status(KeySource::Either, &ok), None);
        assert_eq!(
            client_key(KeySource::Either, &with_key).as_deref(),
            Some("k1")
        );
        assert_eq!(client_key(KeySource::Server, &with_key), None);
        // Health-style paths need only the token.
        assert!(check(&t, KeySource::Client, &ok, false).is_ok());
    }

    #[test]
    fn rate_limit_refills_and_bounds_memory() {
        let rl = RateLimit::new(60);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..60 {
            rl.take_at(ip, t0).unwrap();
        }
        assert_eq!(rl.take_at(ip, t0), Err(1));
        rl.take_at(ip, t0 + Duration::from_secs(1)).unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        rl.take_at(other, t0).unwrap();
        for i in 0..(MAX_CLIENTS as u32 + 10) {
            let a = IpAddr::from(std::net::Ipv4Addr::from(0x0b00_0000 + i));
            let _ = rl.take_at(a, t0);
        }
        assert!(rl.buckets.lock().unwrap().len() <= MAX_CLIENTS);
    }
}
