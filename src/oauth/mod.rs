//! OAuth 2.1 resource-server mode (docs/oauth.md): access tokens of an identity provider
//! (`--oauth-issuer`) validated here — JWTs (RFC 9068) against the provider's keys, opaque tokens
//! through RFC 7662 introspection —, the protected-resource metadata (RFC 9728) that tells a
//! client where to get one, the `WWW-Authenticate` challenges, and the users file that maps a
//! token's holder to an Arcane key. The gate (`guard.rs`) calls [`OAuth::admit`] for a bearer
//! credential that is none of the static tokens.

pub mod clients;
pub mod issuer;
pub mod page;
pub mod provider;
pub mod routes;
pub mod scopes;
pub mod seal;
mod sign_in;
pub mod users;

use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value, json};

use crate::mcp::caller::OAuthGrant;
use provider::Provider;
use users::Users;

pub use scopes::{SCOPE_READ, SCOPE_WRITE};

/// The signature algorithms accepted: asymmetric only. `none` is no algorithm, and an HMAC
/// (`HS*`) token would be checked with a secret the provider never shares with us — or, by a
/// confused verifier, with its public key, which anyone can read.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Seconds of clock difference allowed for `exp` and `nbf`.
const LEEWAY: u64 = 30;

/// The path of the MCP endpoint's protected-resource metadata (RFC 9728 §3.1: the well-known
/// prefix before the resource's path).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The same document at the root, for clients that look only there.
pub const METADATA_ROOT: &str = "/.well-known/oauth-protected-resource";

/// The settings of resource-server mode, checked at startup.
pub struct OAuth {
    /// `--public-url`, without a trailing slash.
    pub public_url: String,
    /// The MCP endpoint's canonical URI, `{public-url}/mcp`.
    pub resource: String,
    /// The audience a token must name (`--oauth-audience`; the resource by default).
    pub audience: String,
    pub provider: Provider,
    /// `--oauth-introspection-url` and the resource server's own client credentials.
    introspection: Option<(String, Option<(String, String)>)>,
    /// `--oauth-users`: without it, calls run with the server's key (or the caller's own, as
    /// the key policy says).
    pub users: Option<Users>,
    /// `--oauth-issuer self`: the built-in authorization server, whose tokens carry the
    /// person's own Arcane key (the provider is then this server itself).
    pub own: Option<Arc<issuer::Issuer>>,
}

/// What `--oauth-issuer self` needs beside the common settings.
pub struct SelfSettings {
    /// `--state-key-file`'s key, which seals registrations, codes and tokens.
    pub state_key: Option<[u8; 32]>,
    /// The TLS settings of client ID metadata document fetches.
    pub tls: Arc<rustls::ClientConfig>,
}

/// A refusal of a token: its status, the challenge's `error`, and what to tell the client.
#[derive(Debug)]
pub struct Refusal {
    pub status: axum::http::StatusCode,
    pub challenge: Option<String>,
    pub text: String,
}

/// An OAuth access token verified: whose, and the Arcane key its rule names (when there is a users file).
pub struct VerifiedToken {
    pub grant: Arc<OAuthGrant>,
    pub key: Option<String>,
    /// The users-file rule's place, for the per-caller limits.
    pub rule: Option<usize>,
}

/// A person's place among the per-caller limits' keys in `--oauth-issuer self` mode.
fn person_place(user: &str) -> usize {
    use sha2::Digest;
    let d = sha2::Sha256::digest(user.as_bytes());
    (u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x00ff_ffff) as usize
}

fn scopes_of(claims: &Map<String, Value>) -> Vec<String> {
    // `scope` is RFC 9068's (a space-separated string); `scp` is what Entra ID and Okta send
    // (a string or an array).
    let mut out = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(s)) => out.extend(s.split_whitespace().map(str::to_string)),
            Some(Value::Array(a)) => {
                out.extend(a.iter().filter_map(Value::as_str).map(str::to_string))
            }
            _ => {}
        }
    }
    out
}

/// A claim's text for a log line or a message: control characters dropped, clipped.
fn shown(v: Option<&Value>) -> String {
    let text = v.and_then(Value::as_str).unwrap_or("");
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    arcane_markdown::clip(&text, 100).into_owned()
}

/// A JWT's header, when it names an algorithm of [`ALGORITHMS`]; else why not. An unknown
/// `alg` (`none` among them) does not decode at all: there is no such algorithm.
pub fn header_of(token: &str) -> Result<jsonwebtoken::Header, &'static str> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| "its header names no algorithm this server accepts (never `none`)")?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(match header.alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                "it is signed with HMAC (HS256/HS384/HS512); this server accepts only the \
                 asymmetric algorithms RS*, PS*, ES256/ES384 and EdDSA"
            }
            _ => "its algorithm is not one this server accepts",
        });
    }
    Ok(header)
}

/// Checks a JWT against the key it names: the key fits the algorithm, the signature, `iss`,
/// `aud`, `exp` (required) and `nbf` with [`LEEWAY`]. The claims, or why not (a sentence for
/// the client and the log).
pub fn validate(
    token: &str,
    header: &jsonwebtoken::Header,
    jwk: &jsonwebtoken::jwk::Jwk,
    issuer: &str,
    audience: &str,
) -> Result<Map<String, Value>, String> {
    if let Some(ka) = &jwk.common.key_algorithm
        && format!("{ka:?}") != format!("{:?}", header.alg)
    {
        return Err("its algorithm is not the one its key is published for".into());
    }
    if matches!(
        jwk.common.public_key_use,
        Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
    ) {
        return Err("its key is published for encryption, not signing".into());
    }
    let key =
        DecodingKey::from_jwk(jwk).map_err(|_| "its key in the JWKS cannot be read".to_string())?;
    let mut v = Validation::new(header.alg);
    v.leeway = LEEWAY;
    v.validate_nbf = true;
    v.set_issuer(&[issuer]);
    v.set_audience(&[audience]);
    v.set_required_spec_claims(&["exp", "iss", "aud"]);
    jsonwebtoken::decode::<Map<String, Value>>(token, &key, &v)
        .map(|data| data.claims)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::InvalidSignature => "its signature does not verify".to_string(),
                K::ExpiredSignature => "it has expired".to_string(),
                K::ImmatureSignature => "it is not valid yet (nbf)".to_string(),
                K::InvalidIssuer => format!("it was issued by another issuer, not {issuer}"),
                K::InvalidAudience => {
                    format!("it was issued for another service: its audience is not {audience}")
                }
                K::MissingRequiredClaim(c) => format!("it has no `{c}` claim"),
                K::InvalidAlgorithm => "its algorithm does not fit its key".to_string(),
                _ => "it cannot be read as a signed JWT".to_string(),
            }
        })
}

impl OAuth {
    /// Checks the settings: `public_url` https (or loopback http), an issuer URL of the same
    /// kind, the users file readable and valid.
    pub fn new(
        public_url: &str,
        issuer: &str,
        audience: Option<&str>,
        introspection: Option<(String, Option<(String, String)>)>,
        users: Option<&std::path::Path>,
        http: reqwest::Client,
        own: Option<SelfSettings>,
    ) -> anyhow::Result<OAuth> {
        use anyhow::bail;
        let public = url::Url::parse(public_url).map_err(|e| {
            anyhow::anyhow!("--public-url {public_url:?} is not a URL ({e}): give the address clients reach this server by, e.g. https://mcp.example.com")
        })?;
        let secure = public.scheme() == "https"
            || (public.scheme() == "http" && provider::is_loopback(&public));
        if !secure || public.host().is_none() {
            bail!(
                "--public-url {public_url} must be https:// (http:// only on loopback): OAuth \
                 access tokens travel in every request"
            );
        }
        if public.query().is_some() || public.fragment().is_some() {
            bail!("--public-url {public_url} must have no query or fragment");
        }
        let public_trimmed = public_url.trim_end_matches('/').to_string();
        let own = if issuer.eq_ignore_ascii_case("self") {
            if introspection.is_some() || users.is_some() || audience.is_some() {
                bail!(
                    "--oauth-issuer self issues its own tokens, each carrying the person's own \
                     Arcane key: --oauth-introspection-url, --oauth-users and --oauth-audience \
                     are for an outside identity provider; drop them"
                );
            }
            let Some(s) = own else {
                bail!("--oauth-issuer self is not available here");
            };
            let sealer = match s.state_key {
                Some(key) => seal::Sealer::new(key, true),
                None => seal::Sealer::random()?,
            };
            Some(Arc::new(issuer::Issuer::new(
                &public_trimmed,
                &format!("{public_trimmed}/mcp"),
                sealer,
                provider::is_loopback(&public),
                s.tls,
                http.clone(),
            )))
        } else {
            None
        };
        if own.is_none() && !provider::fetchable(issuer) {
            bail!(
                "--oauth-issuer {issuer} must be an https:// URL (http:// only on loopback): \
                 its keys decide who may operate Arcane"
            );
        }
        if let Some((url, _)) = &introspection
            && !provider::fetchable(url)
        {
            bail!("--oauth-introspection-url {url} must be https:// (http:// only on loopback)");
        }
        let public_url = public_trimmed;
        let resource = format!("{public_url}/mcp");
        let users = users.map(Users::load).transpose()?;
        let issuer = if own.is_some() {
            public_url.clone()
        } else {
            issuer.to_string()
        };
        Ok(OAuth {
            audience: audience
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map_or_else(|| resource.clone(), str::to_string),
            resource,
            public_url,
            provider: Provider::new(issuer, http),
            introspection,
            users,
            own,
        })
    }

    /// The protected-resource metadata (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.provider.issuer],
            "scopes_supported": [SCOPE_READ, SCOPE_WRITE],
            "bearer_methods_supported": ["header"],
            "resource_name": "arcane-mcp",
            "resource_documentation": "https://github.com/arcane-mcp/arcane-mcp/blob/main/docs/oauth.md",
        })
    }

    fn metadata_url(&self) -> String {
        format!("{}{METADATA_PATH}", self.public_url)
    }

    /// The challenge of a request without a token (RFC 9728 §5.1, RFC 6750 §3).
    pub fn challenge(&self) -> String {
        format!(
            r#"Bearer resource_metadata="{}", scope="{SCOPE_READ} {SCOPE_WRITE}""#,
            self.metadata_url()
        )
    }

    fn invalid(&self, why: &str) -> Refusal {
        crate::logging::warn_throttled!("OAuth access token refused (401): {why}");
        Refusal {
            status: axum::http::StatusCode::UNAUTHORIZED,
            challenge: Some(format!(
                r#"Bearer resource_metadata="{}", error="invalid_token", error_description="{}""#,
                self.metadata_url(),
                why.replace(['"', '\\'], "'")
            )),
            text: format!(
                "The access token is not accepted: {why}. Sign in again (the client gets a new \
                 token from {}).",
                self.provider.issuer
            ),
        }
    }

    /// Validates a bearer credential that is none of the static tokens, and maps its holder.
    pub async fn admit(&self, token: &str) -> Result<VerifiedToken, Refusal> {
        if let Some(own) = &self.own {
            let a = own.admit(token).await.map_err(|why| self.invalid(&why))?;
            let place = person_place(&a.user);
            return Ok(VerifiedToken {
                grant: Arc::new(OAuthGrant {
                    subject: a.user,
                    issuer: self.provider.issuer.clone(),
                    client_id: Some(a.client),
                    grant_id: Some(a.grant),
                    write: a.write,
                    rule: None,
                    preset: None,
                    tools: Vec::new(),
                }),
                key: Some(a.key),
                // Each person is counted apart by the per-caller limits (a place derived
                // from the name: there is no rule to number them by).
                rule: Some(place),
            });
        }
        let claims = if token.split('.').count() == 3 {
            self.verify_jwt(token).await?
        } else if let Some((url, client)) = &self.introspection {
            self.introspected(url, client.as_ref(), token).await?
        } else {
            return Err(self.invalid(
                "it is not a JWT, and this server validates opaque tokens only through \
                 introspection (--oauth-introspection-url)",
            ));
        };
        let scopes = scopes_of(&claims);
        let write = scopes.iter().any(|s| s == SCOPE_WRITE);
        let read = write || scopes.iter().any(|s| s == SCOPE_READ);
        let subject = match claims.get("sub").or_else(|| claims.get("client_id")) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(self.invalid("it names no subject (`sub`)")),
        };
        let issuer = self.provider.issuer.clone();
        if !read {
            crate::logging::warn_throttled!(
                subject = %shown(claims.get("sub")),
                "OAuth access token without {SCOPE_READ} or {SCOPE_WRITE} refused (403)"
            );
            return Err(Refusal {
                status: axum::http::StatusCode::FORBIDDEN,
                challenge: Some(format!(
                    r#"Bearer resource_metadata="{}", error="insufficient_scope", scope="{SCOPE_READ} {SCOPE_WRITE}", error_description="the token grants neither {SCOPE_READ} nor {SCOPE_WRITE}""#,
                    self.metadata_url()
                )),
                text: format!(
                    "The access token grants neither {SCOPE_READ} nor {SCOPE_WRITE}: sign in \
                     again and grant {SCOPE_READ} (reading) or {SCOPE_WRITE} (changes too)."
                ),
            });
        }
        let client_id = claims
            .get("client_id")
            .or_else(|| claims.get("azp"))
            .and_then(Value::as_str)
            .map(|c| shown(Some(&Value::String(c.to_string()))));
        let mut grant = OAuthGrant {
            subject: shown(Some(&Value::String(subject))),
            issuer,
            client_id,
            grant_id: None,
            write,
            rule: None,
            preset: None,
            tools: Vec::new(),
        };
        let Some(users) = &self.users else {
            return Ok(VerifiedToken {
                grant: Arc::new(grant),
                key: None,
                rule: None,
            });
        };
        let Some((rules, at)) = users.find(&claims) else {
            crate::logging::warn_throttled!(
                subject = %grant.subject,
                issuer = %grant.issuer,
                "OAuth caller refused (403): no rule of the users file (--oauth-users) matches \
                 its token; add one for this subject or one of its groups"
            );
            return Err(Refusal {
                status: axum::http::StatusCode::FORBIDDEN,
                challenge: None,
                text: format!(
                    "You are signed in as {:?} (issuer {}), but this server has no Arcane account \
                     for you: no rule of its users file matches. Ask its operator to add you \
                     (--oauth-users).",
                    grant.subject, grant.issuer
                ),
            });
        };
        let rule = &rules[at];
        grant.rule = Some(rule.describe());
        grant.preset = rule.preset.clone();
        grant.tools = rule.tools.clone();
        Ok(VerifiedToken {
            grant: Arc::new(grant),
            key: Some(rule.key.clone()),
            rule: Some(rule.index),
        })
    }

    async fn verify_jwt(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        let header = header_of(token).map_err(|why| self.invalid(why))?;
        let jwk = match self.provider.key(header.kid.as_deref()).await {
            Ok(Some(k)) => k,
            Ok(None) => {
                return Err(self.invalid(
                    "it is signed with a key the identity provider does not publish (its kid is \
                     not in the JWKS)",
                ));
            }
            Err(e) => {
                tracing::warn!(
                    issuer = %self.provider.issuer,
                    "the identity provider's keys could not be read: {e:#}"
                );
                return Err(self.invalid(
                    "the identity provider's signing keys could not be read (see the server's log)",
                ));
            }
        };
        validate(token, &header, &jwk, &self.provider.issuer, &self.audience)
            .map_err(|why| self.invalid(&why))
    }

    async fn introspected(
        &self,
        url: &str,
        client: Option<&(String, String)>,
        token: &str,
    ) -> Result<Map<String, Value>, Refusal> {
        let answer = self
            .provider
            .introspect(url, client.map(|(a, b)| (a.as_str(), b.as_str())), token)
            .await;
        let claims = match answer {
            Ok(Some(c)) => c,
            Ok(None) => return Err(self.invalid("the identity provider says it is not active")),
            Err(e) => {
                tracing::warn!("token introspection failed: {e:#}");
                return Err(self.invalid(
                    "the identity provider could not be asked about it (see the server's log)",
                ));
            }
        };
        if let Some(iss) = claims.get("iss")
            && iss.as_str() != Some(self.provider.issuer.as_str())
        {
            return Err(self.invalid(&format!(
                "it was issued by another issuer, not {}",
                self.provider.issuer
            )));
        }
        // An opaque token must say whom it is for: a token for another service of the same
        // provider is not ours.
        let ours = match claims.get("aud") {
            Some(Value::String(a)) => *a == self.audience,
            Some(Value::Array(a)) => a.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !ours {
            return Err(self.invalid(&format!(
                "it was issued for another service: its audience is not {}",
                self.audience
            )));
        }
        let now = chrono::Utc::now().timestamp();
        if let Some(exp) = claims.get("exp").and_then(Value::as_i64)
            && exp + LEEWAY as i64 <= now
        {
            return Err(self.invalid("it has expired"));
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> reqwest::Client {
        arcane_engine::ensure_crypto_provider();
        reqwest::Client::new()
    }

    fn oauth(public: &str) -> anyhow::Result<OAuth> {
        OAuth::new(
            public,
            "https://idp.example.com/",
            None,
            None,
            None,
            client(),
            None,
        )
    }

    #[test]
    fn public_url_must_be_https_except_on_loopback() {
        let o = oauth("https://mcp.example.com/").unwrap();
        assert_eq!(o.resource, "https://mcp.example.com/mcp");
        assert_eq!(o.audience, o.resource);
        assert_eq!(
            o.challenge(),
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="arcane:read arcane:write""#
        );
        assert!(oauth("http://127.0.0.1:8000").is_ok());
        assert!(oauth("http://localhost:8000").is_ok());
        for bad in [
            "http://mcp.example.com",
            "mcp.example.com",
            "https://x/?a=1",
        ] {
            assert!(oauth(bad).is_err(), "{bad}");
        }
        let own = || {
            Some(SelfSettings {
                state_key: None,
                tls: arcane_engine::tls_config(None, false).unwrap(),
            })
        };
        let self_issuer = OAuth::new(
            "https://mcp.example.com/",
            "self",
            None,
            None,
            None,
            client(),
            own(),
        )
        .unwrap();
        assert_eq!(self_issuer.provider.issuer, "https://mcp.example.com");
        let issuer = self_issuer.own.as_ref().unwrap();
        assert_eq!(issuer.metadata()["issuer"], "https://mcp.example.com");
        assert!(!issuer.sealer.from_file);
        // On a network, metadata documents come from public addresses only.
        assert!(!issuer.clients.allow_private);
        let with_users = OAuth::new(
            "https://mcp.example.com",
            "self",
            Some("aud"),
            None,
            None,
            client(),
            own(),
        );
        assert!(with_users.err().unwrap().to_string().contains("drop them"));
        let http_issuer = OAuth::new(
            "https://mcp.example.com",
            "http://idp.example.com",
            None,
            None,
            None,
            client(),
            None,
        );
        assert!(http_issuer.err().unwrap().to_string().contains("https://"));
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let c = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            scopes_of(&c(json!({"scope": "openid arcane:read"}))),
            vec!["openid", "arcane:read"]
        );
        assert_eq!(
            scopes_of(&c(json!({"scp": ["arcane:write"]}))),
            vec!["arcane:write"]
        );
        assert!(scopes_of(&c(json!({"scope": 7}))).is_empty());
    }
}
