//! Who an HTTP request comes from, as the transport's gate admitted it. The gate puts one
//! [`HttpCaller`] in each request's extensions; the handler reads nothing else of HTTP (no
//! header, no transport type).

use std::sync::Arc;

use arcane_engine::Auth;

/// A request the HTTP gate let through, as the MCP side needs it.
#[derive(Debug, Clone)]
pub struct HttpCaller {
    /// The legacy session's ID (`Mcp-Session-Id`) as sent; the 2026-07-28 protocol has none.
    pub session: Option<String>,
    /// The bearer token it was let in with: its name and fingerprint, never the token.
    pub token: Option<Arc<TokenLabel>>,
    /// The caller's own Arcane key, when the key policy lets it be used.
    pub credential: Option<Auth>,
    /// Where that key came from, as an error's next step names it (`None`: the
    /// `X-Arcane-API-Key` header).
    pub credential_label: Option<&'static str>,
    /// Whose quota of open confirmations it counts against: the digest of the token (and key)
    /// the gate authenticated — the same however the `Authorization` header is spelt —, or,
    /// without tokens, the client's address (an IPv6 /64, as the rate limit counts it) when
    /// the listener knows it.
    pub quota_key: Option<Vec<u8>>,
    /// The bytes a 2026-07-28 question is bound to: the session ID, the `Authorization` and
    /// the caller's-key headers as sent, each after its length.
    pub binding: Vec<u8>,
    /// Who the OAuth access token it came with names, and what it may do; `None` for a static
    /// bearer token or none.
    pub grant: Option<Arc<OAuthGrant>>,
}

/// What an OAuth access token lets its holder do (docs/oauth.md): its scopes and the users
/// file's narrowing. Checked for each call before anything is prepared or asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthGrant {
    /// The token's subject (`sub`, else `client_id`) and issuer, for the audit log.
    pub subject: String,
    pub issuer: String,
    pub client_id: Option<String>,
    /// The grant's ID when this server issued the token (`--oauth-issuer self`): what a
    /// person's sign-ins are told apart by.
    pub grant_id: Option<String>,
    /// Whether it holds `arcane:write`; with `arcane:read` alone, only reading actions run.
    pub write: bool,
    /// The users file's rule it matched, as the logs name it.
    pub rule: Option<String>,
    /// The rule's preset and allow-list, narrowing what it may run.
    pub preset: Option<String>,
    pub tools: Vec<String>,
}

/// `snap` as a caller with `grant` sees it: an OAuth caller whose grant narrows what it may
/// run sees the view of what it may (`Snapshot::view`), everyone else the snapshot itself.
pub fn view_of(
    snap: Arc<crate::load::snapshot::Snapshot>,
    grant: Option<&OAuthGrant>,
) -> Arc<crate::load::snapshot::Snapshot> {
    match grant {
        Some(g) => snap.view(&g.narrowing()),
        None => snap,
    }
}

impl OAuthGrant {
    /// Which of its holder's grants this is, for what belongs to one grant (its MCP tasks): the
    /// grant's ID when this server issued it, else the subject, client and scope of an outside
    /// issuer's token — so a person's read-only sign-in is not their read-and-change one.
    pub fn which(&self) -> Vec<u8> {
        match &self.grant_id {
            Some(id) => crate::mcp::confirm::binding([b"grant".as_slice(), id.as_bytes()]),
            None => crate::mcp::confirm::binding([
                b"token".as_slice(),
                self.issuer.as_bytes(),
                self.subject.as_bytes(),
                self.client_id.as_deref().unwrap_or_default().as_bytes(),
                if self.write {
                    b"write".as_slice()
                } else {
                    b"read".as_slice()
                },
            ]),
        }
    }

    /// What it narrows: its scope and its users-file rule's preset and allow-list. Callers
    /// with equal narrowings see the same view of the snapshot (`Snapshot::view`).
    pub fn narrowing(&self) -> arcane_catalog::Narrowing {
        arcane_catalog::Narrowing {
            read_only: !self.write,
            preset: self.preset.clone(),
            tools: self.tools.clone(),
        }
    }

    /// Why `action` may not run for this caller, or `None`, by `view`'s policy (the view of
    /// its [`narrowing`](Self::narrowing)): a reading action needs `arcane:read` (which every
    /// admitted token holds), a change or a credential reveal `arcane:write`; then the rule's
    /// preset and allow-list apply. The same rules take what it may not run out of its tool
    /// list and search.
    pub fn refuses(
        &self,
        action: &arcane_catalog::Action,
        view: &arcane_catalog::Policy,
    ) -> Option<String> {
        let why = view.by_caller(action)?;
        if !self.write && (action.safety.mutating || action.safety.reveals_secret.is_some()) {
            // The scope, not the rule: what to do is to sign in again.
            return Some(why);
        }
        Some(format!(
            "{why} — for {:?}, by the OAuth users file's {}",
            self.subject,
            self.rule.as_deref().unwrap_or("rule")
        ))
    }
}

/// What the logs and the audit log say of an accepted token: its name, when it was given one,
/// and its fingerprint (the first 12 hex digits of its SHA-256).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenLabel {
    pub name: Option<String>,
    pub fingerprint: String,
    /// Its place in the token list: what the per-token limits count by.
    pub index: usize,
}

impl std::fmt::Display for TokenLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(n) => write!(f, "'{n}' (fingerprint {})", self.fingerprint),
            None => write!(f, "fingerprint {}", self.fingerprint),
        }
    }
}

impl HttpCaller {
    /// The caller of the HTTP request behind `extensions` (rmcp puts the request's parts
    /// there); `None` outside HTTP.
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<&HttpCaller> {
        extensions
            .get::<http::request::Parts>()?
            .extensions
            .get::<HttpCaller>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(grant_id: Option<&str>, client: &str, write: bool) -> OAuthGrant {
        OAuthGrant {
            subject: "alice".into(),
            issuer: "https://idp.example".into(),
            client_id: Some(client.into()),
            grant_id: grant_id.map(Into::into),
            write,
            rule: None,
            preset: None,
            tools: Vec::new(),
        }
    }

    /// An outside issuer's tokens of one person are one grant per client and scope; a
    /// self-issued grant is its ID, whatever its scope became at a refresh (the policy check
    /// of each task request covers a narrowed scope).
    #[test]
    fn which_grant_a_token_is() {
        let outside = grant(None, "desktop", true);
        assert_eq!(outside.which(), grant(None, "desktop", true).which());
        assert_ne!(outside.which(), grant(None, "desktop", false).which());
        assert_ne!(outside.which(), grant(None, "phone", true).which());
        let own = grant(Some("g1"), "desktop", true);
        assert_eq!(own.which(), grant(Some("g1"), "desktop", false).which());
        assert_ne!(own.which(), grant(Some("g2"), "desktop", true).which());
        assert_ne!(own.which(), outside.which());
    }
}
