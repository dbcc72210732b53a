//! A long-lived JSON-lines feed from Arcane: `GET /api/stream?channels=…`, the multiplexed
//! client stream of Arcane's web UI (docs/arcane-wire.md#the-client-stream). It never ends on
//! its own, so it is not an action: the server's live resources open one per credential in use
//! and read its events one by one ([`Executor::open_feed`]).
//!
//! Every line is bounded like every read (`--max-response-bytes`, split by the one JSON-lines
//! splitter of `jsonlines.rs`); a line that is not a JSON object is skipped; a feed silent for
//! longer than [`IDLE`] (Arcane sends a heartbeat every 15 s and drops a peer after 45 s) is
//! reported dead so the caller reconnects.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::executor::Executor;
use crate::http::Auth;
use crate::jsonlines::Lines;

/// Longest silence of an open feed before it counts as dead: Arcane's dead-peer timeout
/// (`clientStreamDeadPeerTimeout`, three heartbeats).
pub const IDLE: Duration = Duration::from_secs(45);

/// Why a feed could not be opened, or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    /// Arcane answered an error instead of the stream (its words, escaped).
    #[error("Arcane answered {status} to the client stream: {message}")]
    Status { status: u16, message: String },
    /// No connection, or the connection failed while reading (no URL: it may carry a password).
    #[error("the client stream failed: {0}")]
    Transport(String),
    /// The body ended.
    #[error("Arcane ended the client stream")]
    Ended,
    /// Nothing arrived within [`IDLE`].
    #[error("the client stream was silent for {} s", IDLE.as_secs())]
    Silent,
}

/// An open feed: its events, in order.
pub struct Feed {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    lines: Lines,
    queue: VecDeque<Value>,
    idle: Duration,
    /// Lines skipped: not JSON objects, or longer than the cap.
    pub skipped: u64,
}

impl Feed {
    /// The next event (a JSON object); an error ends the feed.
    pub async fn next(&mut self) -> Result<Value, FeedError> {
        loop {
            if let Some(v) = self.queue.pop_front() {
                return Ok(v);
            }
            let chunk = match tokio::time::timeout(self.idle, self.body.next()).await {
                Err(_) => return Err(FeedError::Silent),
                Ok(None) => return Err(FeedError::Ended),
                Ok(Some(Err(e))) => {
                    return Err(FeedError::Transport(crate::http::root_cause(&e)));
                }
                Ok(Some(Ok(b))) => b,
            };
            let mut skipped = 0;
            let queue = &mut self.queue;
            let overlong = self.lines.push(&chunk, |line, tail| {
                if tail {
                    return;
                }
                let text = String::from_utf8_lossy(line);
                let text = text.trim();
                if text.is_empty() {
                    return;
                }
                match serde_json::from_str::<Value>(text) {
                    Ok(v @ Value::Object(_)) => queue.push_back(v),
                    _ => skipped += 1,
                }
            });
            self.skipped += skipped + u64::from(overlong);
        }
    }
}

impl Executor {
    /// Opens Arcane's client stream for `channels` (comma-separated) with `credential` (else
    /// the configured one). The connection is not one of the request slots
    /// (`--max-concurrent-requests`): it stays open for as long as the caller reads it.
    pub async fn open_feed(
        &self,
        channels: &str,
        credential: Option<&Auth>,
    ) -> Result<Feed, FeedError> {
        self.open_feed_within(channels, credential, IDLE).await
    }

    /// [`Executor::open_feed`] with another silence limit (tests).
    pub async fn open_feed_within(
        &self,
        channels: &str,
        credential: Option<&Auth>,
        idle: Duration,
    ) -> Result<Feed, FeedError> {
        // The channel names are the caller's constants; anything else is not sent.
        let channels: String = channels
            .chars()
            .filter(|c| c.is_ascii_lowercase() || *c == ',')
            .collect();
        let url = format!("{}/api/stream?channels={channels}", self.config.base_url);
        let (h, v) = credential.unwrap_or(&self.config.auth).header();
        let send = self.arcane.reads.get(&url).header(h, v).send();
        let resp = match tokio::time::timeout(self.config.timeout, send).await {
            Err(_) => {
                return Err(FeedError::Transport(format!(
                    "no answer within {} s",
                    self.config.timeout.as_secs()
                )));
            }
            Ok(Err(e)) => return Err(FeedError::Transport(crate::http::root_cause(&e))),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let content_type = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let page = crate::http::read_prefix(resp, crate::http::MAX_ERROR_BODY).await;
            let err = crate::errors::error_detail(status.as_u16(), &content_type, &page);
            return Err(FeedError::Status {
                status: status.as_u16(),
                message: err.shown(),
            });
        }
        Ok(Feed {
            body: crate::http::body_stream(resp).boxed(),
            lines: Lines::new(self.config.max_response_bytes.max(1024)),
            queue: VecDeque::new(),
            idle,
            skipped: 0,
        })
    }
}
