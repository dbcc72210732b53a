//! The identity provider as the resource server sees it: its discovery document, its signing
//! keys (JWKS, cached; fetched again for an unknown `kid`, at most once per
//! [`REFETCH_EVERY`]), and its RFC 7662 introspection endpoint for opaque tokens.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use jsonwebtoken::jwk::JwkSet;
use serde_json::Value;

/// The shortest time between two JWKS fetches caused by tokens naming a key the cached set
/// lacks: a flood of tokens with made-up `kid`s costs the provider one fetch per period.
pub const REFETCH_EVERY: Duration = Duration::from_secs(30);

/// Keys older than this are fetched again at the next token (a provider's planned rotation
/// publishes the new key ahead of using it).
const MAX_AGE: Duration = Duration::from_secs(3600);

/// Largest discovery document, JWKS or introspection answer read.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How long a fetch from the provider may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the provider's documents are.
#[derive(Debug, Clone)]
struct Endpoints {
    jwks_uri: String,
}

struct Cached {
    keys: JwkSet,
    fetched: Instant,
    /// When a token's unknown `kid` last made us fetch.
    refetched: Option<Instant>,
}

/// One identity provider (`--oauth-issuer`).
pub struct Provider {
    pub issuer: String,
    http: reqwest::Client,
    endpoints: tokio::sync::OnceCell<Endpoints>,
    keys: tokio::sync::Mutex<Option<Cached>>,
}

/// Reads an answer's body up to [`MAX_DOCUMENT_BYTES`] as JSON.
async fn json_capped(resp: reqwest::Response, what: &str) -> Result<Value> {
    json_capped_at(resp, what, MAX_DOCUMENT_BYTES).await
}

/// Reads an answer's body up to `max` bytes as JSON (refused beyond: a document that never
/// ends costs nothing but `max`), through the engine's one reader of answers.
pub async fn json_capped_at(resp: reqwest::Response, what: &str, max: usize) -> Result<Value> {
    let status = resp.status();
    if !status.is_success() {
        bail!("{what} answered HTTP {status}");
    }
    arcane_engine::read_json(resp, max)
        .await
        .map_err(|e| anyhow::anyhow!("{what} {e}"))
}

/// The keys of a JWKS document; `None` when it has no `keys` array. A key of a type this
/// crate cannot read (or a malformed one) is left out, not a reason to refuse every other key.
pub fn keys_of(doc: &Value) -> Option<JwkSet> {
    let keys = doc
        .get("keys")?
        .as_array()?
        .iter()
        .filter_map(|k| serde_json::from_value(k.clone()).ok())
        .collect();
    Some(JwkSet { keys })
}

/// Where an issuer's metadata may be, in the order tried: OpenID Connect Discovery §4
/// (`{issuer}/.well-known/openid-configuration`), RFC 8414 §3.1 (the well-known part between
/// the host and the issuer's path), and, for an issuer with a path, RFC 8414's name appended to
/// the issuer as the OpenID one is (some providers publish it there). For an issuer without a
/// path the last two are one.
pub fn discovery_urls(issuer: &str) -> Vec<String> {
    let base = issuer.trim_end_matches('/');
    let mut urls = vec![format!("{base}/.well-known/openid-configuration")];
    let inserted = url::Url::parse(base).ok().map(|u| {
        let path = u.path().trim_end_matches('/');
        let origin = u.origin().ascii_serialization();
        format!("{origin}/.well-known/oauth-authorization-server{path}")
    });
    let appended = format!("{base}/.well-known/oauth-authorization-server");
    urls.extend(inserted.filter(|i| *i != appended));
    urls.push(appended);
    urls
}

/// Whether a URL may be fetched: `https://`, or `http://` on a loopback host (a provider on the
/// same machine, as in the tests).
pub fn fetchable(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => u.host().is_some(),
        "http" => is_loopback(&u),
        _ => false,
    }
}

/// Whether a URL's host is a loopback address or `localhost`.
pub fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

impl Provider {
    pub fn new(issuer: String, http: reqwest::Client) -> Provider {
        Provider {
            issuer,
            http,
            endpoints: tokio::sync::OnceCell::new(),
            keys: tokio::sync::Mutex::new(None),
        }
    }

    async fn get(&self, url: &str, what: &str) -> Result<Value> {
        if !fetchable(url) {
            bail!("{what} {url} is neither https:// nor on loopback");
        }
        let resp = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .with_context(|| format!("fetching {what} {url}"))?;
        json_capped(resp, what).await
    }

    /// The discovery document's `jwks_uri` (OpenID Connect Discovery, else RFC 8414), its
    /// `issuer` checked to be the configured one (OIDC Discovery §4.3).
    async fn endpoints(&self) -> Result<&Endpoints> {
        self.endpoints
            .get_or_try_init(|| async {
                let mut last = None;
                for url in discovery_urls(&self.issuer) {
                    match self.get(&url, "the discovery document").await {
                        Ok(doc) => {
                            let said = doc.get("issuer").and_then(Value::as_str);
                            if said != Some(self.issuer.as_str()) {
                                bail!(
                                    "the discovery document {url} names issuer {:?}, not {:?} \
                                     (--oauth-issuer must be the provider's issuer exactly, \
                                     trailing slash included)",
                                    said.unwrap_or(""),
                                    self.issuer
                                );
                            }
                            let jwks_uri = doc
                                .get("jwks_uri")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    anyhow!("the discovery document {url} has no jwks_uri")
                                })?
                                .to_string();
                            return Ok(Endpoints { jwks_uri });
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| anyhow!("no discovery document")))
            })
            .await
    }

    async fn fetch_keys(&self) -> Result<JwkSet> {
        let uri = self.endpoints().await?.jwks_uri.clone();
        let doc = self.get(&uri, "the JWKS").await?;
        keys_of(&doc).ok_or_else(|| anyhow!("the JWKS {uri} has no `keys` array"))
    }

    /// The key a token names (`kid`; without one, the only key of the set), fetching the set
    /// when none is cached, when it is old, or — at most once per [`REFETCH_EVERY`] — when the
    /// token names a key the cached set lacks.
    pub async fn key(&self, kid: Option<&str>) -> Result<Option<jsonwebtoken::jwk::Jwk>> {
        let find = |set: &JwkSet| -> Option<jsonwebtoken::jwk::Jwk> {
            match kid {
                Some(kid) => set.find(kid).cloned(),
                None if set.keys.len() == 1 => set.keys.first().cloned(),
                None => None,
            }
        };
        let mut cached = self.keys.lock().await;
        let stale = cached
            .as_ref()
            .is_none_or(|c| c.fetched.elapsed() > MAX_AGE);
        if stale {
            let keys = self.fetch_keys().await?;
            let refetched = cached.as_ref().and_then(|c| c.refetched);
            *cached = Some(Cached {
                keys,
                fetched: Instant::now(),
                refetched,
            });
        }
        let c = cached.as_mut().expect("filled above");
        if let Some(k) = find(&c.keys) {
            return Ok(Some(k));
        }
        if stale || c.refetched.is_some_and(|at| at.elapsed() < REFETCH_EVERY) {
            return Ok(None);
        }
        c.refetched = Some(Instant::now());
        match self.fetch_keys().await {
            Ok(keys) => {
                c.keys = keys;
                c.fetched = Instant::now();
            }
            Err(e) => tracing::warn!("fetching the identity provider's keys again failed: {e:#}"),
        }
        Ok(find(&c.keys))
    }

    /// Asks the introspection endpoint about an opaque token (RFC 7662), as the resource
    /// server `client` (`client_secret_basic`). The answer's claims, or `None` when inactive.
    pub async fn introspect(
        &self,
        url: &str,
        client: Option<(&str, &str)>,
        token: &str,
    ) -> Result<Option<serde_json::Map<String, Value>>> {
        if !fetchable(url) {
            bail!("--oauth-introspection-url {url} is neither https:// nor on loopback");
        }
        let mut req = self
            .http
            .post(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(FETCH_TIMEOUT)
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        if let Some((id, secret)) = client {
            req = req.basic_auth(id, Some(secret));
        }
        let resp = req
            .send()
            .await
            .context("calling the introspection endpoint")?;
        let doc = json_capped(resp, "the introspection answer").await?;
        let Value::Object(claims) = doc else {
            bail!("the introspection answer is not a JSON object");
        };
        Ok((claims.get("active") == Some(&Value::Bool(true))).then_some(claims))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_each_standard_puts_it() {
        assert_eq!(
            discovery_urls("https://idp.example.com"),
            [
                "https://idp.example.com/.well-known/openid-configuration",
                "https://idp.example.com/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            discovery_urls("https://idp.example.com/"),
            discovery_urls("https://idp.example.com")
        );
        assert_eq!(
            discovery_urls("https://auth.example.com/application/o/arcane/"),
            [
                "https://auth.example.com/application/o/arcane/.well-known/openid-configuration",
                "https://auth.example.com/.well-known/oauth-authorization-server/application/o/arcane",
                "https://auth.example.com/application/o/arcane/.well-known/oauth-authorization-server",
            ]
        );
    }

    #[test]
    fn only_https_or_loopback_is_fetched() {
        for ok in [
            "https://idp.example.com/jwks",
            "http://127.0.0.1:8080/x",
            "http://[::1]/x",
            "http://localhost:9/x",
        ] {
            assert!(fetchable(ok), "{ok}");
        }
        for bad in [
            "http://idp.example.com/jwks",
            "http://10.0.0.1/x",
            "file:///etc/passwd",
            "ftp://idp.example.com/x",
            "not a url",
            "http://localhost.evil.example/x",
        ] {
            assert!(!fetchable(bad), "{bad}");
        }
    }
}
