//! The gate in front of `/mcp` and `/metrics`: bearer tokens (compared in constant time), the
//! caller's Arcane key policy, and a per-client rate limit (docs/security.md).

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{KeySource, split_named};
use crate::mcp::caller::{OAuthGrant, TokenLabel};
use crate::oauth::OAuth;

/// The header carrying a caller's own Arcane API key.
pub const CLIENT_KEY_HEADER: &str = "x-arcane-api-key";

/// The accepted bearer tokens, kept only as SHA-256 digests: comparing digests in constant time
/// reveals neither a token's bytes nor its length through timing. Each may carry the name of
/// the person or client it was given to (`alice=TOKEN`), shown in the logs and the audit log with
/// the token's fingerprint, never the token.
pub struct Tokens(Vec<([u8; 32], Arc<TokenLabel>)>);

impl Tokens {
    /// The tokens of `entries` (plain or `name=TOKEN`; blank ones skipped). The same token under
    /// two names is refused: the logs would name the wrong person.
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Tokens, String> {
        let mut tokens: Vec<([u8; 32], Arc<TokenLabel>)> = Vec::new();
        for entry in entries {
            let (name, token) = split_named(entry);
            if token.is_empty() {
                continue;
            }
            let d = digest(token);
            if let Some((_, seen)) = tokens.iter().find(|(t, _)| *t == d) {
                if seen.name.as_deref() == name {
                    continue;
                }
                let says = |n: Option<&str>| n.map_or("unnamed".to_string(), |n| format!("'{n}'"));
                return Err(format!(
                    "the same bearer token is given twice, as {} and as {} (fingerprint {}): \
                     give each person a token of their own, or one name per token",
                    says(seen.name.as_deref()),
                    says(name),
                    seen.fingerprint
                ));
            }
            let index = tokens.len();
            tokens.push((
                d,
                Arc::new(TokenLabel {
                    name: name.map(str::to_string),
                    fingerprint: arcane_redact::fingerprint(token),
                    index,
                }),
            ));
        }
        Ok(Tokens(tokens))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The names given to tokens (for the startup line; names are not secrets).
    pub fn names(&self) -> Vec<&str> {
        self.0
            .iter()
            .filter_map(|(_, l)| l.name.as_deref())
            .collect()
    }

    /// Which token `presented` is, if any. Every token is compared, so the time taken does not
    /// say which one matched.
    pub fn matching(&self, presented: &str) -> Option<Arc<TokenLabel>> {
        use subtle::ConditionallySelectable;
        let d = digest(presented);
        let (found, at) = self.0.iter().enumerate().fold(
            (subtle::Choice::from(0), 0u64),
            |(found, at), (i, (t, _))| {
                let eq = t.ct_eq(&d);
                (found | eq, u64::conditional_select(&at, &(i as u64), eq))
            },
        );
        bool::from(found).then(|| self.0[at as usize].1.clone())
    }

    #[cfg(test)]
    fn accepts(&self, presented: &str) -> bool {
        self.matching(presented).is_some()
    }
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Parses a token file: one token per line (`name=TOKEN` to name it); blank lines and `#`
/// comments are skipped (a byte order mark that editors on Windows write first is not part of
/// the first token).
pub fn tokens_from_file(text: &str) -> Vec<String> {
    text.trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Who sent a request, as far as the gate can tell: a digest of its bearer token and of the
/// caller's own Arcane key (when the policy uses client keys). Never the secrets themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity([u8; 32]);

impl Identity {
    fn of(token: Option<&str>, client_key: Option<&str>) -> Identity {
        let mut h = Sha256::new();
        // Length-prefixed, so no token/key split of the same bytes collides with another.
        for part in [token, client_key] {
            let part = part.unwrap_or_default().as_bytes();
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        Identity(h.finalize().into())
    }

    /// The identity of an OAuth caller: its issuer and subject, the same across the tokens it
    /// is given (a refreshed token keeps its sessions). Tagged, so that no static token's
    /// identity is one of these.
    fn of_subject(issuer: &str, subject: &str) -> Identity {
        let mut h = Sha256::new();
        for part in [b"oauth".as_slice(), issuer.as_bytes(), subject.as_bytes()] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        Identity(h.finalize().into())
    }

    fn same(&self, other: &Identity) -> bool {
        self.0.ct_eq(&other.0).into()
    }

    /// The digest itself (of the token and client key as authenticated, never of the header's
    /// spelling), for keys that must be the same for every request of one caller.
    pub fn digest(&self) -> &[u8; 32] {
        &self.0
    }
}

/// The bearer credential of an `Authorization` header; the scheme is case-insensitive
/// (RFC 9110 §11.1), blanks around the token are ignored.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = v.split_once([' ', '\t'])?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// A request the gate let through: who sent it ([`Identity`], for binding a session to its
/// caller: [`Sessions`]) and which of the tokens it carried (`None` when the server runs
/// without tokens).
#[derive(Debug, Clone)]
pub struct Admitted {
    pub identity: Identity,
    pub token: Option<Arc<TokenLabel>>,
    /// An OAuth caller (docs/oauth.md): who, what it may do, the Arcane key its users-file
    /// rule names, and the per-caller limits' key.
    pub oauth: Option<OAuthCaller>,
}

/// An OAuth access token's holder, as the gate admitted it.
#[derive(Debug, Clone)]
pub struct OAuthCaller {
    pub grant: Arc<OAuthGrant>,
    pub key: Option<String>,
    /// What the per-token limits count it by: a place after every static token's.
    pub limit_key: usize,
}

/// Who sends a request to a guarded path: a static bearer token ([`check`]), else, when the
/// server runs in OAuth mode, an access token of its identity provider; `Err` is the answer to
/// send instead. The one place that decides who is calling.
pub async fn admit(
    tokens: &Tokens,
    oauth: Option<&OAuth>,
    key_source: KeySource,
    headers: &HeaderMap,
    mcp: bool,
) -> Result<Admitted, Denied> {
    let Some(oauth) = oauth else {
        return check(tokens, key_source, headers, mcp);
    };
    duplicates(headers)?;
    let Some(presented) = bearer(headers) else {
        return Err(Denied {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(oauth.challenge().into()),
            text:
                "Sign-in required: this server takes OAuth access tokens (its protected-resource \
                   metadata says where to get one) in `Authorization: Bearer <token>`."
                    .into(),
        });
    };
    if tokens.matching(presented).is_some() {
        return check(tokens, key_source, headers, mcp);
    }
    let admitted = oauth.admit(presented).await.map_err(|r| Denied {
        status: r.status,
        challenge: r.challenge.map(Cow::Owned),
        text: r.text.into(),
    })?;
    let identity = Identity::of_subject(&admitted.grant.issuer, &admitted.grant.subject);
    // With a users file the rule names the Arcane key: a second one in a header would be two
    // answers to one question.
    if mcp && admitted.key.is_some() && headers.contains_key(CLIENT_KEY_HEADER) {
        return Err(bad_request(
            "This server maps your sign-in to an Arcane key itself (--oauth-users) and does not \
             accept X-Arcane-API-Key beside an OAuth token; remove the header.",
        ));
    }
    let caller = OAuthCaller {
        limit_key: tokens.len() + admitted.rule.unwrap_or(0),
        grant: admitted.grant,
        key: admitted.key,
    };
    if caller.key.is_some() || !mcp {
        return Ok(Admitted {
            identity,
            token: None,
            oauth: Some(caller),
        });
    }
    key_policy(key_source, headers, Some(presented), None, Some(caller))
}

/// Two credentials in one request are ambiguous: a proxy that appends the user's header to one
/// the client sent would otherwise let the client's (read first) win.
fn duplicates(headers: &HeaderMap) -> Result<(), Denied> {
    if headers.get_all(header::AUTHORIZATION).iter().count() > 1 {
        return Err(bad_request(
            "More than one Authorization header; send one `Authorization: Bearer <token>`.",
        ));
    }
    if headers.get_all(CLIENT_KEY_HEADER).iter().count() > 1 {
        return Err(bad_request(
            "More than one X-Arcane-API-Key header; send your Arcane API key once (a proxy that \
             adds it must replace the client's header, not append to it).",
        ));
    }
    Ok(())
}

/// Checks one request to a guarded path; `Err` is the answer to send instead. A refused token
/// is also logged (WARN, with what to set; never the token).
pub fn check(
    tokens: &Tokens,
    key_source: KeySource,
    headers: &HeaderMap,
    mcp: bool,
) -> Result<Admitted, Denied> {
    duplicates(headers)?;
    let presented = bearer(headers);
    let mut token = None;
    if !tokens.is_empty() {
        match presented {
            None => {
                crate::logging::warn_throttled!(
                    "request without a bearer token refused (401): the client must send \
                     `Authorization: Bearer <token>` with a token of ARCANE_MCP_AUTH_TOKEN or \
                     --auth-token-file"
                );
                return Err(unauthorized(
                    r#"Bearer realm="arcane-mcp""#,
                    "Missing bearer token: send `Authorization: Bearer <token>` with a token \
                     from the server's ARCANE_MCP_AUTH_TOKEN.",
                ));
            }
            Some(t) => match tokens.matching(t) {
                Some(label) => token = Some(label),
                None => {
                    crate::logging::warn_throttled!(
                        fingerprint = %arcane_redact::fingerprint(t),
                        "bearer token not accepted (401): it is not one of ARCANE_MCP_AUTH_TOKEN \
                         / --auth-token-file; add it there (name=TOKEN names it in the logs) or \
                         give the client one of those"
                    );
                    return Err(unauthorized(
                        r#"Bearer realm="arcane-mcp", error="invalid_token""#,
                        "The bearer token is not accepted by this server; ask its operator for \
                         a valid one.",
                    ));
                }
            },
        }
    }
    if !mcp {
        return Ok(Admitted {
            identity: Identity::of(presented, None),
            token,
            oauth: None,
        });
    }
    key_policy(key_source, headers, presented, token, None)
}

/// The caller's-key policy of `/mcp` for a caller whose bearer credential is accepted.
fn key_policy(
    key_source: KeySource,
    headers: &HeaderMap,
    presented: Option<&str>,
    token: Option<Arc<TokenLabel>>,
    oauth: Option<OAuthCaller>,
) -> Result<Admitted, Denied> {
    let client_key = headers
        .get(CLIENT_KEY_HEADER)
        .map(|v| v.to_str().map(str::trim).unwrap_or(""));
    let key = client_key.filter(|_| key_source != KeySource::Server);
    let identity = match &oauth {
        // An OAuth caller is its subject (and the key it sends), whatever token it holds now.
        Some(o) => Identity::of(
            Some(&hex(Identity::of_subject(
                &o.grant.issuer,
                &o.grant.subject,
            )
            .digest())),
            key,
        ),
        None => Identity::of(presented, key),
    };
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
        _ => Ok(Admitted {
            identity,
            token,
            oauth,
        }),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An untrusted header value as it may appear in a log line: control characters dropped, cut
/// after 100 characters.
pub fn shown(value: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(value)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    arcane_markdown::clip(&text, 100).into_owned()
}

/// Whether the request's `Host` is one of `allowed` (`host` or `host:port`; names compared
/// without case, IPv6 brackets ignored; an entry without a port allows any). The rule rmcp
/// applies at `/mcp`, for the routes beside it, so that a page that rebinds its own name to this
/// address (DNS rebinding) cannot read them either. A request without a Host is refused.
pub fn host_allowed(allowed: &[String], headers: &HeaderMap) -> bool {
    fn split(authority: &str) -> Option<(String, Option<u16>)> {
        // A Host is a host and a port (RFC 9110 §7.2): user information (`evil.com@localhost`)
        // is no part of it, and a parser that reads past it is a lenient one.
        if authority.contains('@') {
            return None;
        }
        let a: http::uri::Authority = authority.trim().parse().ok()?;
        let host = a.host().trim_matches(['[', ']']).to_ascii_lowercase();
        Some((host, a.port_u16()))
    }
    // Two Host headers are a malformed request (RFC 9112 §3.2): which one a proxy or Arcane
    // would read is anyone's guess, so neither is trusted.
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return false;
    }
    let Some((host, port)) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(split)
    else {
        return false;
    };
    // An entry that is not an authority (a bare IPv6 address such as `::1`) is a host alone.
    let entry = |a: &String| {
        split(a).unwrap_or_else(|| (a.trim().trim_matches(['[', ']']).to_ascii_lowercase(), None))
    };
    allowed
        .iter()
        .map(entry)
        .any(|(h, p)| h == host && p.is_none_or(|p| Some(p) == port))
}

/// Whether a request's `Origin`, when it has one, is one of `allowed` (compared without case,
/// a trailing slash ignored). Clients that are not browsers send none.
pub fn origin_allowed(allowed: &[String], headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let norm = |s: &str| s.trim().trim_end_matches('/').to_ascii_lowercase();
    let origin = norm(origin);
    origin != "null" && allowed.iter().any(|a| norm(a) == origin)
}

/// The header naming a legacy MCP session.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Sessions remembered before the ones that ended are looked for and forgotten.
const PRUNE_AT: usize = 256;

/// Which caller opened each MCP session. A session ID is a bearer capability of its own: whoever
/// holds it can answer the session's elicitation questions, read its notification stream or end
/// it. Bound to the identity that opened it, a session serves only that caller (the same bearer
/// token and the same Arcane key); anyone else is told the session does not exist, as for an
/// unknown ID, so the answer does not confirm that an ID is in use.
#[derive(Default)]
pub struct Sessions {
    /// Each session's opener, and the token it was opened with (its place in the list).
    bound: Mutex<HashMap<String, (Identity, Option<usize>)>>,
}

impl Sessions {
    /// Whether `who` may use session `id`. An ID never bound here is not decided here: the MCP
    /// service answers it as unknown.
    pub fn admits(&self, id: &str, who: &Identity) -> bool {
        let bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.get(id).is_none_or(|(owner, _)| owner.same(who))
    }

    /// Records that `who` opened session `id`.
    #[cfg(test)]
    pub fn bind(&self, id: &str, who: Identity) {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.insert(id.to_string(), (who, None));
    }

    /// Records that `who`, holding `token`, opened session `id` — unless the token already
    /// holds `quota` of the sessions in `live` (the others it opened have ended or expired):
    /// then `Err(held)`, and nothing is recorded. Counted and recorded under one lock, so
    /// sessions opened at the same moment cannot together pass the quota.
    pub fn bind_within(
        &self,
        id: &str,
        who: Identity,
        token: Option<usize>,
        quota: usize,
        live: &std::collections::HashSet<String>,
    ) -> Result<(), usize> {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let held = bound
            .iter()
            .filter(|(k, (_, t))| *t == token && k.as_str() != id && live.contains(k.as_str()))
            .count();
        if held >= quota {
            return Err(held);
        }
        bound.insert(id.to_string(), (who, token));
        Ok(())
    }

    /// Whether the table has grown enough to look for sessions that ended: at 256, 512, 1024…
    /// entries, so the look costs O(1) per session opened.
    pub fn wants_pruning(&self) -> bool {
        let n = self.bound.lock().unwrap_or_else(|e| e.into_inner()).len();
        n >= PRUNE_AT && n.is_power_of_two()
    }

    /// Forgets every session not in `live` (ended, expired), so the table stays as large as
    /// the sessions that exist.
    pub fn prune(&self, live: &std::collections::HashSet<String>) {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.retain(|k, _| live.contains(k));
    }

    /// Forgets session `id` (ended by its caller).
    pub fn forget(&self, id: &str) {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.remove(id);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.bound.lock().unwrap().len()
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

/// A refused request: its status, the `WWW-Authenticate` challenge of a 401 (or an OAuth 403),
/// what to do.
#[derive(Debug)]
pub struct Denied {
    pub status: StatusCode,
    pub challenge: Option<Cow<'static, str>>,
    pub text: Cow<'static, str>,
}

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        let mut r = (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.text.into_owned(),
        )
            .into_response();
        if let Some(c) = self.challenge
            && let Ok(v) = HeaderValue::from_str(&c)
        {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

fn unauthorized(challenge: &'static str, text: &'static str) -> Denied {
    Denied {
        status: StatusCode::UNAUTHORIZED,
        challenge: Some(challenge.into()),
        text: text.into(),
    }
}

fn bad_request(text: &'static str) -> Denied {
    Denied {
        status: StatusCode::BAD_REQUEST,
        challenge: None,
        text: text.into(),
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

/// The bucket a client address counts against: an IPv4 address (also written as IPv6) is its
/// own; an IPv6 address counts against its /64, the block one host or household is given, so a
/// client cannot pass the limit (or flush the table) by rotating through its own addresses.
pub fn bucket_of(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

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
        self.take_at(bucket_of(client), Instant::now())
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
        let t = Tokens::new(["alpha", " beta ", ""]).unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.accepts("alpha") && t.accepts("beta"));
        assert!(!t.accepts("alph") && !t.accepts("alphaa") && !t.accepts(""));
    }

    #[test]
    fn named_tokens_and_plain_ones_side_by_side() {
        for (entry, name, token) in [
            ("alice=tok-1", Some("alice"), "tok-1"),
            (
                " bob.smith@example.com = tok-2 ",
                Some("bob.smith@example.com"),
                "tok-2",
            ),
            ("ci=team=secret", Some("ci"), "team=secret"),
            // Plain tokens stay plain: base64 padding, no name before `=`, nothing after it.
            ("c2VjcmV0IHRva2Vu", None, "c2VjcmV0IHRva2Vu"),
            ("c2VjcmV0IHRva2VuIQ==", None, "c2VjcmV0IHRva2VuIQ=="),
            ("abc+/def=", None, "abc+/def="),
            ("9lives=tok", None, "9lives=tok"),
            ("=tok", None, "=tok"),
            ("a b=tok", None, "a b=tok"),
        ] {
            assert_eq!(split_named(entry), (name, token), "{entry:?}");
        }
        let t = Tokens::new(["alice=tok-1", "plain-tok", "alice=tok-3"]).unwrap();
        assert_eq!(t.len(), 3);
        let alice = t.matching("tok-1").unwrap();
        assert_eq!(alice.name.as_deref(), Some("alice"));
        assert_eq!(alice.fingerprint, arcane_redact::fingerprint("tok-1"));
        assert_eq!(
            alice.to_string(),
            format!("'alice' (fingerprint {})", alice.fingerprint)
        );
        let plain = t.matching("plain-tok").unwrap();
        assert_eq!((plain.name.clone(), plain.index), (None, 1));
        assert_eq!(
            t.matching("tok-3").unwrap().index,
            2,
            "two tokens, one name"
        );
        assert!(
            t.matching("alice=tok-1").is_none(),
            "the name is not part of the token"
        );
        assert!(t.matching("alice").is_none());
        assert_eq!(t.names(), vec!["alice", "alice"]);
        let err = Tokens::new(["alice=tok-1", "bob=tok-1"]).err().unwrap();
        assert!(err.contains("'alice'") && err.contains("'bob'"), "{err}");
        assert!(!err.contains("tok-1"), "never the token: {err}");
        assert!(
            Tokens::new(["alice=tok-1", "alice=tok-1"]).is_ok(),
            "a repeated line"
        );
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
        use arcane_redact::fingerprint;
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
        let t = Tokens::new(["tok"]).unwrap();
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
    fn bearer_scheme_is_case_insensitive_and_never_empty() {
        let t = Tokens::new(["tok"]).unwrap();
        for v in [
            "Bearer tok",
            "bearer tok",
            "BEARER tok",
            "Bearer\ttok",
            "  Bearer   tok  ",
        ] {
            let h = headers(&[("authorization", v)]);
            assert!(check(&t, KeySource::Server, &h, true).is_ok(), "{v:?}");
        }
        for v in [
            "Bearer",
            "Bearer ",
            "Basic tok",
            "Bearertok",
            "tok",
            "Bearer tok2",
        ] {
            let h = headers(&[("authorization", v)]);
            assert_eq!(
                check(&t, KeySource::Server, &h, true)
                    .err()
                    .map(|r| r.status),
                Some(StatusCode::UNAUTHORIZED),
                "{v:?}"
            );
        }
    }

    #[test]
    fn a_session_admits_only_the_identity_that_opened_it() {
        let t = Tokens::new(["tok-a", "tok-b"]).unwrap();
        let who = |tok: &str, key: Option<&str>| {
            let mut h = vec![("authorization", format!("Bearer {tok}"))];
            if let Some(k) = key {
                h.push(("x-arcane-api-key", k.to_string()));
            }
            let h: Vec<(&'static str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
            check(&t, KeySource::Either, &headers(&h), true)
                .unwrap()
                .identity
        };
        let s = Sessions::default();
        s.bind("s1", who("tok-a", Some("key-a")));
        assert!(s.admits("s1", &who("tok-a", Some("key-a"))));
        assert!(
            s.admits("s1", &who(" tok-a", Some("key-a "))),
            "blanks ignored"
        );
        assert!(
            !s.admits("s1", &who("tok-b", Some("key-a"))),
            "another token"
        );
        assert!(!s.admits("s1", &who("tok-a", Some("key-b"))), "another key");
        assert!(
            !s.admits("s1", &who("tok-a", None)),
            "the server's key instead"
        );
        assert!(
            s.admits("unknown", &who("tok-b", None)),
            "left to the service"
        );
        // Token and key bytes cannot be shifted between the two.
        assert_ne!(
            Identity::of(Some("ab"), Some("c")),
            Identity::of(Some("a"), Some("bc"))
        );
        // Ended sessions are forgotten once the table has grown.
        for i in 0..PRUNE_AT - 1 {
            s.bind(&format!("x{i}"), who("tok-b", None));
        }
        assert!(s.wants_pruning());
        s.prune(&["s1".to_string()].into_iter().collect());
        assert_eq!(s.len(), 1);
        s.forget("s1");
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_token_holds_at_most_its_quota_of_live_sessions() {
        let t = Tokens::new(["tok-a", "tok-b"]).unwrap();
        let who = |tok: &str| {
            let h = headers(&[("authorization", &format!("Bearer {tok}"))]);
            check(&t, KeySource::Server, &h, true).unwrap()
        };
        let (a, b) = (who("tok-a"), who("tok-b"));
        let (ka, kb) = (
            a.token.as_ref().map(|t| t.index),
            b.token.as_ref().map(|t| t.index),
        );
        let s = Sessions::default();
        let mut live: std::collections::HashSet<String> =
            ["a1", "a2", "a3", "b1"].map(String::from).into();
        assert_eq!(s.bind_within("a1", a.identity, ka, 2, &live), Ok(()));
        assert_eq!(s.bind_within("a2", a.identity, ka, 2, &live), Ok(()));
        assert_eq!(s.bind_within("a3", a.identity, ka, 2, &live), Err(2));
        assert!(
            s.admits("a3", &b.identity),
            "a refused session is not recorded"
        );
        assert_eq!(
            s.bind_within("b1", b.identity, kb, 2, &live),
            Ok(()),
            "b has its own"
        );
        live.remove("a1");
        assert_eq!(
            s.bind_within("a3", a.identity, ka, 2, &live),
            Ok(()),
            "a session that ended no longer counts"
        );
    }

    #[test]
    fn hosts_and_origins_of_the_side_routes() {
        let allowed: Vec<String> = ["localhost", "127.0.0.1", "::1", "mcp.example.com:8443"]
            .map(String::from)
            .to_vec();
        let host = |h: &str| host_allowed(&allowed, &headers(&[("host", h)]));
        for ok in [
            "localhost:8000",
            "LOCALHOST",
            "127.0.0.1:1",
            "[::1]:8000",
            "mcp.example.com:8443",
        ] {
            assert!(host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "localhost.evil.example",
            "mcp.example.com",
            "mcp.example.com:443",
            "127.0.0.2",
            "[::2]:8000",
            "localhost:8000/x",
            "",
        ] {
            assert!(!host(bad), "{bad}");
        }
        assert!(!host_allowed(&allowed, &HeaderMap::new()), "no Host");
        let origins = vec!["https://app.example.com".to_string()];
        let origin = |o: &str| origin_allowed(&origins, &headers(&[("origin", o)]));
        assert!(origin("https://APP.example.com/"));
        for bad in [
            "null",
            "https://app.example.com.evil",
            "http://app.example.com",
            "https://app.example.com:444",
        ] {
            assert!(!origin(bad), "{bad}");
        }
        assert!(
            origin_allowed(&[], &HeaderMap::new()),
            "no Origin: not a browser"
        );
        assert!(!origin_allowed(
            &[],
            &headers(&[("origin", "http://localhost")])
        ));
    }

    #[test]
    fn token_file_strips_a_byte_order_mark_and_crlf() {
        assert_eq!(
            tokens_from_file("\u{feff}one\r\n\r\n# c\r\ntwo\r\n"),
            vec!["one".to_string(), "two".to_string()]
        );
        assert!(tokens_from_file("\n  \n# only a comment\n").is_empty());
    }

    #[test]
    fn a_host_with_user_information_is_refused() {
        let allowed = vec!["localhost".to_string()];
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "evil.com@localhost".parse().unwrap());
        assert!(
            !host_allowed(&allowed, &h),
            "user information is no part of a Host"
        );
        h.insert(header::HOST, "localhost:8080".parse().unwrap());
        assert!(host_allowed(&allowed, &h));
    }

    #[test]
    fn two_host_headers_are_refused_whichever_comes_first() {
        let allowed = vec!["localhost".to_string()];
        let mut h = HeaderMap::new();
        h.append(header::HOST, "localhost".parse().unwrap());
        assert!(host_allowed(&allowed, &h));
        h.append(header::HOST, "evil.example".parse().unwrap());
        assert!(!host_allowed(&allowed, &h));
    }

    #[test]
    fn ipv6_clients_share_the_bucket_of_their_64() {
        let rl = RateLimit::new(2);
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(rl.take(a).is_ok() && rl.take(b).is_ok());
        assert!(
            rl.take(a).is_err() && rl.take(b).is_err(),
            "one /64, one bucket"
        );
        assert!(rl.take(other).is_ok(), "another /64 has its own");
        let mapped: IpAddr = "::ffff:10.1.2.3".parse().unwrap();
        assert_eq!(bucket_of(mapped), "10.1.2.3".parse::<IpAddr>().unwrap());
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
