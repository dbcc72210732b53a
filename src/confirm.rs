//! Confirmation the user sees (docs/security.md#confirmation): a destructive call without
//! `"confirm": true` asks the user through the client's `elicitation/create` form — what will
//! happen, on what — and runs only on an explicit yes. A client that cannot show a form keeps
//! the `"confirm": true` rule.
//!
//! Clients of the 2026-07-28 protocol cannot be asked in the middle of a call: the call is
//! answered with an incomplete result carrying the question and a sealed request state
//! ([`RoundTrips`]), and runs when the client retries it with the user's yes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use arcane_catalog::Action;
use arcane_markdown::excerpt;

/// How long the user has to answer before the call is refused.
const ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// The user's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Accepted with the box ticked: run it.
    Yes,
    /// Declined, cancelled, unticked or unanswered: the text of the refusal.
    No(String),
    /// The client cannot show a form (or the protocol forbids asking): the param rule applies.
    CannotAsk,
}

/// Whether the client declared form elicitation (an empty `elicitation: {}` means form).
pub fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|i| declares_forms(Some(&i.capabilities)))
}

/// Whether these capabilities declare form elicitation (an empty `elicitation: {}` means form).
pub fn declares_forms(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The question: the action, its title, environment and the targets among the parameters.
pub fn message(action: &Action, params: &Map<String, Value>, environment: &str) -> String {
    let targets: Vec<String> = params
        .iter()
        .filter(|(k, _)| *k != "environmentId" && (k.ends_with("Id") || k.ends_with("Ids")))
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{k} = {}", excerpt(&v, 120))
        })
        .collect();
    format!(
        "An assistant wants to run {} — {} — in environment {}{}. This is destructive and \
         cannot be undone. Run it?",
        action.id,
        excerpt(&action.title, 200),
        excerpt(environment, 64),
        if targets.is_empty() {
            String::new()
        } else {
            format!(" on {}", targets.join(", "))
        }
    )
}

/// The form of the question: what will happen, on what, and one box to tick.
fn form(
    action: &Action,
    params: &Map<String, Value>,
    environment: &str,
) -> Option<ElicitRequestParams> {
    let schema = ElicitationSchema::builder()
        .required_bool_with("confirm", |b| {
            b.title("Run it")
                .description("Tick to run this destructive action")
        })
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(action, params, environment),
        requested_schema: schema,
    })
}

/// The refusal text of an answer other than a ticked yes.
fn refused(why: &str, action: &Action) -> Answer {
    Answer::No(format!(
        "The user {why} running {}; nothing was sent. Do not retry unless the user asks.",
        action.id
    ))
}

/// The user's answer to the form: yes only on an accept with the box ticked.
fn read(result: &ElicitResult, action: &Action) -> Answer {
    match result.action {
        ElicitationAction::Accept
            if result
                .content
                .as_ref()
                .and_then(|c| c.get("confirm"))
                .and_then(Value::as_bool)
                == Some(true) =>
        {
            Answer::Yes
        }
        ElicitationAction::Accept => refused("did not tick the box for", action),
        ElicitationAction::Decline => refused("declined", action),
        _ => refused("cancelled", action),
    }
}

/// Asks the user to confirm a destructive call.
pub async fn ask(
    peer: &Peer<RoleServer>,
    action: &Action,
    params: &Map<String, Value>,
    environment: &str,
    cancel: &CancellationToken,
) -> Answer {
    if !can_ask(peer) {
        return Answer::CannotAsk;
    }
    let Some(request) = form(action, params, environment) else {
        return Answer::CannotAsk;
    };
    let asked = tokio::select! {
        r = peer.create_elicitation_with_timeout(request, Some(ANSWER_WITHIN)) => r,
        _ = cancel.cancelled() => {
            return Answer::No(format!("{} was cancelled while waiting for the user; nothing was sent.", action.id));
        }
    };
    match asked {
        Ok(r) => read(&r, action),
        Err(rmcp::service::ServiceError::Timeout { .. }) => {
            refused("did not answer in time for", action)
        }
        // The protocol version forbids asking, or the client failed to: the param rule.
        Err(e) => {
            tracing::debug!(error = %e, "elicitation unavailable");
            Answer::CannotAsk
        }
    }
}

/// The key of the question in `inputRequests` and of its answer in `inputResponses`.
const QUESTION: &str = "confirm";

/// At most this many questions are open at once (each is remembered until answered or for
/// [`ANSWER_WITHIN`]); beyond it a call is refused rather than memory grown.
const MAX_OPEN: usize = 10_000;

/// What the sealed request state carries: a random number, remembered while the question is
/// open, so that one yes runs the call once.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    nonce: String,
}

/// Multi-round-trip confirmation (2026-07-28): the question goes out in an incomplete result
/// with a request state sealed by an HMAC under a key made at startup, bound to the call (its
/// action and parameters) and its caller (session, bearer token, Arcane key), valid for
/// [`ANSWER_WITHIN`] and for one answer. A state that was altered, made for another call or
/// caller, expired or already used is refused; the client cannot forge one.
pub struct RoundTrips {
    /// `None` without system randomness: then nobody is asked this way.
    codec: Option<RequestStateCodec>,
    open: Mutex<HashMap<String, Instant>>,
}

/// The step of a multi-round-trip confirmation.
pub enum Step {
    /// Ask: answer the call with this incomplete result.
    Ask(InputRequiredResult),
    /// The answer the retried call carried.
    Answered(Answer),
}

impl RoundTrips {
    /// A new set with a random key (states of another process, or of before a restart, are
    /// refused).
    pub fn new() -> RoundTrips {
        let mut key = [0u8; 32];
        let codec = match getrandom::fill(&mut key) {
            Ok(()) => RequestStateCodec::try_new(key.to_vec()).ok(),
            Err(e) => {
                // Without randomness a state could be forged: such clients keep the param rule.
                tracing::warn!(error = %e, "no system randomness for confirmation states");
                None
            }
        };
        RoundTrips {
            codec,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The step for a destructive call without `confirm` from a client of the 2026-07-28
    /// protocol: ask when it carries no request state; otherwise open the state (bound to
    /// `binding`: the call and its caller) and read the answer to it.
    pub fn step(
        &self,
        action: &Action,
        params: &Map<String, Value>,
        environment: &str,
        binding: &[u8],
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Step {
        let Some(codec) = &self.codec else {
            return Step::Answered(Answer::CannotAsk);
        };
        let Some(state) = state else {
            return match self.question(codec, action, params, environment, binding) {
                Some(q) => Step::Ask(q),
                None => Step::Answered(Answer::No(format!(
                    "Too many confirmations are waiting for an answer; nothing was sent. Try {} \
                     again in a few minutes.",
                    action.id
                ))),
            };
        };
        let stale = || {
            Answer::No(format!(
                "The confirmation sent with this call does not belong to it (altered, made for \
                 another call or caller, expired or already used); nothing was sent. Call {} \
                 again without it to be asked anew.",
                action.id
            ))
        };
        let Ok(sealed) = codec.open_json_with::<Sealed>(state, binding) else {
            return Step::Answered(stale());
        };
        if self.take(&sealed.nonce).is_none() {
            return Step::Answered(stale());
        }
        let answer = responses
            .and_then(|r| r.get(QUESTION))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        Step::Answered(match answer {
            Some(r) => read(&r, action),
            None => refused("gave no answer for", action),
        })
    }

    /// The incomplete result asking the question, with its sealed state; `None` when too many
    /// questions are open.
    fn question(
        &self,
        codec: &RequestStateCodec,
        action: &Action,
        params: &Map<String, Value>,
        environment: &str,
        binding: &[u8],
    ) -> Option<InputRequiredResult> {
        let request = form(action, params, environment)?;
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            open.retain(|_, asked| now.duration_since(*asked) < ANSWER_WITHIN);
            if open.len() >= MAX_OPEN {
                return None;
            }
            open.insert(nonce.clone(), now);
        }
        let options = SealOptions::new()
            .associated_data(binding)
            .ttl(ANSWER_WITHIN);
        let state = codec.seal_json_with(&Sealed { nonce }, &options).ok()?;
        let questions = [(
            QUESTION.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(request)),
        )];
        Some(InputRequiredResult::new(
            Some(questions.into_iter().collect()),
            Some(state),
        ))
    }

    /// Forgets an open question; `None` when it was not open (answered already, or expired).
    fn take(&self, nonce: &str) -> Option<Instant> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.remove(nonce)
            .filter(|asked| asked.elapsed() < ANSWER_WITHIN)
    }
}

impl Default for RoundTrips {
    fn default() -> Self {
        RoundTrips::new()
    }
}
