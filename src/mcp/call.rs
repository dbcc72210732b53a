//! One `tools/call`, from parse to audit: the arguments parsed for the active surface, then a
//! search answered, or an action prepared, its confirmation settled, run, presented, and
//! recorded in the audit log.

use std::time::Instant;

use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::{Map, Value};

use std::sync::Arc;

use crate::load::reload::Live;
use crate::load::snapshot::Snapshot;
use crate::mcp::audit_log::{Actor, AuditLog, Disposition, Entry};
use crate::mcp::confirm::{Asking, Confirmed, RoundTrips, askable, settle};
use crate::present::{
    error_result, mask_known_message, mask_known_result, result_text, tool_result,
};
use crate::surface::{self, Call};
use arcane_engine::{CallContext, CallError, Executor, Produced};

/// What every call runs on: the live snapshot, the executor, the audit log and the open
/// confirmations of 2026-07-28 clients (shared by every session).
#[derive(Clone)]
pub struct Calls {
    pub live: Arc<Live<Snapshot>>,
    pub exec: Arc<Executor>,
    /// The audit log of mutating calls (`--audit-log`).
    pub audit: Option<Arc<AuditLog>>,
    pub round_trips: Arc<RoundTrips>,
    /// The MCP tasks of every session and caller (docs/tasks.md).
    pub tasks: Arc<crate::mcp::tasks::Tasks>,
}

/// Whether the call runs an action that can take minutes (the catalog's `longRunning`), one a
/// client that speaks tasks gets a task for; `Some(true)` when it also asks the person first.
/// An unparsable call or any other action is answered as it always is.
pub(crate) fn long_running(
    server: &Calls,
    tool: &str,
    args: Option<&Map<String, Value>>,
) -> Option<bool> {
    let snap = server.live.load();
    let Ok(Call::Execute { action, .. }) =
        surface::parse_call(snap.surface, &snap.catalog, &snap.policy, tool, args)
    else {
        return None;
    };
    let a = snap.catalog.resolve(&action)?;
    a.long_running.then(|| a.needs_confirmation())
}

/// The reply a call that is to run as a task waits for before anything is sent: the task's ID
/// (it exists; run), or why no task was started (a limit; the text of the refusal).
pub(crate) type Go = tokio::sync::oneshot::Sender<Result<String, String>>;

/// A call to run as a task, prepared and confirmed: its action (whose the task's answer is)
/// and where it waits to go on.
pub(crate) struct Ready {
    pub action: String,
    pub go: Go,
}

/// A `tools/call` on behalf of `caller` (named in the audit log), asking the user to
/// confirm a destructive call as `asking` allows. The answer, whatever it is, leaves with the
/// server's own credentials masked (`present::mask_known_result`).
pub(crate) async fn run(
    server: &Calls,
    tool: &str,
    args: Option<&Map<String, Value>>,
    ctx: &CallContext,
    caller: &Actor,
    asking: Asking<'_>,
    gate: Option<tokio::sync::oneshot::Sender<Ready>>,
) -> CallToolResponse {
    // The snapshot is loaded once for the whole call, so a reload never changes the catalog
    // under it; an OAuth caller's is the view of what it may run.
    let snap = crate::mcp::caller::view_of(server.live.load(), caller.grant.as_deref());
    let response = match surface::parse_call(snap.surface, &snap.catalog, &snap.policy, tool, args)
    {
        Err(text) => {
            tracing::Span::current().record("arcane.outcome", "invalid");
            error_result(text).into()
        }
        Ok(Call::Find { query, limit }) => {
            // The index may still be building on its thread (just after startup or a
            // reload): wait for it off the runtime's threads.
            let _ = snap.search_ready().await;
            let span = tracing::info_span!(target: "arcane_mcp::mcp::call", "arcane.search", "otel.name" = "search");
            let found = span.in_scope(|| crate::present::find::find(&snap, &query, limit));
            tracing::Span::current().record("arcane.outcome", "ok");
            found.into()
        }
        Ok(Call::Execute {
            action,
            params,
            confirm,
        }) => {
            let started = Instant::now();
            // Kept as the model sent them: the log redacts them itself.
            let audited = server.audit.is_some().then(|| params.clone());
            let task = gate.map(|gate| Gate {
                gate,
                caller,
                params: audited.as_ref(),
            });
            // The request's span (`crate::mcp::trace`) names the action when the catalog has
            // it: an ID the model made up is no attribute.
            let span = tracing::Span::current();
            if let Some(a) = snap.catalog.resolve(&action) {
                span.record("arcane.action.id", a.id.as_str());
            }
            // An OAuth caller's scopes and users-file rule, before anything is looked up or
            // anyone is asked (docs/oauth.md).
            let narrowed = caller.grant.as_ref().and_then(|g| {
                let a = snap.catalog.resolve(&action)?;
                g.refuses(a, &snap.policy)
            });
            if let Some(why) = narrowed {
                span.record("arcane.outcome", Disposition::Refused.as_str());
                let result = error_result(why);
                if let Some(params) = audited {
                    let done = Done {
                        disposition: Disposition::Refused,
                        confirmed: None,
                        started,
                    };
                    record(server, &snap, &action, params, caller, &result, done);
                }
                CallToolResponse::Complete(result)
            } else {
                match execute(server, &snap, &action, params, confirm, ctx, asking, task).await {
                    Err(question) => {
                        span.record("arcane.outcome", "input_required");
                        question
                    }
                    Ok((result, disposition, confirmed, task)) => {
                        let outcome = match disposition {
                            Disposition::Ok if result.is_error == Some(true) => "error",
                            d => d.as_str(),
                        };
                        span.record("arcane.outcome", outcome);
                        if let Some(params) = audited {
                            let done = Done {
                                disposition,
                                confirmed,
                                started,
                            };
                            let caller = in_task(caller, task);
                            record(server, &snap, &action, params, &caller, &result, done);
                        }
                        result.into()
                    }
                }
            }
        }
    };
    match response {
        CallToolResponse::Complete(mut result) => {
            mask_known_result(&mut result);
            result.into()
        }
        CallToolResponse::InputRequired(question) => {
            CallToolResponse::InputRequired(mask_known_message(question))
        }
        other => other,
    }
}

/// A call that is to run as an MCP task: where it asks to go on, and what the audit log's line
/// of the task's start names.
struct Gate<'a> {
    gate: tokio::sync::oneshot::Sender<Ready>,
    caller: &'a Actor,
    params: Option<&'a Map<String, Value>>,
}

/// The caller of a call that runs in task `task`, as its audit lines name it.
fn in_task(caller: &Actor, task: Option<String>) -> std::borrow::Cow<'_, Actor> {
    match task {
        Some(id) => std::borrow::Cow::Owned(Actor {
            task: Some(id),
            ..caller.clone()
        }),
        None => std::borrow::Cow::Borrowed(caller),
    }
}

/// What [`execute`] answers: the result, what the audit log calls it, how it was confirmed,
/// and the task it ran in.
type Executed = (
    CallToolResult,
    Disposition,
    Option<&'static str>,
    Option<String>,
);

/// Prepares, confirms and runs one action: the result, what the audit log calls it, and how
/// it was confirmed. `Err` carries the question of a 2026-07-28 round trip (the answer of
/// this request; the client retries with the person's answer). A call to run as a task stops
/// once it is prepared and confirmed — before anything is sent — until the task exists.
#[allow(clippy::too_many_arguments)]
async fn execute(
    server: &Calls,
    snap: &Snapshot,
    action: &str,
    params: Map<String, Value>,
    confirm: bool,
    ctx: &CallContext,
    asking: Asking<'_>,
    task: Option<Gate<'_>>,
) -> Result<Executed, CallToolResponse> {
    let scope = snap.scope();
    let mut confirmed = confirm.then_some("param");
    // Checked, names looked up and the request built before anyone is asked: the question
    // shows what will be sent, and an invalid call asks nobody.
    // A client that cannot ask reads no question: nothing is read from Arcane for one.
    let cannot_ask = !askable(&server.round_trips, &asking);
    let ctx = &CallContext {
        cannot_ask,
        ..ctx.clone()
    };
    let ready = server.exec.prepare(&scope, action, params, ctx).await;
    if let Ok(r) = &ready
        && r.action.needs_confirmation()
    {
        match settle(&server.round_trips, snap, r, confirm, asking, ctx).await {
            Confirmed::Ask(question) => return Err(question.into()),
            Confirmed::By(how) => confirmed = how,
            // The person said no (or could not be asked): whatever the model's `confirm`
            // said, the call was not confirmed, and its audit line must not read as if it was.
            Confirmed::Refused(text) => {
                return Ok((error_result(text), Disposition::Refused, None, None));
            }
        }
    }
    let mut task_id = None;
    if let (Ok(r), Some(task)) = (&ready, task) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ready = Ready {
            action: r.action.id.clone(),
            go: tx,
        };
        let answer = match task.gate.send(ready) {
            Ok(()) => rx.await.ok(),
            Err(_) => None,
        };
        match answer {
            Some(Ok(id)) => {
                if let (Some(params), Some(_)) = (task.params, &server.audit) {
                    let done = Done {
                        disposition: Disposition::Started,
                        confirmed,
                        started: Instant::now(),
                    };
                    let caller = in_task(task.caller, Some(id.clone()));
                    let none = CallToolResult::success(vec![]);
                    record(
                        server,
                        snap,
                        &r.action.id,
                        params.clone(),
                        &caller,
                        &none,
                        done,
                    );
                }
                task_id = Some(id);
            }
            Some(Err(text)) => {
                return Ok((error_result(text), Disposition::Refused, confirmed, None));
            }
            // The request went away before its task was made: nothing is sent.
            None => {
                let text = "the call was cancelled before it ran";
                return Ok((error_result(text), Disposition::Refused, confirmed, None));
            }
        }
    }
    let answer = match ready {
        Ok(r) => server.exec.run(&scope, r, confirmed.is_some(), ctx).await,
        Err(e) => Err(e),
    };
    // A call whose cancellation fired and that ended in an error was cancelled (a stream's
    // error says so only in its text).
    // A task its TTL stopped expired (`crate::mcp::tasks`).
    let expired = task_id
        .as_deref()
        .is_some_and(|id| server.tasks.expired(id));
    let disposition = match disposition(&answer) {
        Disposition::Error | Disposition::Cancelled if expired => Disposition::Expired,
        Disposition::Error if ctx.cancel.is_cancelled() => Disposition::Cancelled,
        d => d,
    };
    let span = tracing::info_span!(target: "arcane_mcp::mcp::call", "arcane.render", "otel.name" = "render");
    let result = span.in_scope(|| tool_result(snap, server.exec.config(), answer));
    Ok((result, disposition, confirmed, task_id))
}

/// How an executed call ended, for its audit line.
struct Done {
    disposition: Disposition,
    confirmed: Option<&'static str>,
    started: Instant,
}

/// Writes the audit log's line of a mutating call or a credential reveal (when there is a
/// log).
fn record(
    server: &Calls,
    snap: &Snapshot,
    action: &str,
    params: Map<String, Value>,
    caller: &Actor,
    result: &CallToolResult,
    done: Done,
) {
    let Done {
        disposition,
        confirmed,
        started,
    } = done;
    let Some(log) = &server.audit else { return };
    // Changes, and the reads whose purpose is to hand out a credential (a join token, an
    // mTLS bundle): who took one is as much the log's business as who changed something.
    let Some(a) = snap
        .catalog
        .resolve(action)
        .filter(|a| a.mutating || a.reveals_secret.is_some())
    else {
        return;
    };
    let failed = result.is_error.unwrap_or(false);
    let disposition = match disposition {
        Disposition::Ok if failed => Disposition::Error,
        d => d,
    };
    let text = result_text(result);
    let environment = params
        .get("environmentId")
        .and_then(Value::as_str)
        .unwrap_or(&server.exec.config().environment);
    let targets: Vec<&str> = a.targets().map(|p| p.name.as_str()).collect();
    let identifiers = snap.catalog.identifiers(a);
    log.record(&Entry {
        caller,
        action: &a.id,
        domain: &a.domain,
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
fn disposition(answer: &Result<arcane_engine::Outcome<'_>, CallError>) -> Disposition {
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
