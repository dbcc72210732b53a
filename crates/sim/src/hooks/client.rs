//! A typed client for the simulator's test hooks (`/__sim/…`, outside `/api`, no auth), so
//! tests speak the hook protocol through one implementation instead of spelling paths and
//! bodies by hand. `crates/sim/README.md` ("Test hooks") describes each hook.
//!
//! ```no_run
//! # async fn demo(sim: &arcane_sim::RunningSim) -> Result<(), arcane_sim::hooks::HookError> {
//! let hooks = arcane_sim::hooks::HooksClient::new(sim.base_url())?;
//! hooks.reset().await?;
//! hooks.add_faults(&serde_json::json!({"path": "/containers$", "kind": "status", "status": 503})).await?;
//! let seen = hooks.requests().await?;
//! # Ok(()) }
//! ```

use reqwest::Method;
use serde_json::{Value, json};

use crate::config::ArcaneVersion;

/// Why a hook call failed.
#[derive(Debug)]
pub enum HookError {
    /// The simulator could not be reached, or its answer was not JSON.
    Transport(reqwest::Error),
    /// The simulator refused the call (a 4xx/5xx); `body` is its JSON answer
    /// (`{"error": "…"}` for a bad state, fault or config).
    Refused { status: u16, body: Value },
}

impl HookError {
    /// The HTTP status of a refused call (`None` for a transport failure).
    pub fn status(&self) -> Option<u16> {
        match self {
            HookError::Transport(_) => None,
            HookError::Refused { status, .. } => Some(*status),
        }
    }

    /// The simulator's `error` text of a refused call.
    pub fn message(&self) -> String {
        match self {
            HookError::Transport(e) => e.to_string(),
            HookError::Refused { body, .. } => body
                .get("error")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| body.to_string()),
        }
    }
}

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookError::Transport(e) => write!(f, "simulator hook unreachable: {e}"),
            HookError::Refused { status, .. } => {
                write!(f, "simulator hook refused ({status}): {}", self.message())
            }
        }
    }
}

impl std::error::Error for HookError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HookError::Transport(e) => Some(e),
            HookError::Refused { .. } => None,
        }
    }
}

impl From<reqwest::Error> for HookError {
    fn from(e: reqwest::Error) -> Self {
        HookError::Transport(e)
    }
}

/// A client for one simulator's hooks.
#[derive(Debug, Clone)]
pub struct HooksClient {
    http: reqwest::Client,
    base: String,
}

impl HooksClient {
    /// A client for the simulator at `base_url` (`http://127.0.0.1:PORT`, as
    /// [`crate::RunningSim::base_url`] gives it). Installs rustls' ring provider as the process
    /// default when none is installed yet (reqwest needs one to build a client).
    pub fn new(base_url: impl Into<String>) -> Result<HooksClient, HookError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Ok(HooksClient::with_client(
            reqwest::Client::builder().build()?,
            base_url,
        ))
    }

    /// A client that sends through an existing `http` client.
    pub fn with_client(http: reqwest::Client, base_url: impl Into<String>) -> HooksClient {
        let base = base_url.into().trim_end_matches('/').to_string();
        HooksClient { http, base }
    }

    /// The simulator's base URL (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    async fn call(
        &self,
        method: Method,
        hook: &str,
        body: Option<&Value>,
    ) -> Result<Value, HookError> {
        let mut req = self
            .http
            .request(method, format!("{}/__sim/{hook}", self.base));
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        // Read whole: the answer is the test's own simulator's (its hooks' small JSON), never
        // Arcane's or another untrusted server's, whose bodies only the engine reads, capped.
        let text = resp.text().await?;
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(HookError::Refused { status, body })
        }
    }

    /// Every request under `/api` since the last reset, oldest first
    /// (`{"method","path","query","body","headers",…}`).
    pub async fn requests(&self) -> Result<Vec<Value>, HookError> {
        Ok(array(self.call(Method::GET, "requests", None).await?))
    }

    /// State back to the seed; request log, faults, streams and stream pace cleared.
    pub async fn reset(&self) -> Result<(), HookError> {
        self.call(Method::POST, "reset", None).await.map(drop)
    }

    /// The current state, in the state-file shape.
    pub async fn state(&self) -> Result<Value, HookError> {
        self.call(Method::GET, "state", None).await
    }

    /// Replaces the state and the seed a reset returns to.
    pub async fn set_state(&self, state: &Value) -> Result<(), HookError> {
        self.call(Method::POST, "state", Some(state))
            .await
            .map(drop)
    }

    /// Registers one fault (an object) or several (an array); returns how many were added.
    pub async fn add_faults(&self, faults: &Value) -> Result<u64, HookError> {
        let v = self.call(Method::POST, "faults", Some(faults)).await?;
        Ok(v["added"].as_u64().unwrap_or(0))
    }

    /// How many registered faults have not fired yet.
    pub async fn pending_faults(&self) -> Result<u64, HookError> {
        let v = self.call(Method::GET, "faults", None).await?;
        Ok(v["pending"].as_u64().unwrap_or(0))
    }

    /// Drops every registered fault.
    pub async fn clear_faults(&self) -> Result<(), HookError> {
        self.call(Method::DELETE, "faults", None).await.map(drop)
    }

    /// Every JSON-lines stream started since the last reset.
    pub async fn streams(&self) -> Result<Vec<Value>, HookError> {
        Ok(array(self.call(Method::GET, "streams", None).await?))
    }

    /// The run-time settings: `{"streamPaceMs", "arcaneVersion"}`.
    pub async fn config(&self) -> Result<Value, HookError> {
        self.call(Method::GET, "config", None).await
    }

    /// Changes run-time settings (any of `streamPaceMs`, `arcaneVersion`); returns them all.
    pub async fn set_config(&self, config: &Value) -> Result<Value, HookError> {
        self.call(Method::POST, "config", Some(config)).await
    }

    /// Switches the imitated Arcane.
    pub async fn set_version(&self, version: ArcaneVersion) -> Result<(), HookError> {
        self.set_config(&json!({"arcaneVersion": version.as_str()}))
            .await
            .map(drop)
    }

    /// Sets the pause between two lines of a JSON-lines stream.
    pub async fn set_stream_pace_ms(&self, ms: u64) -> Result<(), HookError> {
        self.set_config(&json!({"streamPaceMs": ms}))
            .await
            .map(drop)
    }
}

fn array(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}
