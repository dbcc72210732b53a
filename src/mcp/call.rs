//! One `tools/call` in two steps. [`prepare`] parses the arguments for the active surface and
//! answers a search, or resolves the action once, prepares it and settles its confirmation;
//! [`run`] sends the [`Ready`] call, presents Arcane's answer and records it in the audit log.
//! Between the two the handler decides whether the call runs as an MCP task (docs/tasks.md):
//! nothing has reached Arcane yet but the lookups that turn names into IDs.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::{Map, Value};

use crate::load::reload::Live;
use crate::load::snapshot::Snapshot;
use crate::mcp::audit_log::{Actor, AuditLog, Disposition, Entry};
use crate::mcp::confirm::{Asking, Confirmed, RoundTrips, askable, settle};
use crate::present::{
    error_result, mask_known_message, mask_known_result, result_text, tool_result,
};
use crate::surface::{self, Call};
use arcane_catalog::{Action, Undo};
use arcane_engine::{CallContext, CallError, Detached, Executor, Outcome, Produced};
use arcane_markdown::code_span;

/// What every call runs on: the live snapshot, the executor, the audit log, the open
/// confirmations of 2026-07-28 clients and the MCP tasks (shared by every session).
#[derive(Clone)]
pub struct CallEnv {
    pub live: Arc<Live<Snapshot>>,
    pub exec: Arc<Executor>,
    /// The audit log of mutating calls (`--audit-log`).
    pub audit: Option<Arc<AuditLog>>,
    /// The history of changes (`--history`).
    pub history: Option<Arc<crate::mcp::history::History>>,
    pub round_trips: Arc<RoundTrips>,
    /// The MCP tasks of every session and caller (docs/tasks.md).
    pub tasks: Arc<crate::mcp::tasks::Tasks>,
}

/// What [`prepare`] ends with.
pub(crate) enum Prepared {
    /// The call's answer: a search, an invalid or refused call, a question for the client.
    Answer(CallToolResponse),
    /// An action checked, its names looked up and its confirmation settled: [`run`] sends it.
    Ready(Ready),
}

/// A call prepared and confirmed that nothing has sent yet, with the snapshot it was prepared
/// against (a reload in between changes nothing under it).
pub(crate) struct Ready {
    snap: Arc<Snapshot>,
    call: Box<Detached>,
    long_running: bool,
    /// How the call was confirmed (`param`, `elicitation`), if it was.
    confirmed: Option<&'static str>,
    /// The parameters as the model sent them, when there is an audit log (it masks them).
    audited: Option<Map<String, Value>>,
    started: Instant,
}

impl Ready {
    /// Whether the action can take minutes (the catalog's `longRunning`): one a client that
    /// speaks tasks gets a task for.
    pub(crate) fn long_running(&self) -> bool {
        self.long_running
    }

    /// The action's ID.
    pub(crate) fn action(&self) -> &str {
        self.call.action()
    }
}

/// The first step of a `tools/call` on behalf of `caller` (named in the audit log): parsed,
/// resolved, prepared, and confirmed as `asking` allows. An answer leaves with the server's
/// own credentials masked (`present::mask_known_result`).
pub(crate) async fn prepare(
    env: &CallEnv,
    tool: &str,
    args: Option<&Map<String, Value>>,
    ctx: &CallContext,
    caller: &Actor,
    asking: Asking,
) -> Prepared {
    // The snapshot is loaded once for the whole call, so a reload never changes the catalog
    // under it; an OAuth caller's is the view of what it may run.
    let snap = crate::mcp::caller::view_of(env.live.load(), caller.grant.as_deref());
    let span = tracing::Span::current();
    match surface::parse_call(snap.surface, &snap.catalog, &snap.policy, tool, args) {
        Err(text) => {
            span.record("arcane.outcome", "invalid");
            Prepared::Answer(error_result(text).into())
        }
        Ok(Call::Find { query, limit }) => {
            // The index may still be building on its thread (just after startup or a
            // reload): wait for it off the runtime's threads.
            let _ = snap.search_ready().await;
            let search = tracing::info_span!(target: "arcane_mcp::mcp::call", "arcane.search", "otel.name" = "search");
            let mut found = search.in_scope(|| crate::present::find::find(&snap, &query, limit));
            span.record("arcane.outcome", "ok");
            mask_known_result(&mut found);
            Prepared::Answer(found.into())
        }
        Ok(Call::Execute {
            action,
            params,
            confirm,
        }) => prepare_action(env, snap, &action, params, confirm, ctx, caller, asking).await,
    }
}

/// [`prepare`] for an action: the caller's grant, the engine's checks and lookups, the
/// person's confirmation. The history's actions are answered here (`history.list`), or
/// rewritten into the call the history recorded (`history.undo`), which then goes on as any
/// call: the same checks, a question naming the change, the audit log, the history.
#[allow(clippy::too_many_arguments)]
async fn prepare_action(
    env: &CallEnv,
    snap: Arc<Snapshot>,
    name: &str,
    params: Map<String, Value>,
    confirm: bool,
    ctx: &CallContext,
    caller: &Actor,
    asking: Asking,
) -> Prepared {
    let started = Instant::now();
    // Kept as the model sent them: the log redacts them itself.
    let mut audited = env.audit.is_some().then(|| params.clone());
    let scope = snap.scope();
    let ending = |confirmed, audited: &Option<Map<String, Value>>| Ending {
        confirmed,
        audited: audited.clone(),
        started,
    };
    let Some(action) = snap.catalog.resolve(name) else {
        let unknown = CallError::UnknownAction(arcane_engine::unknown_action_text(&scope, name));
        let result = conclude(
            env,
            &snap,
            None,
            Err(unknown),
            ending(None, &audited),
            ctx,
            caller,
        );
        return Prepared::Answer(result.into());
    };
    // The request's span (`crate::mcp::trace`) names the action when the catalog has it: an
    // ID the model made up is no attribute.
    let span = tracing::Span::current();
    span.record("arcane.action.id", action.id.as_str());
    // An OAuth caller's scopes and users-file rule, before anything is looked up or anyone is
    // asked (docs/oauth.md).
    if let Some(why) = caller
        .grant
        .as_ref()
        .and_then(|g| g.refuses(action, &snap.policy))
    {
        let result = refuse(env, &snap, action, why, ending(None, &audited), caller);
        return Prepared::Answer(result.into());
    }
    // Checked, names looked up and the request built before anyone is asked: the question
    // shows what will be sent, and an invalid call asks nobody. A client that cannot ask reads
    // no question: nothing is read from Arcane for one.
    let ctx = &CallContext {
        cannot_ask: !askable(&env.round_trips, &asking),
        ..ctx.clone()
    };
    let (action, params, undoing) = match crate::mcp::history::Tool::of(action) {
        None => (action, params, None),
        Some(tool) => {
            let done = ending(None, &audited);
            match history_call(env, &snap, action, tool, params, done, ctx, caller).await {
                HistoryCall::Answer(result) => return Prepared::Answer(result.into()),
                HistoryCall::Undo {
                    by,
                    params,
                    undoing,
                } => {
                    // From here on the call is the recorded one, and its audit line says so.
                    if audited.is_some() {
                        audited = Some(params.clone());
                    }
                    span.record("arcane.action.id", by.id.as_str());
                    (by, params, Some(undoing))
                }
            }
        }
    };
    let mut confirmed = confirm.then_some("param");
    let ready = match env.exec.prepare_action(&scope, action, params, ctx).await {
        Ok(ready) => ready,
        Err(e) => {
            let result = conclude(
                env,
                &snap,
                Some(action),
                Err(e),
                ending(confirmed, &audited),
                ctx,
                caller,
            );
            return Prepared::Answer(result.into());
        }
    };
    if action.needs_confirmation() || undoing.is_some() {
        match settle(
            &env.round_trips,
            &snap,
            &ready,
            confirm,
            asking,
            ctx,
            undoing.as_ref(),
        )
        .await
        {
            Confirmed::Ask(question) => {
                span.record("arcane.outcome", "input_required");
                return Prepared::Answer(CallToolResponse::InputRequired(mask_known_message(
                    question,
                )));
            }
            Confirmed::By(how) => confirmed = how,
            // The person said no (or could not be asked): whatever the model's `confirm`
            // said, the call was not confirmed, and its audit line must not read as if it was.
            Confirmed::Refused(text) => {
                let result = refuse(env, &snap, action, text, ending(None, &audited), caller);
                return Prepared::Answer(result.into());
            }
        }
    }
    // An undo is confirmed whatever the class of the call it became (the engine checks only
    // that class): without a yes nothing is sent.
    if let (Some(u), None) = (&undoing, confirmed) {
        let unconfirmed = CallError::NeedsConfirm {
            action: u.action.id.clone(),
            what: format!("it undoes {}", u.change),
            why: arcane_catalog::Impact::Routine.why_asked(),
        };
        let result = conclude(
            env,
            &snap,
            Some(u.action),
            Err(unconfirmed),
            ending(None, &audited),
            ctx,
            caller,
        );
        return Prepared::Answer(result.into());
    }
    let long_running = action.request.long_running;
    let call = Box::new(ready.detach());
    Prepared::Ready(Ready {
        snap,
        call,
        long_running,
        confirmed,
        audited,
        started,
    })
}

/// What a call of a history action comes to in [`prepare`].
enum HistoryCall<'s> {
    /// The answer: the list, or why nothing is undone.
    Answer(CallToolResult),
    /// Undo by running this call, recorded for the change, asked as `undoing` says.
    Undo {
        by: &'s Action,
        params: Map<String, Value>,
        undoing: crate::mcp::confirm::Undoing<'s>,
    },
}

/// `history.list` and `history.undo` (catalog/history.yaml, docs/undo.md), after the checks of
/// any call (the policy: read-only withdraws the undo; the schema). A caller with a grant sees
/// and undoes only changes of actions it may run, by undoing calls it may run.
#[allow(clippy::too_many_arguments)]
async fn history_call<'s>(
    env: &CallEnv,
    snap: &'s Snapshot,
    action: &'s Action,
    tool: crate::mcp::history::Tool,
    params: Map<String, Value>,
    ending: Ending,
    ctx: &CallContext,
    caller: &Actor,
) -> HistoryCall<'s> {
    use crate::mcp::history::{self, Tool};
    let scope = snap.scope();
    let params = match env.exec.prepare_action(&scope, action, params, ctx).await {
        Ok(ready) => ready.params,
        Err(e) => {
            let result = conclude(env, snap, Some(action), Err(e), ending, ctx, caller);
            return HistoryCall::Answer(result);
        }
    };
    // Answered rather than withdrawn: the policy withdraws what the operator chose not to
    // serve, and a withdrawn action is left out of the lists and the search. Served, the
    // actions are found for "undo that" and answer how to turn the history on.
    let Some(file) = &env.history else {
        let result = refuse(env, snap, action, history::OFF.to_string(), ending, caller);
        return HistoryCall::Answer(result);
    };
    let changes = match file.changes() {
        Ok(all) => all,
        Err(e) => {
            let why = format!("The history could not be read: {e:#}. Nothing was sent.");
            return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
        }
    };
    // The per-caller view withdraws what a grant may not run: its changes are not there for
    // it, neither listed nor undone.
    let changes: Vec<history::Change> = changes
        .into_iter()
        .filter(|c| match caller.grant.as_deref() {
            None => true,
            Some(g) => snap
                .catalog
                .get(&c.action)
                .is_some_and(|a| g.refuses(a, &snap.policy).is_none()),
        })
        .collect();
    if tool == Tool::List {
        let limit = params.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
        let body = history::listing(&changes, limit);
        let listed = Outcome {
            action,
            params,
            produced: Produced::Json(body),
        };
        let result = conclude(env, snap, Some(action), Ok(listed), ending, ctx, caller);
        return HistoryCall::Answer(result);
    }
    let id = params.get("id").and_then(Value::as_str).unwrap_or_default();
    let force = params.get("force").and_then(Value::as_bool) == Some(true);
    let found = history::find(&changes, id, "history.list")
        .and_then(|c| history::inverse(c).map(|inv| (c, inv)));
    let (change, (by, by_params)) = match found {
        Ok(found) => found,
        Err(why) => {
            let why = format!("{why}. Nothing was sent.");
            return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
        }
    };
    let Some(by) = snap.catalog.get(by) else {
        let why = format!(
            "{} is undone by {by}, which this server's catalog does not have. Nothing was sent.",
            change.id
        );
        return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
    };
    if let Some(why) = caller
        .grant
        .as_ref()
        .and_then(|g| g.refuses(by, &snap.policy))
    {
        let why = format!(
            "{} is undone by {}, which you may not run: {why}",
            change.id, by.id
        );
        return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
    }
    // What the change set, read again: the same check as `arcane-mcp undo`.
    let drifted = match history::recheck(&snap.catalog, change) {
        None => Ok(Vec::new()),
        Some((changed, read, args)) => {
            match env.exec.execute(&scope, &read.id, args, false, ctx).await {
                Ok(Outcome {
                    produced: Produced::Json(body),
                    ..
                }) => Ok(history::drift(
                    changed,
                    change,
                    &arcane_catalog::unwrap_envelope(body),
                )),
                _ => Err(read.id.clone()),
            }
        }
    };
    let drift = match drifted {
        Ok(d) if d.is_empty() => None,
        Ok(d) => Some(history::drift_text(change, &d)),
        Err(read) if force => Some(format!(
            "nothing could be checked ({read} could not be read), so a later change may be \
             overwritten"
        )),
        Err(read) => {
            let why = format!(
                "The state {} changed could not be read to check that nothing changed it since \
                 ({read}). Nothing was sent. Call history.undo again with force: true to take it \
                 back without the check; the user is asked.",
                change.id
            );
            return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
        }
    };
    if let (Some(what), false) = (&drift, force) {
        let why = format!(
            "{} was changed again since {}: {what}. Undoing it would overwrite that, so nothing \
             was sent. Tell the user; only if they want the state before {} back anyway, call \
             history.undo again with force: true (they are asked to confirm).",
            change.action, change.id, change.id
        );
        return HistoryCall::Answer(refuse(env, snap, action, why, ending, caller));
    }
    let undoing = crate::mcp::confirm::Undoing {
        action,
        change: format!(
            "change {} ({} at {}, by {})",
            code_span(&change.id),
            code_span(&change.action),
            code_span(&change.time),
            code_span(&change.by)
        ),
        drift,
    };
    HistoryCall::Undo {
        by,
        params: by_params.clone(),
        undoing,
    }
}

/// The second step: sends a [`Ready`] call on behalf of `caller` (whose `task` names the MCP
/// task it runs in, if any), presents the answer and records it.
pub(crate) async fn run(
    env: &CallEnv,
    ready: Ready,
    ctx: &CallContext,
    caller: &Actor,
) -> CallToolResult {
    let Ready {
        snap,
        call,
        confirmed,
        audited,
        started,
        ..
    } = ready;
    let ending = Ending {
        confirmed,
        audited,
        started,
    };
    // Prepared against this very snapshot, so its action is there.
    let Some(call) = call.attach(&snap.catalog) else {
        return error_result("the call's action left the catalog before it ran");
    };
    let action = call.action;
    let scope = snap.scope();
    // The history: the call's parameters, and the state its `undo` entry reads before it.
    let kept = env
        .history
        .as_ref()
        .filter(|_| action.safety.mutating)
        .map(|h| (h, call.params.clone()));
    let before = match (&kept, &action.safety.undo) {
        (Some((_, params)), Some(Undo::By(inv))) => match &inv.capture {
            Some(read) => capture(env, &scope, read, params, ctx).await,
            None => None,
        },
        _ => None,
    };
    let answer = env.exec.run(&scope, call, confirmed.is_some(), ctx).await;
    // A preview changed nothing.
    if let (Some((history, params)), Ok(outcome)) = (&kept, &answer)
        && !matches!(outcome.produced, Produced::Preview(..))
    {
        let result = match &outcome.produced {
            Produced::Json(body) => Some(arcane_catalog::unwrap_envelope(body.clone())),
            _ => None,
        };
        let environment = params
            .get("environmentId")
            .and_then(Value::as_str)
            .unwrap_or(&env.exec.config().environment);
        history.remember(
            &snap.catalog,
            action,
            environment,
            params,
            before.as_ref(),
            result.as_ref(),
            crate::mcp::audit_log::who(caller),
        );
    }
    conclude(env, &snap, Some(action), answer, ending, ctx, caller)
}

/// The state a change's `undo` entry puts back, read just before the change with the call's
/// parameters (as a structured result); `None` when the read fails (the change still runs, and
/// its history says it cannot be taken back).
async fn capture(
    env: &CallEnv,
    scope: &arcane_engine::Scope<'_>,
    read: &str,
    params: &Map<String, Value>,
    ctx: &CallContext,
) -> Option<Value> {
    let action = scope.catalog.get(read)?;
    let args = crate::mcp::history::read_args(action, params);
    match env.exec.execute(scope, read, args, false, ctx).await {
        Ok(Outcome {
            produced: Produced::Json(body),
            ..
        }) => Some(arcane_catalog::unwrap_envelope(body)),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(read, error = %e, "the state before a change could not be read; the history says it cannot be taken back");
            None
        }
    }
}

/// The audit line of a call that starts as MCP task `caller.task` (its end has its own).
pub(crate) fn task_started(env: &CallEnv, ready: &Ready, caller: &Actor) {
    let (Some(params), Some(action)) = (&ready.audited, ready.snap.catalog.get(ready.action()))
    else {
        return;
    };
    let done = Ending {
        confirmed: ready.confirmed,
        audited: Some(params.clone()),
        started: Instant::now(),
    };
    let none = CallToolResult::success(vec![]);
    record(
        env,
        &ready.snap,
        action,
        &none,
        Disposition::Started,
        done,
        caller,
    );
}

/// A prepared call that is not run after all (a limit refused its task, or the client went
/// away first): the refusal's text as its answer, and its audit line.
pub(crate) fn not_run(env: &CallEnv, ready: Ready, why: String, caller: &Actor) -> CallToolResult {
    let done = Ending {
        confirmed: ready.confirmed,
        audited: ready.audited,
        started: ready.started,
    };
    match ready.snap.catalog.get(ready.call.action()) {
        Some(action) => refuse(env, &ready.snap, action, why, done, caller),
        None => error_result(why),
    }
}

/// What the audit line of a call needs besides its outcome.
struct Ending {
    confirmed: Option<&'static str>,
    audited: Option<Map<String, Value>>,
    started: Instant,
}

/// A refusal before anything is sent: its text as the answer, its audit line.
fn refuse(
    env: &CallEnv,
    snap: &Snapshot,
    action: &Action,
    why: String,
    ending: Ending,
    caller: &Actor,
) -> CallToolResult {
    tracing::Span::current().record("arcane.outcome", Disposition::Refused.as_str());
    let mut result = error_result(why);
    record(
        env,
        snap,
        action,
        &result,
        Disposition::Refused,
        ending,
        caller,
    );
    mask_known_result(&mut result);
    result
}

/// The engine's answer as the call's: what the audit log calls it, the result's text, the
/// request span's outcome, the audit line.
fn conclude(
    env: &CallEnv,
    snap: &Snapshot,
    action: Option<&Action>,
    answer: Result<Outcome<'_>, CallError>,
    ending: Ending,
    ctx: &CallContext,
    caller: &Actor,
) -> CallToolResult {
    // A call whose cancellation fired and that ended in an error was cancelled (a stream's
    // error says so only in its text); a task its TTL stopped expired (`crate::mcp::tasks`).
    let expired = caller
        .task
        .as_deref()
        .is_some_and(|id| env.tasks.expired(id));
    let disposition = match disposition(&answer) {
        Disposition::Error | Disposition::Cancelled if expired => Disposition::Expired,
        Disposition::Error if ctx.cancel.is_cancelled() => Disposition::Cancelled,
        d => d,
    };
    let span = tracing::info_span!(target: "arcane_mcp::mcp::call", "arcane.render", "otel.name" = "render");
    let mut result = span.in_scope(|| tool_result(snap, env.exec.config(), answer));
    let outcome = match disposition {
        Disposition::Ok if result.is_error == Some(true) => "error",
        d => d.as_str(),
    };
    tracing::Span::current().record("arcane.outcome", outcome);
    if let Some(action) = action {
        record(env, snap, action, &result, disposition, ending, caller);
    }
    mask_known_result(&mut result);
    result
}

/// Writes the audit log's line of a mutating call or a credential reveal (when there is a
/// log).
fn record(
    env: &CallEnv,
    snap: &Snapshot,
    action: &Action,
    result: &CallToolResult,
    disposition: Disposition,
    ending: Ending,
    caller: &Actor,
) {
    let Ending {
        confirmed,
        audited,
        started,
    } = ending;
    let (Some(log), Some(params)) = (&env.audit, audited) else {
        return;
    };
    // Changes, and the reads whose purpose is to hand out a credential (a join token, an
    // mTLS bundle): who took one is as much the log's business as who changed something.
    if !(action.safety.mutating || action.safety.reveals_secret.is_some()) {
        return;
    }
    let failed = result.is_error.unwrap_or(false);
    let disposition = match disposition {
        Disposition::Ok if failed => Disposition::Error,
        d => d,
    };
    let text = result_text(result);
    let environment = params
        .get("environmentId")
        .and_then(Value::as_str)
        .unwrap_or(&env.exec.config().environment);
    let targets: Vec<&str> = action.targets().map(|p| p.name.as_str()).collect();
    let identifiers = snap.catalog.identifiers(action);
    log.record(&Entry {
        caller,
        action: &action.id,
        domain: &action.domain,
        environment,
        params: &params,
        targets: &targets,
        identifiers: &identifiers,
        outcome: disposition,
        error: failed.then_some(text.as_str()),
        duration: started.elapsed(),
        confirmed,
    });
}

/// What the audit log says of an executed call, from the executor's typed answer: refused
/// (withdrawn, or destructive without confirmation), a safe-mode preview, failed, or done.
fn disposition(answer: &Result<Outcome<'_>, CallError>) -> Disposition {
    match answer {
        Err(CallError::Cancelled { .. } | CallError::CancelledLookup { .. }) => {
            Disposition::Cancelled
        }
        Err(CallError::Withdrawn { .. } | CallError::NeedsConfirm { .. }) => Disposition::Refused,
        Err(_) => Disposition::Error,
        Ok(o) if matches!(o.produced, Produced::Preview(..)) => Disposition::Preview,
        Ok(_) => Disposition::Ok,
    }
}
