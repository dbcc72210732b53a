//! The clients of the built-in authorization server: dynamic registrations (RFC 7591), sealed
//! into their own `client_id` so that no table of clients is kept, and client ID metadata
//! documents (an `https://` `client_id` whose JSON is fetched, capped and validated, never
//! from a private or loopback address unless the server itself serves loopback).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::seal::{Kind, Sealer};

/// Largest registration request read.
pub const MAX_REGISTRATION_BYTES: usize = 8 * 1024;
/// Largest client ID metadata document read.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024;
/// Most redirect URIs of one client, and the longest one.
pub const MAX_REDIRECTS: usize = 8;
pub const MAX_REDIRECT_LEN: usize = 1000;
/// The longest client ID taken: a registration whose sealed ID would be longer is refused at
/// `/register` (about 5,000 characters of redirect URIs in all), and a longer metadata document
/// URL is not fetched; so that a sign-in form (which carries the ID) always fits in
/// `seal::MAX_SEALED`.
pub const MAX_CLIENT_ID: usize = 7 * 1024;
/// The longest client name kept (longer ones are cut: it is shown on the sign-in page).
pub const MAX_NAME: usize = 80;
/// How long a fetched metadata document is reused, and how many are kept.
const DOCUMENT_TTL: Duration = Duration::from_secs(300);
const MAX_DOCUMENTS: usize = 256;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// A client as the sign-in page and the token endpoint see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
}

/// What a registration's `client_id` seals.
#[derive(Serialize, Deserialize)]
struct Registered {
    n: String,
    r: Vec<String>,
    t: i64,
}

/// A refusal of client metadata (RFC 7591 §3.2.2): the error code and what to fix.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid {
    pub error: &'static str,
    pub description: String,
}

fn invalid(error: &'static str, description: impl Into<String>) -> Invalid {
    Invalid {
        error,
        description: description.into(),
    }
}

/// Schemes never accepted as a redirect: they run code, read files or go nowhere.
const BAD_SCHEMES: [&str; 9] = [
    "javascript",
    "data",
    "file",
    "vbscript",
    "blob",
    "about",
    "ftp",
    "ws",
    "wss",
];

/// Whether `uri` may be a redirect URI: `https://`, `http://` on a loopback host (native apps,
/// RFC 8252 §7.3), or an app's private-use scheme (RFC 8252 §7.1); never with a fragment or
/// user information (RFC 6749 §3.1.2), never one of [`BAD_SCHEMES`].
pub fn redirect_ok(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_REDIRECT_LEN {
        return Err(format!(
            "a redirect URI is longer than {MAX_REDIRECT_LEN} characters"
        ));
    }
    if uri.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("a redirect URI holds blanks or control characters".into());
    }
    let u = url::Url::parse(uri).map_err(|_| format!("{uri:?} is not an absolute URI"))?;
    if u.fragment().is_some() {
        return Err(format!(
            "{uri:?} has a fragment (#…), which a redirect URI may not"
        ));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(format!("{uri:?} carries user information"));
    }
    match u.scheme() {
        "https" if u.host().is_some() => Ok(()),
        "http" if super::provider::is_loopback(&u) => Ok(()),
        "http" | "https" => Err(format!(
            "{uri:?}: http:// redirect URIs are accepted only on a loopback host; use https://"
        )),
        s if BAD_SCHEMES.contains(&s) => Err(format!("{uri:?}: the scheme {s}: is not accepted")),
        _ => Ok(()),
    }
}

impl Client {
    /// Whether `given` (an authorization request's `redirect_uri`) is one this client
    /// registered: the same string, or — for a registered `http://` URI on a loopback host
    /// (`127.0.0.1`, `[::1]`, `localhost`) — the same with another port: a native app listens
    /// on a port the system gives it at run time (RFC 8252 §7.3, docs/oauth.md). Nothing else
    /// is relaxed: scheme, host, path and query match as written, byte for byte.
    pub fn redirects_to(&self, given: &str) -> bool {
        self.redirect_uris.iter().any(|r| {
            r == given
                || matches!(
                    (loopback_parts(r), loopback_parts(given)),
                    (Some(registered), Some(asked)) if registered == asked
                )
        })
    }
}

/// An `http://` URI on a loopback host as (host, the rest after the port), as written, or
/// `None` for any other. Taken apart as text, never through a URL parser that would
/// normalise it (`0x7f.1` is `127.0.0.1` to one): whatever is not exactly a loopback IP
/// literal or `localhost`, an optional `:port` of digits, then a path or query, keeps the
/// exact match. User information (`127.0.0.1@evil.example`) and look-alike names
/// (`127.0.0.1.evil.example`) are not a loopback host here.
fn loopback_parts(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix("http://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (inner, port) = v6.split_once(']')?;
            inner
                .parse::<std::net::Ipv6Addr>()
                .ok()?
                .is_loopback()
                .then_some(())?;
            (&authority[..inner.len() + 2], port)
        }
        None => {
            let host = authority.split(':').next().unwrap_or_default();
            let port = &authority[host.len()..];
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|a| a.is_loopback());
            loopback.then_some(())?;
            (host, port)
        }
    };
    let port_ok = match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => {
            (1..=5).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_digit())
                && digits.parse::<u16>().is_ok()
        }
    };
    port_ok.then_some((host, tail))
}

/// Whether `c` is a format character that changes how text around it reads without showing
/// itself: bidirectional controls (U+202E turns "claude.ai" around), zero-width characters,
/// invisible operators, tags (Unicode's Cf category, as far as a name ever holds it).
pub fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{110BD}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E007F}')
}

fn name_of(v: Option<&Value>, fallback: &str) -> String {
    let raw = v.and_then(Value::as_str).unwrap_or("");
    let clean: String = raw
        .chars()
        .filter(|c| !c.is_control() && !invisible(*c))
        .collect::<String>()
        .trim()
        .to_string();
    let clean = if clean.is_empty() {
        fallback.to_string()
    } else {
        clean
    };
    clean.chars().take(MAX_NAME).collect()
}

/// The redirect URIs of client metadata, checked.
fn redirects_of(meta: &Value) -> Result<Vec<String>, Invalid> {
    let Some(list) = meta.get("redirect_uris").and_then(Value::as_array) else {
        return Err(invalid(
            "invalid_redirect_uri",
            "redirect_uris is required: a list of the URIs to send the person back to",
        ));
    };
    if list.is_empty() || list.len() > MAX_REDIRECTS {
        return Err(invalid(
            "invalid_redirect_uri",
            format!("redirect_uris must hold 1 to {MAX_REDIRECTS} URIs"),
        ));
    }
    let mut out = Vec::new();
    for v in list {
        let Some(uri) = v.as_str() else {
            return Err(invalid(
                "invalid_redirect_uri",
                "each redirect URI is a string",
            ));
        };
        redirect_ok(uri).map_err(|why| invalid("invalid_redirect_uri", why))?;
        if !out.iter().any(|u| u == uri) {
            out.push(uri.to_string());
        }
    }
    Ok(out)
}

/// The fields that, when present, must allow the code flow of a public client.
fn flow_ok(meta: &Value) -> Result<(), Invalid> {
    let listed = |field: &str, allowed: &[&str]| -> Result<(), Invalid> {
        match meta.get(field) {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(a)) => match a
                .iter()
                .find(|v| !allowed.iter().any(|x| v.as_str() == Some(*x)))
            {
                Some(v) => Err(invalid(
                    "invalid_client_metadata",
                    format!("{field} {v} is not supported: this server offers {allowed:?}"),
                )),
                None => Ok(()),
            },
            Some(_) => Err(invalid(
                "invalid_client_metadata",
                format!("{field} must be a list"),
            )),
        }
    };
    listed("grant_types", &["authorization_code", "refresh_token"])?;
    listed("response_types", &["code"])
}

/// Validates a registration request's body and seals it into a client ID; the answer's JSON
/// (RFC 7591 §3.2.1). The client is public (`token_endpoint_auth_method: none`, PKCE
/// proves it): a client asking for a secret is given none, as §3.2.1 allows.
pub fn register(sealer: &Sealer, body: &[u8]) -> Result<Value, Invalid> {
    if body.len() > MAX_REGISTRATION_BYTES {
        return Err(invalid(
            "invalid_client_metadata",
            format!("the registration is larger than {MAX_REGISTRATION_BYTES} bytes"),
        ));
    }
    let meta: Value = serde_json::from_slice(body)
        .map_err(|_| invalid("invalid_client_metadata", "the body is not JSON"))?;
    if !meta.is_object() {
        return Err(invalid(
            "invalid_client_metadata",
            "the body is not a JSON object",
        ));
    }
    let redirect_uris = redirects_of(&meta)?;
    flow_ok(&meta)?;
    let name = name_of(meta.get("client_name"), "an unnamed client");
    let now = chrono::Utc::now().timestamp();
    let id = sealer
        .seal(
            Kind::Client,
            &Registered {
                n: name.clone(),
                r: redirect_uris.clone(),
                t: now,
            },
        )
        .ok()
        .filter(|id| id.len() <= MAX_CLIENT_ID)
        .ok_or_else(|| {
            invalid(
                "invalid_redirect_uri",
                format!(
                    "the registration is too large to seal into a client_id of at most \
                     {MAX_CLIENT_ID} characters: register fewer or shorter redirect URIs"
                ),
            )
        })?;
    Ok(json!({
        "client_id": id,
        "client_id_issued_at": now,
        "client_name": name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
}

/// Whether an address is one a metadata document may be fetched from: none of loopback,
/// private, link-local, shared (CGNAT), unique-local, documentation, multicast, unspecified,
/// broadcast — and an IPv4 address inside IPv6 is judged as IPv4.
pub fn public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || a.is_documentation()
                || o[0] == 0
                || (o[0] == 192 && o[1] == 88 && o[2] == 99)
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240)
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return public_address(IpAddr::V4(v4));
            }
            let s = a.segments();
            // 6to4 (2002::/16) and Teredo (2001::/32) carry an IPv4 address a relay reaches;
            // ::ffff:0:a.b.c.d is IPv4-translated (RFC 2765).
            if s[0] == 0x2002 || (s[0] == 0x2001 && s[1] == 0) {
                return false;
            }
            if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
                return false;
            }
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || s[..4] == [0x100, 0, 0, 0]
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b)
                || s[..6] == [0, 0, 0, 0, 0, 0])
        }
    }
}

/// Reads a client ID metadata document's JSON (already fetched) as the client `url`.
pub fn from_document(url: &str, doc: &Value) -> Result<Client, String> {
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("its client_id is not the URL it was fetched from".into());
    }
    if let Some(m) = doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        && m != "none"
    {
        return Err(format!(
            "it asks for token_endpoint_auth_method {m:?}; this server takes public clients \
             (none) with PKCE"
        ));
    }
    let redirect_uris = redirects_of(doc).map_err(|e| e.description)?;
    flow_ok(doc).map_err(|e| e.description)?;
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    Ok(Client {
        id: url.to_string(),
        name: name_of(doc.get("client_name"), &host),
        redirect_uris,
    })
}

/// The clients the server knows: its own registrations (opened, not looked up) and fetched
/// metadata documents (cached briefly).
pub struct Clients {
    /// Whether metadata documents may come from private and loopback addresses: only when the
    /// server's own public URL is on loopback (the tests), never on a network.
    pub allow_private: bool,
    tls: std::sync::Arc<rustls::ClientConfig>,
    documents: Mutex<HashMap<String, (Instant, Client)>>,
}

impl Clients {
    pub fn new(allow_private: bool, tls: std::sync::Arc<rustls::ClientConfig>) -> Clients {
        Clients {
            allow_private,
            tls,
            documents: Mutex::new(HashMap::new()),
        }
    }

    /// The client `id` names, or why there is none (a sentence for the error page).
    pub async fn find(&self, sealer: &Sealer, id: &str) -> Result<Client, String> {
        if id.len() > MAX_CLIENT_ID {
            return Err(format!(
                "its client_id is longer than {MAX_CLIENT_ID} characters"
            ));
        }
        if let Some(r) = sealer.open::<Registered>(Kind::Client, id) {
            return Ok(Client {
                id: id.to_string(),
                name: r.n,
                redirect_uris: r.r,
            });
        }
        if id.starts_with("https://") || (self.allow_private && id.starts_with("http://")) {
            return self.document(id).await;
        }
        Err(
            "this client is not registered here (its client_id was not issued by this server, \
             or by a previous key: register again)"
                .into(),
        )
    }

    async fn document(&self, id: &str) -> Result<Client, String> {
        {
            let docs = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, c)) = docs.get(id)
                && at.elapsed() < DOCUMENT_TTL
            {
                return Ok(c.clone());
            }
        }
        let client = self
            .fetch(id)
            .await
            .map_err(|why| format!("its client ID metadata document {id} is refused: {why}"))?;
        let mut docs = self.documents.lock().unwrap_or_else(|e| e.into_inner());
        if docs.len() >= MAX_DOCUMENTS {
            docs.retain(|_, (at, _)| at.elapsed() < DOCUMENT_TTL);
            if docs.len() >= MAX_DOCUMENTS {
                docs.clear();
            }
        }
        docs.insert(id.to_string(), (Instant::now(), client.clone()));
        Ok(client)
    }

    async fn fetch(&self, id: &str) -> Result<Client, String> {
        let u = url::Url::parse(id).map_err(|_| "it is not a URL".to_string())?;
        if u.path() == "/" || u.path().is_empty() || u.fragment().is_some() {
            return Err("a client ID URL names a document: it has a path and no fragment".into());
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err("it carries user information".into());
        }
        let host = u.host_str().ok_or("it has no host")?.to_string();
        let port = u.port_or_known_default().ok_or("it has no port")?;
        // The addresses are resolved and checked here, and the request goes to the checked
        // ones: a name that resolves to a public address for the check and to a private one
        // for the fetch (DNS rebinding) reaches nothing new.
        let bare = host.trim_matches(['[', ']']);
        let addrs: Vec<std::net::SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![(ip, port).into()],
            Err(_) => tokio::time::timeout(FETCH_TIMEOUT, tokio::net::lookup_host((bare, port)))
                .await
                .map_err(|_| "its host did not resolve in time".to_string())?
                .map_err(|_| "its host does not resolve".to_string())?
                .collect(),
        };
        if addrs.is_empty() {
            return Err("its host does not resolve".into());
        }
        // One message whatever the address, and without it: the page is shown to anyone,
        // and naming what internal names resolve to would make it a scanner.
        if !self.allow_private && addrs.iter().any(|a| !public_address(a.ip())) {
            return Err(
                "its host is, or resolves to, a private, loopback or reserved address".into(),
            );
        }
        let mut b = arcane_engine::client_builder(&self.tls)
            .redirect(reqwest::redirect::Policy::none())
            // Never through HTTPS_PROXY / ALL_PROXY: a proxy would resolve the name itself and
            // reach what the check above refused.
            .no_proxy()
            .timeout(FETCH_TIMEOUT)
            .user_agent(concat!("arcane-mcp/", env!("CARGO_PKG_VERSION")));
        if bare.parse::<IpAddr>().is_err() {
            b = b.resolve_to_addrs(bare, &addrs);
        }
        let http = b.build().map_err(|_| "no HTTP client".to_string())?;
        let resp = http
            .get(u.clone())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| "it could not be fetched".to_string())?;
        let doc = super::provider::json_capped_at(resp, "it", MAX_DOCUMENT_BYTES)
            .await
            .map_err(|e| e.to_string())?;
        from_document(id, &doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_loopback_http_or_an_apps_scheme() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:3000/cb",
            "http://localhost/cb",
            "http://[::1]:8/cb",
            "cursor://anysphere.cursor/oauth",
        ] {
            assert_eq!(redirect_ok(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "https://claude.ai/cb#frag",
            "https://user:pw@claude.ai/cb",
            "javascript:alert(1)",
            "data:text/html,hi",
            "/relative",
            "https://claude.ai/a b",
        ] {
            assert!(redirect_ok(bad).is_err(), "{bad}");
        }
        assert!(redirect_ok(&format!("https://a.example/{}", "x".repeat(1000))).is_err());
    }

    /// RFC 8252 §7.3: a loopback redirect URI matches with any port; nothing else about it,
    /// and nothing about any other URI, is relaxed.
    #[test]
    fn a_loopback_redirect_matches_with_any_port_and_nothing_else() {
        let client = |uri: &str| Client {
            id: "c".into(),
            name: "n".into(),
            redirect_uris: vec![uri.to_string()],
        };
        let v4 = client("http://127.0.0.1:3000/cb?x=1");
        for ok in [
            "http://127.0.0.1:3000/cb?x=1",
            "http://127.0.0.1:49152/cb?x=1",
            "http://127.0.0.1/cb?x=1",
        ] {
            assert!(v4.redirects_to(ok), "{ok}");
        }
        for bad in [
            "http://127.0.0.1:49152/cb",
            "http://127.0.0.1:49152/cb?x=2",
            "http://127.0.0.1:49152/cb/../evil?x=1",
            "http://127.0.0.1:49152/CB?x=1",
            "https://127.0.0.1:49152/cb?x=1",
            "http://127.0.0.1.evil.example:49152/cb?x=1",
            "http://127.0.0.1@evil.example:49152/cb?x=1",
            "http://evil.example@127.0.0.1:49152/cb?x=1",
            "http://127.0.0.1:49152@evil.example/cb?x=1",
            "http://127.0.0.2:49152/cb?x=1",
            "http://0x7f.0.0.1:49152/cb?x=1",
            "http://2130706433:49152/cb?x=1",
            "http://localhost:49152/cb?x=1",
            "http://127.0.0.1:99999/cb?x=1",
            "http://127.0.0.1:/cb?x=1",
            "http://127.0.0.1:+80/cb?x=1",
            "http://127.0.0.1:49152/cb?x=1#f",
            "http://127.0.0.1:49152\\@evil.example/cb?x=1",
        ] {
            assert!(!v4.redirects_to(bad), "{bad}");
        }
        let v6 = client("http://[::1]:8/cb");
        assert!(v6.redirects_to("http://[::1]:61000/cb"));
        assert!(v6.redirects_to("http://[::1]/cb"));
        for bad in [
            "http://[::2]:61000/cb",
            "http://[0:0:0:0:0:0:0:1]:61000/cb",
            "http://[::1]evil:61000/cb",
            "http://127.0.0.1:61000/cb",
        ] {
            assert!(!v6.redirects_to(bad), "{bad}");
        }
        let named = client("http://localhost:3030/callback");
        assert!(named.redirects_to("http://localhost:51234/callback"));
        assert!(!named.redirects_to("http://localhost.evil.example:51234/callback"));
        assert!(!named.redirects_to("http://127.0.0.1:51234/callback"));
        // Not loopback: exact, port included.
        let https = client("https://claude.ai/api/mcp/auth_callback");
        assert!(https.redirects_to("https://claude.ai/api/mcp/auth_callback"));
        assert!(!https.redirects_to("https://claude.ai:8443/api/mcp/auth_callback"));
        let lan = client("http://192.168.1.5:3000/cb");
        assert!(!lan.redirects_to("http://192.168.1.5:3001/cb"));
        let app = client("cursor://anysphere.cursor/oauth");
        assert!(!app.redirects_to("cursor://anysphere.cursor:1/oauth"));
    }

    #[test]
    fn a_registration_is_sealed_into_its_client_id_and_capped() {
        let s = Sealer::new([1; 32], true);
        let r = register(
            &s,
            br#"{"client_name":"claude.ai\u0007","redirect_uris":["https://claude.ai/cb"],"token_endpoint_auth_method":"client_secret_post"}"#,
        )
        .unwrap();
        assert_eq!(r["client_name"], "claude.ai");
        assert_eq!(r["token_endpoint_auth_method"], "none");
        let bidi = serde_json::to_vec(&json!({
            "client_name": "claude.ai\u{202e}\u{200b}\u{2066}",
            "redirect_uris": ["https://claude.ai/cb"],
        }))
        .unwrap();
        assert_eq!(register(&s, &bidi).unwrap()["client_name"], "claude.ai");
        let id = r["client_id"].as_str().unwrap();
        let opened: Registered = s.open(Kind::Client, id).unwrap();
        assert_eq!(opened.r, vec!["https://claude.ai/cb"]);
        let too_many: Vec<String> = (0..9).map(|i| format!("https://a.example/{i}")).collect();
        let body = serde_json::to_vec(&json!({"redirect_uris": too_many})).unwrap();
        assert_eq!(
            register(&s, &body).unwrap_err().error,
            "invalid_redirect_uri"
        );
        let huge = serde_json::to_vec(
            &json!({"redirect_uris": ["https://a.example/"], "client_name": "x".repeat(9000)}),
        )
        .unwrap();
        assert!(
            register(&s, &huge)
                .unwrap_err()
                .description
                .contains("larger")
        );
        let implicit = br#"{"redirect_uris":["https://a.example/"],"response_types":["token"]}"#;
        assert_eq!(
            register(&s, implicit).unwrap_err().error,
            "invalid_client_metadata"
        );
        assert!(register(&s, b"[]").is_err());
        assert!(register(&s, br#"{"redirect_uris":[]}"#).is_err());
        let long = serde_json::to_vec(
            &json!({"redirect_uris": ["https://a.example/"], "client_name": "y".repeat(500)}),
        )
        .unwrap();
        assert_eq!(
            register(&s, &long).unwrap()["client_name"]
                .as_str()
                .unwrap()
                .len(),
            MAX_NAME
        );
    }

    #[test]
    fn the_largest_registration_fits_a_sign_in_form() {
        // The largest registration accepted, and a sign-in form carrying its ID with a
        // redirect URI and a state at their caps: sealed, it fits what is opened.
        let s = Sealer::new([1; 32], true).bound_to("https://mcp.example.com");
        let mut n = 1;
        let mut largest = None;
        loop {
            let uris: Vec<String> = (0..n)
                .map(|i| format!("https://a.example/{i}{}", "x".repeat(900)))
                .collect();
            let body = serde_json::to_vec(
                &json!({"redirect_uris": uris, "client_name": "é".repeat(MAX_NAME)}),
            )
            .unwrap();
            match register(&s, &body) {
                Ok(v) => largest = Some(v["client_id"].as_str().unwrap().to_string()),
                Err(e) => {
                    assert_eq!(e.error, "invalid_redirect_uri", "{}", e.description);
                    break;
                }
            }
            n += 1;
        }
        assert!((5..MAX_REDIRECTS).contains(&(n - 1)), "{n}");
        let id = largest.unwrap();
        assert!(id.len() <= MAX_CLIENT_ID);
        let form = json!({"c": id, "r": "x".repeat(MAX_REDIRECT_LEN), "ch": "c".repeat(43),
            "st": "\"".repeat(512), "w": true, "x": "f".repeat(32), "e": i64::MAX, "f": "f".repeat(32)});
        let sealed = s.seal(Kind::Form, &form).unwrap();
        assert!(s.open::<Value>(Kind::Form, &sealed).is_some());
    }

    #[test]
    fn metadata_documents_come_only_from_public_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "224.0.0.1",
            "192.88.99.1",
            "2002:7f00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "fec0::1",
            "::ffff:0:127.0.0.1",
            "100::1",
        ] {
            assert!(!public_address(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "1.1.1.1"] {
            assert!(public_address(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn a_metadata_document_must_name_itself() {
        let url = "https://app.example/client.json";
        let doc = json!({"client_id": url, "client_name": "App", "redirect_uris": ["https://app.example/cb"]});
        let c = from_document(url, &doc).unwrap();
        assert_eq!((c.name.as_str(), c.redirect_uris.len()), ("App", 1));
        let other = json!({"client_id": "https://evil.example/c.json", "redirect_uris": ["https://app.example/cb"]});
        assert!(from_document(url, &other).is_err());
        let secret = json!({"client_id": url, "redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "client_secret_basic"});
        assert!(from_document(url, &secret).is_err());
        let unnamed = json!({"client_id": url, "redirect_uris": ["https://app.example/cb"]});
        assert_eq!(from_document(url, &unnamed).unwrap().name, "app.example");
    }

    #[tokio::test]
    async fn a_document_on_a_private_address_is_not_fetched() {
        arcane_engine::ensure_crypto_provider();
        let tls = arcane_engine::tls_config(None, false).unwrap();
        let clients = Clients::new(false, tls);
        let s = Sealer::new([1; 32], true);
        for id in [
            "https://127.0.0.1/c.json",
            "https://localhost:9/c.json",
            "https://[::1]/c.json",
            "https://169.254.169.254/latest/meta-data",
        ] {
            let why = clients.find(&s, id).await.unwrap_err();
            assert!(why.contains("private, loopback"), "{id}: {why}");
            // The page does not tell what the host resolved to.
            for addr in ["127.0.0.1", "::1", "169.254"] {
                assert!(!why.replace(id, "").contains(addr), "{id}: {why}");
            }
        }
        // Plain http is not a document's scheme on a network.
        assert!(
            clients
                .find(&s, "http://app.example/c.json")
                .await
                .unwrap_err()
                .contains("not registered")
        );
    }
}
