//! What a call produced, typed: [`Outcome`] for a call that ran, [`CallError`] for one that did
//! not. No protocol types and no Markdown here; the presentation (`present/`) turns either
//! into a tool result (docs/output-format.md). A [`CallError`]'s `Display` is the whole error
//! text, next step included (docs/output-format.md#errors).

use std::fmt;

use serde_json::{Map, Value};

use crate::jsonlines::StreamSummary;
use crate::transfer::Download;
use crate::websocket::{ExecOutput, LogOutput, StatsOutput};
use arcane_catalog::Action;

/// A call that ran: the action, the parameters it ran with (names resolved to IDs) and what
/// it produced.
#[derive(Debug)]
pub struct Outcome<'a> {
    pub action: &'a Action,
    pub params: Map<String, Value>,
    pub produced: Produced,
}

/// What an action produced.
#[derive(Debug)]
pub enum Produced {
    /// A JSON answer, as Arcane sent it (envelope included).
    Json(Value),
    /// A success without a body.
    NoBody { status: u16 },
    /// A JSON-lines stream, read to its end.
    Stream(StreamSummary),
    /// A file (or a non-JSON answer).
    Download(Download),
    /// The output of a handler action (WebSocket).
    Handler(HandlerOutput),
    /// Safe mode: the request that was not sent, secrets masked, and what it would do (the
    /// words a confirmation shows).
    Preview(Value, crate::effect::Effect),
}

/// The output of a handler action, by kind.
#[derive(Debug)]
pub enum HandlerOutput {
    Logs(LogOutput),
    Stats(StatsOutput),
    Exec(ExecOutput),
}

/// An optional sentence after a text: nothing, or a space and the sentence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Then(pub Option<String>);

impl fmt::Display for Then {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(s) => write!(f, " {s}"),
            None => Ok(()),
        }
    }
}

/// A call that failed; `Display` is the text the client reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No action of that name: the closest names, or the overlay's reason for excluding it.
    #[error("{0}")]
    UnknownAction(String),
    /// The policy withdraws the action (read-only, exclusions). A reason that ends its own
    /// sentence (an operator's preset description, say) gets no second full stop.
    #[error("{}. It cannot be run on this server.", .reason.trim_end_matches('.'))]
    Withdrawn { reason: String },
    /// The parameters do not fit the action (validation, encoded parameters).
    #[error("{0}")]
    Invalid(String),
    /// A name or reference names no object, or more than one.
    #[error("{0}")]
    Resolve(String),
    /// The list a name is looked up in could not be read.
    #[error("{0}")]
    LookupFailed(String),
    /// Cancelled while a name was being looked up.
    #[error("{action} was cancelled while looking up an ID; nothing was sent.")]
    CancelledLookup { action: String },
    /// A call that needs the person's confirmation (destructive, or `confirm: always`), without
    /// `confirm`.
    #[error(
        "{action} {why} ({what}), so it needs \"confirm\": true. Nothing was sent. Ask \
         the user, then call again with confirm set to true."
    )]
    NeedsConfirm {
        action: String,
        what: String,
        /// `is destructive`, or `needs the user's confirmation`.
        why: &'static str,
    },
    /// The request could not be built from the parameters.
    #[error("The request of {action} cannot be built — {detail}. Nothing was sent to Arcane.")]
    Unbuildable { action: String, detail: String },
    /// The multipart body could not be built.
    #[error("The request of {action} cannot be built — {detail}.")]
    Multipart { action: String, detail: String },
    #[error("The server is shutting down; nothing was sent.")]
    ShuttingDown,
    /// The client cancelled the call while the request was under way.
    #[error("{action} was cancelled; the request to Arcane was dropped.{then}")]
    Cancelled { action: String, then: Then },
    /// This machine ran out of a local resource (file descriptors, memory…).
    #[error(
        "{action} could not reach Arcane because this machine ran out of a local resource: \
         {what}. It is not a problem of Arcane or ARCANE_URL. Lower --max-concurrent-requests \
         (ARCANE_MCP_MAX_CONCURRENT_REQUESTS) or raise the open-file limit (ulimit -n) of the \
         server, then retry."
    )]
    LocalResource { action: String, what: String },
    /// The HTTP stack refused the request before a byte left.
    #[error(
        "{action} cannot be sent — {cause}. Nothing was sent to Arcane; check the parameters (header \
         values must be printable text, and the URL must not be too long)."
    )]
    Unsendable { action: String, cause: String },
    /// A read timed out.
    #[error(
        "{action} timed out after {secs}s waiting for Arcane at {base}. Retry, narrow the \
         request (filters, a smaller limit), or raise ARCANE_MCP_TIMEOUT."
    )]
    TimedOut {
        action: String,
        secs: u64,
        base: String,
    },
    /// A write timed out: it may have happened.
    #[error("{action} timed out after {secs}s. {then}")]
    WriteTimedOut {
        action: String,
        secs: u64,
        then: String,
    },
    /// No connection to Arcane.
    #[error(
        "Cannot connect to Arcane at {base} ({cause}). Check ARCANE_URL and that Arcane is \
         running and reachable from this machine."
    )]
    Unreachable { base: String, cause: String },
    /// The connection broke during the call.
    #[error("The connection to Arcane at {base} failed during {action} ({cause}).{then}")]
    Broken {
        base: String,
        action: String,
        cause: String,
        then: Then,
    },
    /// Arcane answered a redirect that was not followed.
    #[error("{0}")]
    Redirect(String),
    /// Arcane (or a page in front of it) answered an error: what it said and the next step.
    #[error("{text}")]
    Arcane {
        text: String,
        /// Its HTTP status (404: what the request names does not exist).
        status: u16,
    },
    /// The answer was larger than `--max-response-bytes`.
    #[error(
        "{action} — {cause}. {how}; or raise --max-response-bytes (ARCANE_MCP_MAX_RESPONSE_BYTES).{then}"
    )]
    TooLarge {
        action: String,
        cause: String,
        how: &'static str,
        then: Then,
    },
    /// A 2xx JSON answer that does not parse.
    #[error(
        "{action} answered {status} but its JSON body could not be read ({cause}); the answer \
         may have been cut. {then}"
    )]
    BadJson {
        action: String,
        status: u16,
        cause: String,
        then: String,
    },
    /// A stream that failed or was cut.
    #[error("{action} — {cause}{then}")]
    Stream {
        action: String,
        cause: String,
        then: Then,
    },
    /// A download that failed.
    #[error("{action} — {cause}")]
    Download { action: String, cause: String },
    /// A handler action that could not run or failed.
    #[error("{0}")]
    Handler(String),
}

impl CallError {
    /// A short, fixed name of the failure, for the `error.type` of a trace span: never the
    /// text, which quotes Arcane and the caller.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownAction(_) => "unknown_action",
            CallError::Withdrawn { .. } => "withdrawn",
            CallError::Invalid(_) => "invalid_params",
            CallError::Resolve(_) | CallError::LookupFailed(_) => "resolve",
            CallError::CancelledLookup { .. } | CallError::Cancelled { .. } => "cancelled",
            CallError::NeedsConfirm { .. } => "needs_confirmation",
            CallError::Unbuildable { .. } | CallError::Multipart { .. } => "unbuildable",
            CallError::ShuttingDown => "shutting_down",
            CallError::LocalResource { .. } => "local_resource",
            CallError::Unsendable { .. } => "unsendable",
            CallError::TimedOut { .. } | CallError::WriteTimedOut { .. } => "timeout",
            CallError::Unreachable { .. } => "unreachable",
            CallError::Broken { .. } => "broken",
            CallError::Redirect(_) => "redirect",
            CallError::Arcane { .. } => "arcane_error",
            CallError::TooLarge { .. } => "too_large",
            CallError::BadJson { .. } => "bad_json",
            CallError::Stream { .. } => "stream",
            CallError::Download { .. } => "download",
            CallError::Handler(_) => "handler",
        }
    }
}

/// How far a write that did not finish cleanly may have got; decides the sentence that asks the
/// model to look before retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeState {
    /// Cancelled mid-way: the change may have started.
    Started,
    /// The connection broke or the answer was cut: it may have happened.
    MayHaveHappened,
    /// Timed out: it may have happened anyway.
    Anyway,
    /// Arcane accepted the request, only its answer is unusable.
    Probably,
    /// The call succeeded, only its result cannot be sent.
    Succeeded,
    /// A stream was cut short.
    Unknown,
}

/// The one sentence that asks to check the state before retrying a write, with the served read
/// of the domain (`check` is " with `container.get`" or empty).
pub fn check_before_retrying(check: &str, state: ChangeState) -> String {
    match state {
        ChangeState::Started => {
            format!("The change may have started: check{check} before retrying.")
        }
        ChangeState::MayHaveHappened => {
            format!("The change may have happened: check{check} before retrying.")
        }
        ChangeState::Anyway => format!(
            "The change may have happened anyway: check the current state{check} before \
             retrying, rather than repeating the call blindly."
        ),
        ChangeState::Probably => format!(
            "Arcane accepted the request, so the change has probably happened: check{check} \
             before retrying."
        ),
        ChangeState::Succeeded => {
            format!("The call itself succeeded: check{check} rather than repeating it.")
        }
        ChangeState::Unknown => format!("Check the state{check} before retrying."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_the_hint_text() {
        let confirm = CallError::NeedsConfirm {
            action: "container.delete".into(),
            what: "Delete a container".into(),
            why: "is destructive",
        };
        assert_eq!(
            confirm.to_string(),
            "container.delete is destructive (Delete a container), so it needs \"confirm\": \
             true. Nothing was sent. Ask the user, then call again with confirm set to true."
        );
        let cancelled = CallError::Cancelled {
            action: "project.up".into(),
            then: Then(Some(check_before_retrying(
                " with `project.get`",
                ChangeState::Started,
            ))),
        };
        assert_eq!(
            cancelled.to_string(),
            "project.up was cancelled; the request to Arcane was dropped. The change may have \
             started: check with `project.get` before retrying."
        );
        let read = CallError::Cancelled {
            action: "project.list".into(),
            then: Then(None),
        };
        assert_eq!(
            read.to_string(),
            "project.list was cancelled; the request to Arcane was dropped."
        );
        let timeout = CallError::WriteTimedOut {
            action: "image.pull".into(),
            secs: 30,
            then: check_before_retrying("", ChangeState::Anyway),
        };
        assert_eq!(
            timeout.to_string(),
            "image.pull timed out after 30s. The change may have happened anyway: check the \
             current state before retrying, rather than repeating the call blindly."
        );
        // A reason that ends its own sentence gets no second full stop.
        let withdrawn = CallError::Withdrawn {
            reason: "container.kill is not part of your preset \"ops\" (Day-to-day work.).".into(),
        };
        assert_eq!(
            withdrawn.to_string(),
            "container.kill is not part of your preset \"ops\" (Day-to-day work.). It cannot be \
             run on this server."
        );
        let withdrawn = CallError::Withdrawn {
            reason: "read-only.".into(),
        };
        assert_eq!(
            withdrawn.to_string(),
            "read-only. It cannot be run on this server."
        );
        let large = CallError::TooLarge {
            action: "container.list".into(),
            cause: "too big".into(),
            how: "Ask for less",
            then: Then(None),
        };
        assert_eq!(
            large.to_string(),
            "container.list — too big. Ask for less; or raise --max-response-bytes \
             (ARCANE_MCP_MAX_RESPONSE_BYTES)."
        );
    }

    #[test]
    fn every_change_state_names_the_check() {
        for state in [
            ChangeState::Started,
            ChangeState::MayHaveHappened,
            ChangeState::Anyway,
            ChangeState::Probably,
            ChangeState::Succeeded,
            ChangeState::Unknown,
        ] {
            let text = check_before_retrying(" with `x.get`", state);
            assert!(text.contains(" with `x.get`"), "{state:?}: {text}");
            assert!(text.ends_with('.'), "{state:?}: {text}");
        }
    }
}
