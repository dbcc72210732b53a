//! Confirmation the user sees (docs/security.md#confirmation): a destructive call without
//! `"confirm": true` asks the user through the client's `elicitation/create` form — what will
//! happen, on what — and runs only on an explicit yes. A client that cannot show a form keeps
//! the `"confirm": true` rule.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
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
    peer.peer_info().is_some_and(|i| {
        i.capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    })
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
    let Ok(schema) = ElicitationSchema::builder()
        .required_bool_with("confirm", |b| {
            b.title("Run it")
                .description("Tick to run this destructive action")
        })
        .build()
    else {
        return Answer::CannotAsk;
    };
    let request = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(action, params, environment),
        requested_schema: schema,
    };
    let asked = tokio::select! {
        r = peer.create_elicitation_with_timeout(request, Some(ANSWER_WITHIN)) => r,
        _ = cancel.cancelled() => {
            return Answer::No(format!("{} was cancelled while waiting for the user; nothing was sent.", action.id));
        }
    };
    let refused = |why: &str| {
        Answer::No(format!(
            "The user {why} running {}; nothing was sent. Do not retry unless the user asks.",
            action.id
        ))
    };
    match asked {
        Ok(r) => match r.action {
            ElicitationAction::Accept
                if r.content
                    .as_ref()
                    .and_then(|c| c.get("confirm"))
                    .and_then(Value::as_bool)
                    == Some(true) =>
            {
                Answer::Yes
            }
            ElicitationAction::Accept => refused("did not tick the box for"),
            ElicitationAction::Decline => refused("declined"),
            _ => refused("cancelled"),
        },
        Err(rmcp::service::ServiceError::Timeout { .. }) => refused("did not answer in time for"),
        // The protocol version forbids asking, or the client failed to: the param rule.
        Err(e) => {
            tracing::debug!(error = %e, "elicitation unavailable");
            Answer::CannotAsk
        }
    }
}
