//! What a call runs with: the engine's settings ([`ExecConfig`]) and what one call carries
//! besides its arguments ([`CallContext`]: cancellation, progress, the caller's credential).

use std::time::Duration;

use crate::http::Auth;
use crate::jsonlines;

/// Connection settings of the executor.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Arcane base URL, without `/api`.
    pub base_url: String,
    pub auth: Auth,
    /// The default environment for `environmentId`.
    pub environment: String,
    pub timeout: Duration,
    /// Largest answer body read into memory (`--max-response-bytes`).
    pub max_response_bytes: usize,
    /// Most requests to Arcane in flight at once (`--max-concurrent-requests`).
    pub max_concurrent_requests: usize,
    /// Show secret values in the text of results (`--show-secrets`); masked by default.
    /// structuredContent always carries Arcane's values.
    pub show_secrets: bool,
}

/// How many progress reports may wait for a slow receiver before further ones are dropped: a
/// stream reports every line, and the result summarizes them anyway.
pub const PROGRESS_QUEUE: usize = 64;

/// What a call carries besides its arguments: the client's cancellation, and where progress
/// goes when the client sent a progress token.
#[derive(Default, Clone)]
pub struct CallContext {
    /// Cancelled when the client sends `notifications/cancelled`; the HTTP request is dropped.
    pub cancel: tokio_util::sync::CancellationToken,
    /// Receives progress of long calls (JSON-lines streams), forwarded as
    /// `notifications/progress`. A bounded queue ([`PROGRESS_QUEUE`]): when the receiver falls
    /// behind (a client that does not read), reports are dropped rather than held.
    pub progress: Option<tokio::sync::mpsc::Sender<jsonlines::Progress>>,
    /// The caller's own Arcane credential (HTTP `X-Arcane-API-Key`, docs/security.md): when
    /// set, every request of the call carries it instead of the configured one.
    pub credential: Option<Auth>,
    /// Where that credential came from, in the words an error's next step names it with
    /// (the header the caller sent, the key a sign-in made); `None` for the header.
    pub credential_label: Option<&'static str>,
    /// The client cannot ask the person (no form elicitation): no question is read, so
    /// nothing is read from Arcane to write one (only a safe-mode preview is).
    pub cannot_ask: bool,
}

impl CallContext {
    /// The credential this call's requests carry.
    pub fn auth<'a>(&'a self, configured: &'a Auth) -> &'a Auth {
        self.credential.as_ref().unwrap_or(configured)
    }
}
