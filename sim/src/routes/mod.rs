//! The stateful routes, one module per resource as Arcane's API groups them (environments,
//! containers, images, projects, volumes, networks, swarm services, vulnerability scans and
//! update checks, activities and builds, downloads), the database-backed collections, and the
//! generic schema-driven responder for everything else. The helpers every resource shares
//! live here and in [`lists`]: one list envelope with one pagination, one item lookup answer,
//! one state change answer.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::server::{Ctx, truncate_response};
use crate::state::{InEnv, State};

mod builds;
pub mod collections;
pub(crate) mod compose;
pub(crate) mod containers;
mod downloads;
mod environments;
mod generic;
pub(crate) mod images;
pub(crate) mod lists;
pub(crate) mod networks;
pub(crate) mod projects;
mod scans;
mod swarm;
mod system;
pub(crate) mod volumes;

pub use generic::generic;

/// Routes a matched operation to its stateful handler, or to the generic responder.
/// `shape` is the operation's template with parameter names erased, without `/api`.
pub async fn dispatch(ctx: &Ctx, method: &str, shape: &str) -> Response {
    let resp = route(ctx, method, shape);
    if ctx.truncate && !is_stream_shape(method, shape) && !is_download_shape(shape) {
        return truncate_response(resp);
    }
    resp
}

fn is_stream_shape(method: &str, shape: &str) -> bool {
    method == "POST"
        && matches!(
            shape,
            "/environments/{}/images/pull"
                | "/environments/{}/images/build"
                | "/environments/{}/projects/{}/up"
                | "/environments/{}/projects/{}/redeploy"
                | "/environments/{}/projects/{}/pull"
                | "/environments/{}/projects/{}/build"
        )
}

fn is_download_shape(shape: &str) -> bool {
    matches!(
        shape,
        "/environments/{}/images/{}/export"
            | "/environments/{}/volumes/backups/{}/download"
            | "/edge-mtls/ca"
            | "/environments/{}/deployment/mtls/bundle"
            | "/environments/{}/deployment/mtls/{}"
            | "/environments/{}/projects/{}/workspace/file/download"
            | "/environments/{}/volumes/{}/workspace/file/download"
            | "/environments/{}/builds/browse/download"
    )
}

/// Swarm routes that work without Swarm mode (they report or change it).
fn needs_swarm(shape: &str) -> bool {
    shape.starts_with("/environments/{}/swarm/")
        && !matches!(
            shape,
            "/environments/{}/swarm/status"
                | "/environments/{}/swarm/init"
                | "/environments/{}/swarm/join"
                | "/environments/{}/swarm/join-candidates"
                | "/environments/{}/swarm/join-environments"
        )
}

fn route(ctx: &Ctx, method: &str, shape: &str) -> Response {
    if needs_swarm(shape) {
        let off = ctx
            .sh
            .state()
            .environments
            .iter()
            .any(|e| e.id == ctx.env_id() && !e.swarm_enabled);
        if off {
            return ctx.problem(409, "Swarm mode is not enabled");
        }
    }
    match (method, shape) {
        // Docker is reachable: Arcane's handler never sets a status, so the answer is a 500
        // with an empty body (both 2.8.x and main; docs/arcane-wire.md).
        ("HEAD", "/environments/{}/system/health") => {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
        // Vulnerability scans and update checks.
        ("GET", "/environments/{}/images/{}/vulnerabilities") => scans::result(ctx),
        ("GET", "/environments/{}/images/{}/vulnerabilities/summary") => scans::summary(ctx),
        ("GET", "/environments/{}/images/{}/vulnerabilities/list") => scans::list(ctx),
        ("POST", "/environments/{}/images/{}/vulnerabilities/scan") => scans::scan(ctx),
        ("POST", "/environments/{}/images/vulnerabilities/summaries") => scans::summaries(ctx),
        ("GET" | "POST", "/environments/{}/image-updates/check/{}") => scans::check_update(ctx),
        ("GET", "/environments/{}/image-updates/by-refs")
        | ("POST", "/environments/{}/image-updates/check-batch") => scans::check_updates(ctx),
        // Activities and the build workspace.
        ("POST", "/environments/{}/activities/{}/cancel") => builds::cancel_activity(ctx),
        ("GET", "/environments/{}/builds/browse") => builds::browse(ctx),
        ("POST", "/environments/{}/builds/browse/mkdir") => builds::change(ctx, true),
        ("DELETE", "/environments/{}/builds/browse") => builds::change(ctx, false),
        // Environments.
        ("GET", "/environments") => environments::list(ctx),
        ("GET", "/environments/{}") => environments::get(ctx),
        ("POST", "/environments/{}/test") => environments::test(ctx),
        // Containers.
        ("GET", "/environments/{}/containers") => containers::list(ctx),
        ("POST", "/environments/{}/containers") => containers::create(ctx),
        ("GET", "/environments/{}/containers/counts") => containers::counts(ctx),
        ("GET", "/environments/{}/ports") => containers::ports(ctx),
        ("GET", "/environments/{}/containers/{}") => containers::get(ctx),
        ("DELETE", "/environments/{}/containers/{}") => containers::delete(ctx),
        ("POST", "/environments/{}/containers/{}/start") => containers::action(ctx, "start"),
        ("POST", "/environments/{}/containers/{}/stop") => containers::action(ctx, "stop"),
        ("POST", "/environments/{}/containers/{}/restart") => containers::action(ctx, "restart"),
        ("POST", "/environments/{}/containers/{}/kill") => containers::action(ctx, "kill"),
        ("POST", "/environments/{}/containers/{}/pause") => containers::action(ctx, "pause"),
        ("POST", "/environments/{}/containers/{}/unpause") => containers::action(ctx, "unpause"),
        // Images.
        ("GET", "/environments/{}/images") => images::list(ctx),
        ("GET", "/environments/{}/images/counts") => images::counts(ctx),
        ("GET", "/environments/{}/images/{}") => images::get(ctx),
        ("DELETE", "/environments/{}/images/{}") => images::remove(ctx),
        ("POST", "/environments/{}/images/pull") => images::pull(ctx),
        ("POST", "/environments/{}/images/build") => images::build(ctx),
        ("POST", "/environments/{}/images/prune") => images::prune(ctx),
        ("GET", "/environments/{}/images/{}/export") => images::export(ctx),
        // Projects.
        ("GET", "/environments/{}/projects") => projects::list(ctx),
        ("POST", "/environments/{}/projects") => projects::create(ctx),
        ("GET", "/environments/{}/projects/counts") => projects::counts(ctx),
        ("GET", "/environments/{}/projects/{}")
        | ("GET", "/environments/{}/projects/{}/compose")
        | ("GET", "/environments/{}/projects/{}/runtime")
        | ("GET", "/environments/{}/projects/{}/updates") => projects::get(ctx),
        ("POST", "/environments/{}/projects/{}/up") => projects::stream(ctx, "up"),
        ("POST", "/environments/{}/projects/{}/redeploy") => projects::stream(ctx, "redeploy"),
        ("POST", "/environments/{}/projects/{}/pull") => projects::stream(ctx, "pull"),
        ("POST", "/environments/{}/projects/{}/build") => projects::stream(ctx, "build"),
        ("POST", "/environments/{}/projects/{}/down") => projects::action(ctx, "down"),
        ("POST", "/environments/{}/projects/{}/restart") => projects::action(ctx, "restart"),
        ("DELETE", "/environments/{}/projects/{}/destroy") => projects::action(ctx, "destroy"),
        // Volumes.
        ("GET", "/environments/{}/volumes") => volumes::list(ctx),
        ("POST", "/environments/{}/volumes") => volumes::create(ctx),
        ("GET", "/environments/{}/volumes/counts") => volumes::counts(ctx),
        ("POST", "/environments/{}/volumes/prune") => volumes::prune(ctx),
        ("GET", "/environments/{}/volumes/{}") => volumes::get(ctx),
        ("DELETE", "/environments/{}/volumes/{}") => volumes::delete(ctx),
        // Networks.
        ("GET", "/environments/{}/networks") => networks::list(ctx),
        ("POST", "/environments/{}/networks") => networks::create(ctx),
        ("GET", "/environments/{}/networks/counts") => networks::counts(ctx),
        ("POST", "/environments/{}/networks/prune") => networks::prune(ctx),
        ("GET", "/environments/{}/networks/{}") => networks::get(ctx),
        ("DELETE", "/environments/{}/networks/{}") => networks::delete(ctx),
        // Swarm services.
        ("GET", "/environments/{}/swarm/services") => swarm::list(ctx),
        ("GET", "/environments/{}/swarm/services/{}") => swarm::get(ctx),
        ("POST", "/environments/{}/swarm/services/{}/scale") => swarm::scale(ctx),
        ("PUT", "/environments/{}/swarm/services/{}") => swarm::update(ctx),
        ("POST", "/environments/{}/swarm/services/{}/rollback") => swarm::rollback(ctx),
        // System answers derived from the state.
        ("GET", "/environments/{}/system/docker/info") => system::derived(ctx, system::docker_info),
        ("GET", "/environments/{}/dashboard") => system::derived(ctx, system::dashboard),
        ("POST", "/environments/{}/system/prune") => system::prune(ctx),
        // Downloads (docs/arcane-wire.md#downloads).
        ("GET", s) if is_download_shape(s) => downloads::answer(ctx, s),
        _ => collections::handle(ctx, method, shape).unwrap_or_else(|| generic(ctx)),
    }
}

// ---------------------------------------------------------------------------------------
// Shared answers.

/// Why a state change was refused: the status and `detail` of the problem+json answer.
pub(crate) struct Refusal {
    pub status: u16,
    pub detail: String,
}

/// A refusal with `status` and `detail`.
pub(crate) fn refuse(status: u16, detail: impl Into<String>) -> Refusal {
    Refusal {
        status,
        detail: detail.into(),
    }
}

/// `{"message": text}`, the `data` of Arcane's action answers.
pub(crate) fn message(text: &str) -> Value {
    json!({ "message": text })
}

/// Answers the item `find` projects out of the state (its `data`), or a problem with
/// `status` and the text `missing` gives when there is none. The state is locked only while
/// `find` runs.
pub(crate) fn get_one(
    ctx: &Ctx,
    find: impl FnOnce(&State) -> Option<Value>,
    status: u16,
    missing: impl FnOnce() -> String,
) -> Response {
    let found = find(&ctx.sh.state());
    match found {
        Some(v) => ctx.ok(v, vec![]),
        None => ctx.problem(status, &missing()),
    }
}

/// Runs `change` on the state under its lock and answers its outcome: the `data` of a
/// success, or the problem of a refusal. The lock is released before answering.
pub(crate) fn change(
    ctx: &Ctx,
    change: impl FnOnce(&mut State) -> Result<Value, Refusal>,
) -> Response {
    let outcome = change(&mut ctx.sh.state());
    match outcome {
        Ok(v) => ctx.ok(v, vec![]),
        Err(r) => ctx.problem(r.status, &r.detail),
    }
}

/// Removes the items of `list` that `marks` flags (one flag an item, judged beforehand
/// against the whole state) and returns them in their order.
pub(crate) fn take_marked<T>(list: &mut Vec<T>, marks: &[bool]) -> Vec<T> {
    let mut taken = Vec::new();
    let mut kept = Vec::with_capacity(list.len());
    for (item, doomed) in std::mem::take(list)
        .into_iter()
        .zip(marks.iter().copied().chain(std::iter::repeat(false)))
    {
        if doomed {
            taken.push(item);
        } else {
            kept.push(item);
        }
    }
    *list = kept;
    taken
}

/// The index of the one item of `env` whose ID (as `id` gives it) starts with `prefix`, as
/// Docker resolves short IDs: none for a prefix under 4 characters or one that fits several.
pub(crate) fn by_unique_prefix<T: InEnv>(
    items: &[T],
    env: &str,
    prefix: &str,
    id: impl Fn(&T) -> &str,
) -> Option<usize> {
    if prefix.len() < 4 {
        return None;
    }
    let mut found = items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.env() == env && id(i).starts_with(prefix))
        .map(|(n, _)| n);
    match (found.next(), found.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
}

/// The strings of a JSON array (other values skipped); empty when `v` is not an array.
pub(crate) fn str_array(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_marked_removes_the_flagged_items_in_order() {
        let mut list = vec![1, 2, 3, 4, 5];
        let taken = take_marked(&mut list, &[true, false, true, false]);
        assert_eq!(taken, vec![1, 3]);
        // Items past the end of the marks are kept.
        assert_eq!(list, vec![2, 4, 5]);
    }

    #[test]
    fn str_array_keeps_only_strings() {
        assert_eq!(
            str_array(Some(&json!(["a", 1, "b", null]))),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(str_array(Some(&json!({"a": "b"}))).is_empty());
        assert!(str_array(None).is_empty());
    }
}
