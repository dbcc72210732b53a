//! Signing a person in to Arcane for the built-in authorization server's page (`issuer.rs`):
//! a username and password, for which Arcane makes a personal API key named after the client,
//! or a pasted key, checked with Arcane. Each request goes through the engine's client to
//! Arcane, its answer read capped.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::clients::Client;
use super::issuer::{Issuer, REFRESH_TTL, SignIn, now, pick};

/// Largest answer of Arcane's sign-in endpoints read (a login, a new key, `/auth/me`): each is a
/// small JSON object; a bigger one is read as no answer.
const MAX_ARCANE_ANSWER: usize = 64 * 1024;

/// When a key made at `now` expires in Arcane (RFC 3339).
fn key_expiry(now: i64) -> String {
    chrono::DateTime::from_timestamp(now + REFRESH_TTL, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Sends one of the sign-in's requests to Arcane: the status and the JSON answer (read
/// capped; `null` when it is none); `Err` when Arcane could not be reached.
async fn answer_of(req: reqwest::RequestBuilder) -> Result<(StatusCode, Value), reqwest::Error> {
    let r = req.send().await?;
    let status = r.status();
    let v = arcane_engine::read_json(r, MAX_ARCANE_ANSWER)
        .await
        .unwrap_or(Value::Null);
    Ok((status, v))
}

impl Issuer {
    /// Signs in to Arcane with a username and password and makes a personal API key named
    /// after the client; the user's name and the key.
    pub(super) async fn sign_in(
        &self,
        user: &str,
        password: &str,
        client: &Client,
    ) -> Result<(String, String), SignIn> {
        if user.is_empty() || password.is_empty() {
            return Err(SignIn::Again(
                "Enter your Arcane username and password, or paste an API key below.".into(),
            ));
        }
        let unreachable = |_| {
            SignIn::Failed("Arcane could not be reached to sign you in; try again later.".into())
        };
        let r = self
            .to_arcane()
            .post(self.arcane("/auth/login"))
            .json(&json!({"username": user, "password": password}))
            .timeout(Duration::from_secs(15));
        let (status, v) = answer_of(r).await.map_err(unreachable)?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(SignIn::Wrong(
                "Arcane did not accept this username and password.".into(),
            ));
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(SignIn::Again(
                "Arcane refuses more sign-in attempts for now; wait a minute and try again.".into(),
            ));
        }
        let token = pick(&v, "token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        let authenticated = pick(&v, "status")
            .and_then(Value::as_str)
            .is_none_or(|s| s == "authenticated");
        let Some(token) = token.filter(|_| status.is_success() && authenticated) else {
            if status.is_success() {
                return Err(SignIn::Again(
                    "Arcane asks this account for a further step (a passkey or a one-time code) that this page cannot do. Create an API key in Arcane (Settings → API Keys) and paste it in the API key field below.".into(),
                ));
            }
            return Err(SignIn::Failed(format!(
                "Arcane answered the sign-in with HTTP {status}; try again later."
            )));
        };
        let name = pick(&v, "user")
            .and_then(|u| u.get("username"))
            .and_then(Value::as_str)
            .unwrap_or(user)
            .to_string();
        let label: String = format!("arcane-mcp: {}", client.name)
            .chars()
            .take(100)
            .collect();
        let r = self
            .to_arcane()
            .post(self.arcane("/auth/me/api-keys"))
            .bearer_auth(token)
            // The key ends when the longest refresh token of this sign-in would: a grant left
            // behind does not leave a key that works for ever.
            .json(&json!({
                "name": label,
                "description": format!("Made by arcane-mcp when you let {} use Arcane as you; delete it to end that access.", client.name),
                "expiresAt": key_expiry(now()),
            }))
            .timeout(Duration::from_secs(15));
        let (status, v) = answer_of(r).await.map_err(unreachable)?;
        match pick(&v, "key").and_then(Value::as_str) {
            Some(k) if status.is_success() && !k.is_empty() => {
                tracing::info!(user = %name, key_name = %label, "OAuth sign-in: Arcane API key created");
                Ok((name, k.to_string()))
            }
            _ => Err(SignIn::Failed(format!(
                "You are signed in, but Arcane refused to make an API key for this client (HTTP {status}). Paste an API key of yours instead, or ask Arcane's administrator."
            ))),
        }
    }

    /// Checks a pasted key with Arcane (`GET /auth/me`); its owner's name and the key.
    /// Arcane lets only a signed-in session make personal keys, so the pasted key itself is
    /// the one calls run with.
    pub(super) async fn with_key(&self, key: &str) -> Result<(String, String), SignIn> {
        if key.is_empty() {
            return Err(SignIn::Again(
                "Paste an Arcane API key, or sign in with your username and password.".into(),
            ));
        }
        match self.whoami(key).await {
            Ok(Some(name)) => Ok((name, key.to_string())),
            Ok(None) => Err(SignIn::Again(
                "Arcane did not accept this API key (it may be deleted or expired).".into(),
            )),
            Err(()) => Err(SignIn::Failed(
                "Arcane could not be reached to check the key; try again later.".into(),
            )),
        }
    }

    /// Whose `key` is: `Some(name)`, `None` when Arcane refuses it, `Err` when Arcane did not
    /// answer.
    pub(super) async fn whoami(&self, key: &str) -> Result<Option<String>, ()> {
        let r = self
            .to_arcane()
            .get(self.arcane("/auth/me"))
            .header("x-api-key", key)
            .timeout(Duration::from_secs(10));
        let (status, v) = answer_of(r).await.map_err(|_| ())?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(());
        }
        Ok(Some(
            pick(&v, "username")
                .and_then(Value::as_str)
                .unwrap_or("an Arcane user")
                .to_string(),
        ))
    }
}
