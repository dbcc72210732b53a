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
use crate::mcp::confirm::{Asking, Confirmed, RoundTrips, settle};
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
) -> CallToolResponse {
    // The snapshot is loaded once for the whole call, so a reload never changes the catalog
    // under it.
    let snap = server.live.load();
    let response = match surface::parse_call(snap.surface, &snap.catalog, tool, args) {
        Err(text) => error_result(text).into(),
        Ok(Call::Find { query, limit }) => {
            // The index may still be building on its thread (just after startup or a
            // reload): wait for it off the runtime's threads.
            let _ = snap.search_ready().await;
            crate::present::find::find(&snap, &query, limit).into()
        }
        Ok(Call::Execute {
            action,
            params,
            confirm,
        }) => {
            let started = Instant::now();
            // Kept as the model sent them: the log redacts them itself.
            let audited = server.audit.is_some().then(|| params.clone());
            match execute(server, &snap, &action, params, confirm, ctx, asking).await {
                Err(question) => question,
                Ok((result, disposition, confirmed)) => {
                    if let Some(params) = audited {
                        let done = Done {
                            disposition,
                            confirmed,
                            started,
                        };
                        record(server, &snap, &action, params, caller, &result, done);
                    }
                    result.into()
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

/// Prepares, confirms and runs one action: the result, what the audit log calls it, and how
/// it was confirmed. `Err` carries the question of a 2026-07-28 round trip (the answer of
/// this request; the client retries with the person's answer).
async fn execute(
    server: &Calls,
    snap: &Snapshot,
    action: &str,
    params: Map<String, Value>,
    confirm: bool,
    ctx: &CallContext,
    asking: Asking<'_>,
) -> Result<(CallToolResult, Disposition, Option<&'static str>), CallToolResponse> {
    let scope = snap.scope();
    let mut confirmed = confirm.then_some("param");
    // Checked, names looked up and the request built before anyone is asked: the question
    // shows what will be sent, and an invalid call asks nobody.
    let ready = server.exec.prepare(&scope, action, params, ctx).await;
    if let Ok(r) = &ready
        && r.action.needs_confirmation()
    {
        match settle(&server.round_trips, snap, r, confirm, asking, ctx).await {
            Confirmed::Ask(question) => return Err(question.into()),
            Confirmed::By(how) => confirmed = how,
            Confirmed::Refused(text) => {
                return Ok((error_result(text), Disposition::Refused, confirmed));
            }
        }
    }
    let answer = match ready {
        Ok(r) => server.exec.run(&scope, r, confirmed.is_some(), ctx).await,
        Err(e) => Err(e),
    };
    let disposition = disposition(&answer);
    let result = tool_result(snap, server.exec.config(), answer);
    Ok((result, disposition, confirmed))
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
        Err(CallError::Withdrawn { .. } | CallError::NeedsConfirm { .. }) => Disposition::Refused,
        Err(_) => Disposition::Error,
        Ok(o) if matches!(o.produced, Produced::Preview(..)) => Disposition::Preview,
        Ok(_) => Disposition::Ok,
    }
}
