//! The route table: a matched operation (method + template shape) to its handler. The handlers
//! are one module per resource as Arcane's API groups them (environments, containers, images,
//! projects, volumes, networks, swarm services, vulnerability scans and update checks,
//! activities and builds, downloads), the database-backed [`collections`], and the generic
//! schema-driven responder for everything else; what they share is in [`common`] and
//! [`lists`] (one list envelope with one pagination).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::ctx::Ctx;
use crate::streams::truncate_response;

mod builds;
pub mod collections;
mod common;
pub(crate) mod compose;
pub(crate) mod containers;
mod downloads;
mod environments;
mod events;
mod generic;
pub(crate) mod images;
pub(crate) mod lists;
pub(crate) mod networks;
pub(crate) mod projects;
mod scans;
mod stream;
mod swarm;
mod system;
pub(crate) mod volumes;

/// Routes a matched operation to its stateful handler, or to the generic responder.
/// `shape` is the operation's template with parameter names erased, without `/api`.
pub async fn dispatch(ctx: &Ctx, method: &str, shape: &str) -> Response {
    let resp = route(ctx, method, shape);
    if ctx.truncate
        && !is_stream_shape(method, shape)
        && !is_download_shape(shape)
        && shape != "/stream"
    {
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
        // Signing in and personal API keys (src/auth.rs).
        ("POST", "/auth/login") => crate::auth::login(ctx),
        ("POST", "/auth/refresh") => crate::auth::refresh(ctx),
        ("GET", "/auth/me") => crate::auth::me(ctx),
        ("GET", "/auth/me/api-keys") => crate::auth::list_keys(ctx),
        ("POST", "/auth/me/api-keys") => crate::auth::create_key(ctx),
        ("DELETE", "/auth/me/api-keys/{}") => crate::auth::delete_key(ctx),
        // The multiplexed client stream (routes/stream.rs).
        ("GET", "/stream") => stream::client(ctx),
        // Environments.
        ("GET", "/environments") => environments::list(ctx),
        ("GET", "/environments/{}") => environments::get(ctx),
        ("POST", "/environments/{}/test") => environments::test(ctx),
        // Arcane's event log.
        ("GET", "/events") => events::list(ctx),
        ("POST", "/events") => events::create(ctx),
        ("GET", "/events/environment/{}") => events::list_of_environment(ctx),
        ("GET", "/events/stats") => events::stats(ctx),
        ("DELETE", "/events/{}") => events::delete(ctx),
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
        ("GET", "/environments/{}/volumes/sizes") => volumes::sizes(ctx),
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
        _ => collections::handle(ctx, method, shape).unwrap_or_else(|| generic::generic(ctx)),
    }
}
