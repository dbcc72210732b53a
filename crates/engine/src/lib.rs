//! arcane-engine: runs one action of the catalog against Arcane (docs/surfaces.md#how-a-call-runs)
//! and returns what it produced as data: an [`Outcome`] or a [`CallError`] whose text carries
//! the next step. Resolve → policy → validate → names to IDs → confirm → safe-mode preview →
//! HTTP or WebSocket → capped read.
//!
//! It neither renders results nor speaks the MCP protocol (no rmcp; ARCHITECTURE.md, "Crates"):
//! the server's presentation turns an outcome into a tool result, and the server's state comes
//! in through a [`Scope`] and its [`Caller`]. Escaping comes from `arcane-markdown`, the
//! catalog, the policy and the client profile's decoding from `arcane-catalog`, the masking of
//! secrets from `arcane-redact`.

mod context;
mod effect;
mod encode;
mod errors;
mod executor;
mod feed;
mod handlers;
mod http;
mod jsonlines;
mod known;
mod outcome;
mod path;
mod request;
mod resolve;
mod scope;
mod trace;
mod transfer;
mod websocket;

// The executor, what a call carries, and what it returns.
pub use context::{CallContext, ExecConfig, PROGRESS_QUEUE};
pub use effect::{
    Baseline, Effect, Known, Listed, MAX_LISTED, Named, describe, describe_known, describe_with,
};
pub use executor::{
    DEFAULT_MAX_CONCURRENT_REQUESTS, Detached, Executor, ProbeError, Ready, how_to_ask_for_less,
    unknown_action_text, unsure,
};
pub use feed::{Feed, FeedError, IDLE as FEED_IDLE};
pub use outcome::{
    CallError, ChangeState, HandlerOutput, Outcome, Produced, Then, check_before_retrying,
};
pub use scope::{Caller, Scope, ValidatorError, Validators};

// What the outcomes carry: stream summaries, downloads, WebSocket handler output.
pub use jsonlines::{
    MAX_MESSAGE, Progress, StreamErrorKind, StreamSummary, read_response, read_stream_within,
};
pub use transfer::{
    DEFAULT_MAX_DOWNLOAD, Download, DownloadBody, FormError, FormField, TransferError,
    multipart_form, read_download,
};
pub use websocket::{
    ExecOptions, ExecOutput, HandlerError, LogOptions, LogOutput, StatsOutput, WsTarget,
    collect_logs, run_exec, sample_stats, sample_system_stats, ws_url,
};

// One implementation per job, shared with the server: the error-body reader, the path-segment
// encoder and the TLS/HTTP plumbing (the one rustls configuration). The redactor is its own
// crate, `arcane-redact`.
pub use errors::{error_detail, type_of};
pub use http::{
    Arcane, Auth, BodyError, DEFAULT_MAX_RESPONSE_BYTES, client_builder, ensure_crypto_provider,
    read_capped, read_json, redirect_location, redirect_text, same_origin_redirects, tls_config,
};
pub use path::{
    PathSlot, Refusal, SegmentError, fill, is_dot_or_empty, refusal, segment, segment_path,
    structure_in,
};
