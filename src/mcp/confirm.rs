//! Confirmation the user sees (docs/security.md#confirmation): a call that needs it
//! (destructive, or `confirm: always`) asks the user through the client's
//! `elicitation/create` form — what will happen, on what, in the words of
//! [`arcane_engine::Effect`] — and runs only on an explicit yes. With `--confirm-mode elicit`
//! the question is asked whatever the arguments say (the model may be prompt-injected; its
//! `"confirm": true` is not the person's yes); a client that cannot show a form keeps the
//! `"confirm": true` rule.
//!
//! Clients of the 2026-07-28 protocol cannot be asked in the middle of a call: the call is
//! answered with an incomplete result carrying the question and a sealed request state
//! ([`RoundTrips`]), and runs when the client retries it with the user's yes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequiredResult, InputResponses,
    RequestId, RequestStateCodec, SealOptions, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use arcane_catalog::{Action, Undo};
use arcane_engine::CallContext;
use arcane_engine::Effect;

use crate::load::snapshot::Snapshot;

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

/// The question: what the call will do (the action, the environment, every parameter it was
/// given, as the safe-mode preview says it), and why it is asked.
pub fn message(action: &Action, effect: &Effect) -> String {
    format!(
        "An assistant wants to run {}\n\n{}{} Run it?",
        effect.text(),
        why_asked(action),
        lost(action)
    )
}

/// A call that takes back a change of the history (`history.undo`, docs/undo.md): asked as
/// `history.undo` is, whatever the class of the call it became, its question naming the change.
pub(crate) struct Undoing<'a> {
    /// `history.undo`, whose rules decide whether and how the person is asked.
    pub(crate) action: &'a Action,
    /// The change taken back, in words: its ID, action, time and who made it.
    pub(crate) change: String,
    /// What changed since and is overwritten (`force`), when anything did.
    pub(crate) drift: Option<String>,
}

/// The question of an undo: the change it takes back, what changed since, the call that puts
/// back what the change changed (`effect`, of `action`), why it is asked.
pub fn undo_message(action: &Action, effect: &Effect, change: &str, drift: Option<&str>) -> String {
    let since = drift
        .map(|d| format!("\n\nSince then {d}; undoing it overwrites that."))
        .unwrap_or_default();
    // A call that would run unasked is asked as an undo: the person decides to go back.
    let why = if action.needs_confirmation() {
        why_asked(action)
    } else {
        "It takes back a change.".to_string()
    };
    format!(
        "An assistant wants to undo {change}. To put back what it changed, it would run {}{since}\n\n{why}{} Run it?",
        effect.text(),
        lost(action)
    )
}

/// Why the person is asked about `action`, as a sentence.
fn why_asked(action: &Action) -> String {
    if action.safety.destructive {
        "This is destructive.".to_string()
    } else if let Some(what) = &action.safety.reveals_secret {
        format!("It hands {what} to the assistant.")
    } else if action.safety.impact.asks() {
        // The class says why in words a person knows (docs/security.md#impact-classes).
        format!("It {}.", action.safety.impact.why_asked())
    } else {
        "It can run or change anything this action reaches.".to_string()
    }
}

/// What is lost, as the question's sentence: said only where the catalog knows the change is
/// lost (docs/undo.md), since a person weighs a question that says it of everything less than
/// one that says it when it is true.
fn lost(action: &Action) -> String {
    match &action.safety.undo {
        Some(Undo::Never(what)) => format!(" It cannot be undone: {what}."),
        _ => String::new(),
    }
}

/// The form of the question `text`: what will happen, on what, and one box to tick.
fn form(text: &str) -> Option<ElicitRequestParams> {
    let schema = ElicitationSchema::builder()
        .required_bool_with("confirm", |b| {
            b.title("Run it").description("Tick to run this action")
        })
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        // The question quotes names Arcane gave: never the server's own credentials.
        message: arcane_redact::mask_known(text).into_owned(),
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

/// Sends the question and waits for the answer, for at most [`ANSWER_WITHIN`]. The request
/// carries the call it was asked from (`origin`, SEP-2260's marker): rmcp's Streamable HTTP
/// session then sends it on that call's own response stream rather than on the session's
/// event stream (`GET /mcp`), which a client need not have opened. rmcp attaches the marker
/// itself only within the handler's task, and the call runs on the calls' runtime.
async fn elicit(
    peer: &Peer<RoleServer>,
    request: ElicitRequestParams,
    origin: Option<&RequestId>,
) -> Result<ElicitResult, ServiceError> {
    let mut request = ElicitRequest::new(request);
    if let Some(id) = origin {
        request
            .extensions
            .insert(rmcp::service::OriginatingRequestId(id.clone()));
    }
    let answer = peer
        .send_request_with_option(
            ServerRequest::ElicitRequest(request),
            PeerRequestOptions::with_timeout(ANSWER_WITHIN),
        )
        .await?
        .await_response()
        .await?;
    match answer {
        ClientResult::ElicitResult(r) => Ok(r),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Asks the user to confirm a call of `action` with the question `text`, through the session
/// that `origin` (the call's request) came in on.
pub async fn ask(
    peer: &Peer<RoleServer>,
    origin: Option<&RequestId>,
    action: &Action,
    text: &str,
    cancel: &CancellationToken,
) -> Answer {
    if !can_ask(peer) {
        return Answer::CannotAsk;
    }
    let Some(request) = form(text) else {
        return Answer::CannotAsk;
    };
    let asked = tokio::select! {
        r = elicit(peer, request, origin) => r,
        _ = cancel.cancelled() => {
            return Answer::No(format!("{} was cancelled while waiting for the user; nothing was sent.", action.id));
        }
    };
    match asked {
        Ok(r) => read(&r, action),
        // The question may never have been shown: say how it reaches the person.
        Err(ServiceError::Timeout { .. }) => Answer::No(format!(
            "The user did not answer in time for running {}; nothing was sent. Do not retry \
             unless the user asks. If the question never reached them: over HTTP the client \
             receives it on the call's own response stream or the session's event stream \
             (GET /mcp), so keep one open; or have the user confirm another way.",
            action.id
        )),
        // The client declared forms but did not show this one: refused, never the param
        // rule (the model's word does not stand in for a question that failed).
        Err(e) => {
            tracing::debug!(error = %e, "elicitation failed");
            Answer::No(format!(
                "The client could not show the confirmation of {}; nothing was sent. Try again, \
                 or ask the user to check their client.",
                action.id
            ))
        }
    }
}

/// The key of the question in `inputRequests` and of its answer in `inputResponses`.
const QUESTION: &str = "confirm";

/// At most this many questions are open at once, however they are asked (a round trip's is
/// remembered until answered or for [`ANSWER_WITHIN`]; a session's while its call waits for
/// the answer); beyond it a call is refused rather than memory grown.
const MAX_OPEN: usize = 10_000;

/// At most this many of them from one caller (an HTTP bearer token, else an HTTP session, else
/// the stdio session), so that one caller cannot fill the table and block everyone else's
/// confirmations, nor hold a call of `--max-calls-in-flight` per session open on each.
pub const MAX_OPEN_PER_CALLER: usize = 100;
const _: () = assert!(MAX_OPEN_PER_CALLER < MAX_OPEN);

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
///
/// With `--state-key-file` ([`RoundTrips::with_key`]) replicas sharing the key open each
/// other's states: the answer may reach another replica than the question. One yes then runs
/// the call once per process at most — each remembers the states answered through it until
/// they expire, and no state is shared (docs/security.md#confirmation).
pub struct RoundTrips {
    /// `None` without system randomness: then nobody is asked this way.
    codec: Option<RequestStateCodec>,
    /// Open questions, both ways of asking: when asked, and the digest of who asked.
    open: Mutex<HashMap<Key, (Instant, [u8; 32])>>,
    /// The number of the next question asked through a session.
    next_held: AtomicU64,
    /// With a shared key: the nonces of states answered here, when, and the digest of who
    /// answered, until they expire — what makes a state another replica sealed single-use here.
    answered: Option<Mutex<HashMap<String, Answered>>>,
}

/// When a state was answered here, and the digest of who answered it.
type Answered = (Instant, [u8; 32]);

/// The most states answered through one replica remembered at once (a state a replica cannot
/// remember is refused, never run unremembered): each was asked within [`ANSWER_WITHIN`], at
/// most [`MAX_OPEN`] open per replica at a time, so this leaves room for a few replicas.
const MAX_ANSWERED: usize = 4 * MAX_OPEN;

/// The most of them from one caller: asking and answering at once frees the caller's place
/// among the open questions, so without this one caller could fill the whole table in a few
/// minutes and have everyone's answers refused.
const MAX_ANSWERED_PER_CALLER: usize = 4 * MAX_OPEN_PER_CALLER;
const _: () = assert!(MAX_ANSWERED_PER_CALLER < MAX_ANSWERED);

/// How long an answered state is remembered beyond its life: for replicas whose clocks
/// disagree by up to this much (the expiry is sealed in the state, in the asker's time).
const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The label of the confirmation states' key derived from `--state-key-file`: the key file's
/// bytes seal the OAuth state directly, never the confirmations.
const DERIVED_LABEL: &[u8] = b"arcane-mcp confirmation request states v1";

/// An open question in the table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A round trip's, by the nonce of its sealed state: forgotten when answered or expired.
    Nonce(String),
    /// A session's, by its number: held by its [`Held`] until the call stops waiting.
    Held(u64),
}

/// A question asked through a session, counted in the table until dropped: when the answer
/// comes, the call is cancelled, the question times out, or the call's task goes.
pub(crate) struct Held<'a> {
    trips: &'a RoundTrips,
    key: Key,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut open = self.trips.open.lock().unwrap_or_else(|e| e.into_inner());
        open.remove(&self.key);
    }
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
            next_held: AtomicU64::new(0),
            answered: None,
        }
    }

    /// A set whose states are sealed under a key derived (HMAC-SHA-256) from `key`, the
    /// `--state-key-file` every replica behind one address shares, and `deployment` (the
    /// Arcane URL and default environment it serves): a state sealed by one replica opens at
    /// the others, never at a deployment serving another Arcane with the same key file.
    pub fn with_key(key: [u8; 32], deployment: &str) -> RoundTrips {
        use hmac::{KeyInit, Mac};
        let derived = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key)
            .map(|mut m| {
                m.update(&binding([DERIVED_LABEL, deployment.as_bytes()]));
                m.finalize().into_bytes().to_vec()
            })
            .ok();
        RoundTrips {
            codec: derived.and_then(|k| RequestStateCodec::try_new(k).ok()),
            open: Mutex::new(HashMap::new()),
            next_held: AtomicU64::new(0),
            answered: Some(Mutex::new(HashMap::new())),
        }
    }

    /// Takes a place for a question about to be asked through a session, from `caller` (whose
    /// quota it counts against, as a round trip's); the refusal's text when none is left.
    pub(crate) fn hold(&self, caller: &[u8], action: &Action) -> Result<Held<'_>, String> {
        let key = Key::Held(self.next_held.fetch_add(1, Ordering::Relaxed));
        self.reserve(key.clone(), caller)
            .map(|()| Held { trips: self, key })
            .map_err(|full| full.text(action))
    }

    /// Enters a question in the table, when neither the table nor `caller`'s quota is full.
    fn reserve(&self, key: Key, caller: &[u8]) -> Result<(), Full> {
        let who: [u8; 32] = {
            use sha2::Digest;
            sha2::Sha256::digest(caller).into()
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // A held question goes when its call stops waiting, however long that takes.
        open.retain(|k, (asked, _)| {
            matches!(k, Key::Held(_)) || now.duration_since(*asked) < ANSWER_WITHIN
        });
        if open.len() >= MAX_OPEN {
            return Err(Full::Everyone);
        }
        if open.values().filter(|(_, w)| *w == who).count() >= MAX_OPEN_PER_CALLER {
            return Err(Full::Caller);
        }
        open.insert(key, (now, who));
        Ok(())
    }

    /// Whether questions can be asked this way (the system gave randomness for the key).
    pub fn available(&self) -> bool {
        self.codec.is_some()
    }

    /// The step for a call to confirm from a client of the 2026-07-28 protocol: ask when it
    /// carries no request state; otherwise open the state (bound to `binding`: the call and
    /// its caller) and read the answer to it. `caller` says who asks, for the per-caller quota.
    pub fn step(
        &self,
        action: &Action,
        text: &str,
        caller: &[u8],
        binding: &[u8],
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Step {
        let Some(codec) = &self.codec else {
            return Step::Answered(Answer::CannotAsk);
        };
        let Some(state) = state else {
            return match self.question(codec, text, caller, binding) {
                Ok(q) => Step::Ask(q),
                Err(full) => Step::Answered(Answer::No(full.text(action))),
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
        let asked_here = self.take(&sealed.nonce).is_some();
        match self.answer_once(&sealed.nonce, asked_here, caller) {
            Ok(true) => {}
            Ok(false) => return Step::Answered(stale()),
            Err(full) => return Step::Answered(Answer::No(full.text(action))),
        }
        let answer = responses
            .and_then(|r| r.get(QUESTION))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        Step::Answered(match answer {
            Some(r) => read(&r, action),
            None => refused("gave no answer for", action),
        })
    }

    /// The incomplete result asking the question, with its sealed state; an error when too
    /// many questions are open, in all or from this caller.
    fn question(
        &self,
        codec: &RequestStateCodec,
        text: &str,
        caller: &[u8],
        binding: &[u8],
    ) -> Result<InputRequiredResult, Full> {
        let request = form(text).ok_or(Full::Unsealable)?;
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|_| Full::Unsealable)?;
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        self.reserve(Key::Nonce(nonce.clone()), caller)?;
        let options = SealOptions::new()
            .associated_data(binding)
            .ttl(ANSWER_WITHIN);
        let state = codec
            .seal_json_with(&Sealed { nonce }, &options)
            .map_err(|_| Full::Unsealable)?;
        let questions = [(
            QUESTION.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(request)),
        )];
        Ok(InputRequiredResult::new(
            Some(questions.into_iter().collect()),
            Some(state),
        ))
    }

    /// Whether the state with `nonce` (opened: sealed by this key, for this call and caller,
    /// not expired) may be answered now. Without a shared key: when this process asked it and
    /// it was still open. With one: when it was not answered through this replica before,
    /// whichever replica asked it; then it is remembered until it expires.
    fn answer_once(&self, nonce: &str, asked_here: bool, caller: &[u8]) -> Result<bool, Full> {
        let Some(answered) = &self.answered else {
            return Ok(asked_here);
        };
        let who: [u8; 32] = {
            use sha2::Digest;
            sha2::Sha256::digest(caller).into()
        };
        let mut answered = answered.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        answered.retain(|_, (at, _)| now.duration_since(*at) < ANSWER_WITHIN + CLOCK_SKEW);
        if answered.contains_key(nonce) {
            return Ok(false);
        }
        if answered.values().filter(|(_, w)| *w == who).count() >= MAX_ANSWERED_PER_CALLER {
            return Err(Full::AnsweredCaller);
        }
        if answered.len() >= MAX_ANSWERED {
            return Err(Full::Answered);
        }
        answered.insert(nonce.to_string(), (now, who));
        Ok(true)
    }

    /// Forgets an open question; `None` when it was not open (answered already, or expired).
    fn take(&self, nonce: &str) -> Option<Instant> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.remove(&Key::Nonce(nonce.to_string()))
            .map(|(asked, _)| asked)
            .filter(|asked| asked.elapsed() < ANSWER_WITHIN)
    }
}

/// Why no question could be opened.
enum Full {
    /// The table of open questions is full.
    Everyone,
    /// This caller has [`MAX_OPEN_PER_CALLER`] open.
    Caller,
    /// The form or its sealed state could not be made.
    Unsealable,
    /// The table of recently answered states (shared key) is full.
    Answered,
    /// This caller answered [`MAX_ANSWERED_PER_CALLER`] of them within their life.
    AnsweredCaller,
}

impl Full {
    /// The refusal of a call whose question could not be opened: what to do next.
    fn text(&self, action: &Action) -> String {
        match self {
            Full::Everyone => format!(
                "Too many confirmations are waiting for an answer; nothing was sent. Try {} \
                 again in a few minutes.",
                action.id
            ),
            Full::Caller => format!(
                "You have {MAX_OPEN_PER_CALLER} confirmations waiting for the user's answer; \
                 nothing was sent. Have the user answer them (or wait {} minutes for them to \
                 expire), then call {} again.",
                ANSWER_WITHIN.as_secs() / 60,
                action.id
            ),
            Full::Answered => format!(
                "Too many confirmations were answered in the last {} minutes; nothing was sent. \
                 Call {} again in a few minutes to be asked anew.",
                (ANSWER_WITHIN + CLOCK_SKEW).as_secs() / 60,
                action.id
            ),
            Full::AnsweredCaller => format!(
                "You answered {MAX_ANSWERED_PER_CALLER} confirmations in the last {} minutes; \
                 nothing was sent. Call {} again in a few minutes to be asked anew.",
                (ANSWER_WITHIN + CLOCK_SKEW).as_secs() / 60,
                action.id
            ),
            Full::Unsealable => format!(
                "The confirmation of {} could not be prepared; nothing was sent. Try again.",
                action.id
            ),
        }
    }
}

impl Default for RoundTrips {
    fn default() -> Self {
        RoundTrips::new()
    }
}

/// How a call that asks can ask the person (docs/security.md#confirmation). Owned: the handler
/// reads it from the request's client and HTTP parts and it travels with the call to the
/// runtime the call is prepared on.
pub(crate) enum Asking {
    /// Not at all (the one-shot command): the `confirm: true` rule.
    No,
    /// In the middle of the call, through `elicitation/create` (sessions of earlier protocols).
    Session {
        peer: rmcp::Peer<RoleServer>,
        /// The call's request, whose response stream carries the question over HTTP.
        origin: RequestId,
        /// Whose quota of open questions it counts against, as a round trip's `who`.
        who: Vec<u8>,
    },
    /// By an incomplete result and the client's retry (the 2026-07-28 protocol).
    RoundTrip {
        /// Whether this request's client declared form elicitation.
        declared: bool,
        /// Who is calling (session, bearer token, Arcane key), to bind the question to.
        caller: Vec<u8>,
        /// Whose quota of open questions it counts against: the bearer token, else the
        /// session, else (stdio) the one session of the process.
        who: Vec<u8>,
        /// The retry's sealed request state and the person's answers, if it carries them.
        state: Option<String>,
        responses: Option<rmcp::model::InputResponses>,
    },
}

/// Fields in one byte string, each after its length, so that no two lists of fields give the
/// same bytes.
pub(crate) fn binding<'a>(fields: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        out.extend_from_slice(&(f.len() as u64).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// How a call that needs confirmation was settled.
pub(crate) enum Confirmed {
    /// Ask the person: answer the call with this question (the 2026-07-28 round trip).
    Ask(rmcp::model::InputRequiredResult),
    /// Run it if confirmed: how (`param` or `elicitation`), or `None` (then the executor
    /// refuses it, saying to pass `"confirm": true`).
    By(Option<&'static str>),
    /// The person said no, or could not be asked: the text of the refusal.
    Refused(String),
}

/// Whether the person can be asked on this call at all (the client can show a form).
pub(crate) fn askable(round_trips: &RoundTrips, asking: &Asking) -> bool {
    match asking {
        Asking::No => false,
        Asking::Session { peer, .. } => can_ask(peer),
        Asking::RoundTrip { declared, .. } => *declared && round_trips.available(),
    }
}

/// Settles the confirmation of a prepared call (docs/security.md#confirmation). When the
/// client can ask the person and the mode is `elicit`, the person is asked whatever the
/// arguments say: `"confirm": true` comes from the model, which may be prompt-injected.
pub(crate) async fn settle(
    round_trips: &RoundTrips,
    snap: &Snapshot,
    ready: &arcane_engine::Ready<'_>,
    confirm: bool,
    asking: Asking,
    ctx: &CallContext,
    undoing: Option<&Undoing<'_>>,
) -> Confirmed {
    let by_param = Confirmed::By(confirm.then_some("param"));
    // An undo is asked by `history.undo`'s rules, with its own question.
    let (action, text) = match undoing {
        Some(u) => (
            u.action,
            undo_message(ready.action, ready.effect(), &u.change, u.drift.as_deref()),
        ),
        None => (ready.action, message(ready.action, ready.effect())),
    };
    if !snap.policy.asks_for(action) {
        return by_param;
    }
    if !askable(round_trips, &asking)
        || (confirm && snap.policy.takes_confirm_param_for(action, true))
    {
        return by_param;
    }
    let answer = match asking {
        Asking::No => Answer::CannotAsk,
        Asking::Session { peer, origin, who } => {
            // Counted while the call waits for the answer, as a round trip's question is: one
            // caller cannot hold more, over stdio or in HTTP sessions.
            match round_trips.hold(&who, action) {
                Ok(_held) => ask(&peer, Some(&origin), action, &text, &ctx.cancel).await,
                Err(text) => Answer::No(text),
            }
        }
        Asking::RoundTrip {
            caller,
            who,
            state,
            responses,
            ..
        } => {
            // The question holds for this call only: its action and parameters as they
            // will be sent (names already looked up), from this caller.
            let sent = serde_json::to_vec(ready.sent()).unwrap_or_default();
            let mut fields = vec![
                caller.as_slice(),
                ready.action.id.as_bytes(),
                sent.as_slice(),
            ];
            // An undo's yes holds for the question read: the change it names, what drifted.
            if undoing.is_some() {
                fields.push(text.as_bytes());
            }
            let bound = binding(fields);
            match round_trips.step(
                action,
                &text,
                &who,
                &bound,
                state.as_deref(),
                responses.as_ref(),
            ) {
                Step::Ask(question) => return Confirmed::Ask(question),
                Step::Answered(answer) => answer,
            }
        }
    };
    match answer {
        Answer::Yes => Confirmed::By(Some("elicitation")),
        Answer::No(text) => Confirmed::Refused(text),
        Answer::CannotAsk => by_param,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kill() -> (Action, Effect) {
        let a = Action {
            id: "container.kill".into(),
            domain: "container".into(),
            name: "kill".into(),
            title: "Kill container".into(),
            params: serde_json::from_value(json!([
                {"name": "containerId", "wireName": "containerId", "location": "path", "required": true, "schema": {}}
            ]))
            .unwrap(),
            source: "test".into(),
            request: arcane_catalog::Request {
                method: "POST".into(),
                path: "/environments/{id}/containers/{containerId}/kill".into(),
                input_schema: json!({}),
                ..Default::default()
            },
            safety: arcane_catalog::Safety {
                mutating: true,
                destructive: true,
                ..Default::default()
            },
            ..Action::default()
        };
        let params = json!({"containerId": "web-1"});
        let effect =
            arcane_engine::describe(&a, params.as_object().unwrap(), &Default::default(), None);
        (a, effect)
    }

    fn asks(trips: &RoundTrips, caller: &[u8]) -> Result<(), String> {
        let (a, effect) = kill();
        match trips.step(&a, &message(&a, &effect), caller, b"call", None, None) {
            Step::Ask(_) => Ok(()),
            Step::Answered(Answer::No(text)) => Err(text),
            Step::Answered(other) => panic!("{other:?}"),
        }
    }

    /// One caller cannot fill the table of open questions: past its quota it is refused with a
    /// text that says what to do, and another caller is still asked.
    #[test]
    fn one_caller_cannot_take_every_open_confirmation() {
        let trips = RoundTrips::new();
        for _ in 0..MAX_OPEN_PER_CALLER {
            asks(&trips, b"token-a").expect("within the quota");
        }
        let refused = asks(&trips, b"token-a").unwrap_err();
        assert!(
            refused.contains("confirmations waiting") && refused.contains("nothing was sent"),
            "{refused}"
        );
        asks(&trips, b"token-b").expect("another caller is still asked");
    }

    /// The state of a question asked, and the answer of a yes with it, at `trips`, by `caller`.
    fn ask_as(trips: &RoundTrips, caller: &[u8]) -> String {
        let (a, effect) = kill();
        match trips.step(&a, &message(&a, &effect), caller, b"call", None, None) {
            Step::Ask(q) => q.request_state.expect("a state"),
            _ => panic!("not asked"),
        }
    }

    fn ask_state(trips: &RoundTrips) -> String {
        ask_as(trips, b"caller")
    }

    fn yes_as(trips: &RoundTrips, state: &str, binding: &[u8], caller: &[u8]) -> Answer {
        let (a, effect) = kill();
        let responses: InputResponses = serde_json::from_value(json!({
            QUESTION: {"action": "accept", "content": {"confirm": true}}
        }))
        .unwrap();
        match trips.step(
            &a,
            &message(&a, &effect),
            caller,
            binding,
            Some(state),
            Some(&responses),
        ) {
            Step::Answered(answer) => answer,
            Step::Ask(_) => panic!("asked again"),
        }
    }

    fn yes(trips: &RoundTrips, state: &str, binding: &[u8]) -> Answer {
        yes_as(trips, state, binding, b"caller")
    }

    /// With a shared key, the states answered through a replica are remembered per caller: one
    /// caller asking and answering without end is refused past its share, and another
    /// caller's yes still runs.
    #[test]
    fn one_caller_cannot_fill_the_answered_states() {
        let trips = RoundTrips::with_key([7; 32], "arcane");
        for _ in 0..MAX_ANSWERED_PER_CALLER {
            let state = ask_as(&trips, b"flood");
            assert_eq!(yes_as(&trips, &state, b"call", b"flood"), Answer::Yes);
        }
        let state = ask_as(&trips, b"flood");
        match yes_as(&trips, &state, b"call", b"flood") {
            Answer::No(text) => assert!(
                text.contains("You answered") && text.contains("nothing was sent"),
                "{text}"
            ),
            other => panic!("{other:?}"),
        }
        let state = ask_as(&trips, b"someone else");
        assert_eq!(
            yes_as(&trips, &state, b"call", b"someone else"),
            Answer::Yes
        );
    }

    /// Replicas sharing `--state-key-file`: a question asked at one is answered at another,
    /// once there; a replica with its own key, or another key file, refuses the state; the
    /// binding to the call still holds.
    #[test]
    fn replicas_sharing_a_key_answer_each_others_questions() {
        let (one, two) = (
            RoundTrips::with_key([7; 32], "arcane"),
            RoundTrips::with_key([7; 32], "arcane"),
        );
        let state = ask_state(&one);
        assert!(matches!(yes(&two, &state, b"another call"), Answer::No(_)));
        assert_eq!(yes(&two, &state, b"call"), Answer::Yes);
        assert!(
            matches!(yes(&two, &state, b"call"), Answer::No(ref t) if t.contains("already used")),
            "one yes runs once at a replica"
        );
        for other in [
            RoundTrips::new(),
            RoundTrips::with_key([8; 32], "arcane"),
            RoundTrips::with_key([7; 32], "another arcane"),
        ] {
            assert!(matches!(yes(&other, &state, b"call"), Answer::No(_)));
        }
        // Asked and answered at the same replica: once, as without a shared key.
        let state = ask_state(&two);
        assert_eq!(yes(&two, &state, b"call"), Answer::Yes);
        assert!(matches!(yes(&two, &state, b"call"), Answer::No(_)));
        // Without a shared key, only the process that asked opens its state.
        let alone = RoundTrips::new();
        let state = ask_state(&alone);
        assert!(matches!(
            yes(&RoundTrips::new(), &state, b"call"),
            Answer::No(_)
        ));
        assert_eq!(yes(&alone, &state, b"call"), Answer::Yes);
    }

    /// The question names the target and says why it is asked.
    #[test]
    fn the_question_shows_the_effect() {
        let (a, effect) = kill();
        let q = message(&a, &effect);
        assert!(
            q.contains("`containerId`: `web-1`") && q.contains("destructive"),
            "{q}"
        );
    }
}
