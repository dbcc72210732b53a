//! Stateful handlers (containers, images, projects, volumes, networks, swarm services,
//! environments), downloads, streams, and the generic schema-driven responder.

use std::cmp::Ordering;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ArcaneVersion;
use crate::server::{Ctx, download, json_stream, truncate_response};
use crate::state::{self, Container, State, container_project, is_internal};
use crate::synth::{hex_id, synth};

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
            .any(|e| e.id == ctx.p(0) && !e.swarm_enabled);
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
        ("GET", "/environments/{}/images/{}/vulnerabilities") => crate::scans::result(ctx),
        ("GET", "/environments/{}/images/{}/vulnerabilities/summary") => crate::scans::summary(ctx),
        ("GET", "/environments/{}/images/{}/vulnerabilities/list") => crate::scans::list(ctx),
        ("POST", "/environments/{}/images/{}/vulnerabilities/scan") => crate::scans::scan(ctx),
        ("POST", "/environments/{}/images/vulnerabilities/summaries") => {
            crate::scans::summaries(ctx)
        }
        ("GET" | "POST", "/environments/{}/image-updates/check/{}") => {
            crate::scans::check_update(ctx)
        }
        ("GET", "/environments/{}/image-updates/by-refs")
        | ("POST", "/environments/{}/image-updates/check-batch") => {
            crate::scans::check_updates(ctx)
        }
        // Activities and the build workspace.
        ("POST", "/environments/{}/activities/{}/cancel") => cancel_activity(ctx),
        ("GET", "/environments/{}/builds/browse") => build_browse(ctx),
        ("POST", "/environments/{}/builds/browse/mkdir") => build_change(ctx, true),
        ("DELETE", "/environments/{}/builds/browse") => build_change(ctx, false),
        // Environments.
        ("GET", "/environments") => list_environments(ctx),
        ("GET", "/environments/{}") => get_environment(ctx),
        ("POST", "/environments/{}/test") => test_environment(ctx),
        // Containers.
        ("GET", "/environments/{}/containers") => list_containers(ctx),
        ("POST", "/environments/{}/containers") => create_container(ctx),
        ("GET", "/environments/{}/containers/counts") => {
            let (counts, _) = container_counts(&ctx.sh.state(), ctx.p(0), false);
            ctx.ok(counts, vec![])
        }
        ("GET", "/environments/{}/containers/{}") => get_container(ctx),
        ("DELETE", "/environments/{}/containers/{}") => delete_container(ctx),
        ("POST", "/environments/{}/containers/{}/start") => container_action(ctx, "start"),
        ("POST", "/environments/{}/containers/{}/stop") => container_action(ctx, "stop"),
        ("POST", "/environments/{}/containers/{}/restart") => container_action(ctx, "restart"),
        ("POST", "/environments/{}/containers/{}/kill") => container_action(ctx, "kill"),
        ("POST", "/environments/{}/containers/{}/pause") => container_action(ctx, "pause"),
        ("POST", "/environments/{}/containers/{}/unpause") => container_action(ctx, "unpause"),
        // Images.
        ("GET", "/environments/{}/images") => list_images(ctx),
        ("GET", "/environments/{}/images/{}") => get_image(ctx),
        ("DELETE", "/environments/{}/images/{}") => remove_image(ctx),
        ("POST", "/environments/{}/images/pull") => pull_image(ctx),
        ("POST", "/environments/{}/images/build") => build_image(ctx),
        ("POST", "/environments/{}/images/prune") => prune_images(ctx),
        ("GET", "/environments/{}/images/{}/export") => export_image(ctx),
        // Projects.
        ("GET", "/environments/{}/projects") => list_projects(ctx),
        ("GET", "/environments/{}/projects/{}")
        | ("GET", "/environments/{}/projects/{}/compose")
        | ("GET", "/environments/{}/projects/{}/runtime")
        | ("GET", "/environments/{}/projects/{}/updates") => get_project(ctx),
        ("POST", "/environments/{}/projects/{}/up") => project_stream(ctx, "up"),
        ("POST", "/environments/{}/projects/{}/redeploy") => project_stream(ctx, "redeploy"),
        ("POST", "/environments/{}/projects/{}/pull") => project_stream(ctx, "pull"),
        ("POST", "/environments/{}/projects/{}/build") => project_stream(ctx, "build"),
        ("POST", "/environments/{}/projects/{}/down") => project_action(ctx, "down"),
        ("POST", "/environments/{}/projects/{}/restart") => project_action(ctx, "restart"),
        ("DELETE", "/environments/{}/projects/{}/destroy") => project_action(ctx, "destroy"),
        // Volumes.
        ("GET", "/environments/{}/volumes") => list_volumes(ctx),
        ("POST", "/environments/{}/volumes") => create_volume(ctx),
        ("GET", "/environments/{}/volumes/counts") => {
            let st = ctx.sh.state();
            let counts = volume_counts(&st, ctx.p(0));
            drop(st);
            ctx.ok(counts, vec![])
        }
        ("POST", "/environments/{}/volumes/prune") => prune_volumes(ctx),
        ("GET", "/environments/{}/volumes/{}") => get_volume(ctx),
        ("DELETE", "/environments/{}/volumes/{}") => delete_volume(ctx),
        // Networks.
        ("GET", "/environments/{}/networks") => list_networks(ctx),
        ("POST", "/environments/{}/networks") => create_network(ctx),
        ("GET", "/environments/{}/networks/counts") => {
            let st = ctx.sh.state();
            let counts = network_counts(&st, ctx.p(0));
            drop(st);
            ctx.ok(counts, vec![])
        }
        ("POST", "/environments/{}/networks/prune") => prune_networks(ctx),
        ("GET", "/environments/{}/networks/{}") => get_network(ctx),
        ("DELETE", "/environments/{}/networks/{}") => delete_network(ctx),
        // Swarm services.
        ("GET", "/environments/{}/swarm/services") => list_swarm_services(ctx),
        ("GET", "/environments/{}/swarm/services/{}") => get_swarm_service(ctx),
        ("POST", "/environments/{}/swarm/services/{}/scale") => scale_swarm_service(ctx),
        // Downloads (docs/arcane-wire.md#downloads).
        ("GET", s) if is_download_shape(s) => downloads(ctx, s),
        _ => crate::collections::handle(ctx, method, shape).unwrap_or_else(|| generic(ctx)),
    }
}

// ---------------------------------------------------------------------------------------
// Lists and pagination (docs/arcane-wire.md#list-envelopes-and-paging).

/// How a list pages.
#[derive(Clone, Copy)]
pub enum Paging {
    /// Docker-backed, paged in memory; `zero_is_20`: limit 0 means 20 (images, volumes).
    Docker { zero_is_20: bool },
    /// Database-backed: limit ≤ 0 → 20, > 100 → 100, `grandTotalItems` 0.
    Db,
}

/// How a list sorts: the keys Arcane binds for it (the first is main's default), and whether
/// Docker hands its items over in an order that changes between requests (2.8.x leaves that
/// order when the sort key is empty or unknown).
#[derive(Clone, Copy)]
pub struct Sorting {
    pub keys: &'static [&'static str],
    pub docker_order_changes: bool,
}

pub const CONTAINER_SORT: Sorting = Sorting {
    keys: &["name", "image", "state", "status", "ports", "created"],
    docker_order_changes: false,
};
pub const IMAGE_SORT: Sorting = Sorting {
    keys: &["repo", "tag", "size", "created", "inUse"],
    docker_order_changes: false,
};
pub const VOLUME_SORT: Sorting = Sorting {
    keys: &[
        "name",
        "driver",
        "mountpoint",
        "scope",
        "created",
        "createdAt",
        "inUse",
        "size",
    ],
    docker_order_changes: true,
};
pub const NETWORK_SORT: Sorting = Sorting {
    keys: &["name", "driver", "scope", "created", "inUse"],
    docker_order_changes: true,
};
pub const SWARM_SERVICE_SORT: Sorting = Sorting {
    keys: &["name", "image", "mode", "replicas", "created", "updated"],
    docker_order_changes: false,
};
pub const PROJECT_SORT: Sorting = Sorting {
    keys: &["name", "status", "serviceCount", "path", "createdAt"],
    docker_order_changes: false,
};
/// Database lists sort only by their sortable columns, never by `id`.
pub const ENVIRONMENT_SORT: Sorting = Sorting {
    keys: &["name", "status", "enabled", "apiUrl"],
    docker_order_changes: false,
};
pub const VULNERABILITY_SORT: Sorting = Sorting {
    keys: &[
        "vulnerabilityId",
        "pkgName",
        "severity",
        "installedVersion",
        "fixedVersion",
    ],
    docker_order_changes: false,
};
/// A synthesized list: sortable by any field of its items except `id`.
const GENERIC_SORT: Sorting = Sorting {
    keys: &[],
    docker_order_changes: false,
};

/// A deterministic permutation of `items` for request number `seq` (Docker's changing order).
fn docker_order(items: &mut [Value], seq: u64) {
    let mut x = seq
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    for i in (1..items.len()).rev() {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = ((x >> 33) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// Sorts, pages and reports pagination for a list.
/// `items` are after search and filters; `grand_total` is the count before them.
pub fn paginate(
    ctx: &Ctx,
    mut items: Vec<Value>,
    grand_total: usize,
    paging: Paging,
    sorting: Sorting,
) -> (Vec<Value>, Value) {
    let start = ctx
        .q("start")
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(0)
        .max(0);
    let mut limit = ctx
        .q("limit")
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(20);
    if limit < -1 {
        limit = 20;
    }
    match paging {
        Paging::Docker { zero_is_20 } => {
            if limit == 0 && zero_is_20 {
                limit = 20;
            }
        }
        Paging::Db => {
            if limit <= 0 {
                limit = 20;
            } else if limit > 100 {
                limit = 100;
            }
        }
    }
    sort_items(ctx, &mut items, paging, sorting);
    let total = items.len() as i64;
    let (page, pagination) = if limit > 0 {
        let s = (start as usize).min(items.len());
        let e = (s + limit as usize).min(items.len());
        let total_pages = ((total + limit - 1) / limit).max(1);
        (
            items[s..e].to_vec(),
            json!({"totalPages": total_pages, "totalItems": total, "currentPage": start / limit + 1,
                   "itemsPerPage": limit, "grandTotalItems": grand_total}),
        )
    } else {
        (
            items,
            json!({"totalPages": 1, "totalItems": total, "currentPage": 1, "itemsPerPage": total,
                   "grandTotalItems": grand_total}),
        )
    };
    let mut pagination = pagination;
    if matches!(paging, Paging::Db) {
        pagination["grandTotalItems"] = json!(0);
    }
    (page, pagination)
}

/// Arcane's list ordering (docs/arcane-wire.md, sorting). A key sorts only when it is one of
/// the list's keys; only the exact order `desc` reverses; strings compare byte-wise.
/// 2.8.x: no valid key leaves the incoming order (Docker's, which changes between requests for
/// some lists), and equal keys keep it (a stable sort without tie-break). main: an empty or
/// unknown key falls back to the first key, with tie-breaks.
fn sort_items(ctx: &Ctx, items: &mut [Value], paging: Paging, sorting: Sorting) {
    let main = ctx.sh.version() == ArcaneVersion::Main;
    if sorting.docker_order_changes {
        docker_order(items, ctx.sh.next_list_seq());
    }
    let sort = ctx.q("sort").unwrap_or("");
    let valid = if sorting.keys.is_empty() {
        !sort.is_empty() && sort != "id" && items.iter().any(|i| i.get(sort).is_some())
    } else {
        sorting.keys.contains(&sort)
    };
    let desc = ctx.q("order") == Some("desc");
    let key: Option<&str> = if valid {
        Some(sort)
    } else if main {
        match paging {
            // main's database lists order by `id` when nothing valid is asked for.
            Paging::Db => Some("id"),
            Paging::Docker { .. } => sorting.keys.first().copied(),
        }
    } else {
        None
    };
    let Some(key) = key else {
        return;
    };
    items.sort_by(|a, b| {
        let mut o = cmp_field(a, b, key);
        if main {
            let first = sorting.keys.first().copied().unwrap_or("id");
            o = o
                .then_with(|| cmp_field(a, b, first))
                .then_with(|| cmp_field(a, b, "id"));
        }
        if desc { o.reverse() } else { o }
    });
}

fn sort_value(v: &Value, key: &str) -> Value {
    if key == "name"
        && v.get("name").is_none()
        && let Some(n) = v.get("names").and_then(|n| n.get(0))
    {
        return n.clone();
    }
    v.get(key).cloned().unwrap_or(Value::Null)
}

fn cmp_field(a: &Value, b: &Value, key: &str) -> Ordering {
    match (sort_value(a, key), sort_value(b, key)) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .partial_cmp(&y.as_f64())
            .unwrap_or(Ordering::Equal),
        // Go's strings.Compare: byte-wise, so case-sensitive.
        (Value::String(x), Value::String(y)) => x.cmp(&y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(&y),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (x, y) => x.to_string().cmp(&y.to_string()),
    }
}

/// Case-insensitive substring search over some fields.
pub(crate) fn search_match(ctx: &Ctx, fields: &[&str]) -> bool {
    match ctx.q("search").map(|s| s.trim().to_lowercase()) {
        None => true,
        Some(s) if s.is_empty() => true,
        Some(s) => fields.iter().any(|f| f.to_lowercase().contains(&s)),
    }
}

/// A comma-separated filter (values OR'd); `None` when absent or empty.
pub(crate) fn filter_values(ctx: &Ctx, key: &str) -> Option<Vec<String>> {
    let v = ctx.q(key)?.trim();
    if v.is_empty() {
        return None;
    }
    Some(v.split(',').map(|s| s.trim().to_string()).collect())
}

fn bool_filter(ctx: &Ctx, key: &str, actual: bool) -> bool {
    match filter_values(ctx, key) {
        None => true,
        Some(vals) => vals.iter().any(|v| v.parse::<bool>().ok() == Some(actual)),
    }
}

// ---------------------------------------------------------------------------------------
// Environments.

fn list_environments(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let grand = st.environments.len();
    let items: Vec<Value> = st
        .environments
        .iter()
        .filter(|e| search_match(ctx, &[&e.name, &e.api_url]))
        .map(state::environment_json)
        .collect();
    drop(st);
    let (page, pagination) = paginate(ctx, items, grand, Paging::Db, ENVIRONMENT_SORT);
    ctx.ok(Value::Array(page), vec![("pagination", pagination)])
}

fn get_environment(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match st.environments.iter().find(|e| e.id == ctx.p(0)) {
        Some(e) => {
            let v = state::environment_json(e);
            drop(st);
            ctx.ok(v, vec![])
        }
        None => ctx.problem(404, "Environment not found"),
    }
}

fn test_environment(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match st.environments.iter().find(|e| e.id == ctx.p(0)) {
        Some(e) => {
            let v = if e.agent_connected && e.enabled {
                json!({"status": "online", "message": "Connection successful"})
            } else {
                json!({"status": "offline", "message": format!("Connection failed: Get \"{}/api/health\": dial tcp: connect: connection refused", e.api_url)})
            };
            drop(st);
            ctx.ok(v, vec![])
        }
        None => ctx.problem(404, "Environment not found"),
    }
}

// ---------------------------------------------------------------------------------------
// Containers.

fn no_such_container(id: &str) -> String {
    format!("Error response from daemon: No such container: {id}")
}

/// Finds a container of an environment by full ID, name or unique ID prefix (as Docker does).
pub fn find_container(st: &State, env: &str, key: &str) -> Option<usize> {
    let key = key.strip_prefix('/').unwrap_or(key);
    let in_env = |c: &&Container| c.environment_id == env;
    if let Some(i) = st
        .containers
        .iter()
        .position(|c| c.environment_id == env && (c.id == key || c.name == key))
    {
        return Some(i);
    }
    if key.len() >= 4 {
        let matches: Vec<usize> = st
            .containers
            .iter()
            .enumerate()
            .filter(|(_, c)| in_env(c) && c.id.starts_with(key))
            .map(|(i, _)| i)
            .collect();
        if matches.len() == 1 {
            return Some(matches[0]);
        }
    }
    None
}

fn container_counts(st: &State, env: &str, include_internal: bool) -> (Value, usize) {
    let cs: Vec<&Container> = st
        .containers
        .iter()
        .filter(|c| c.environment_id == env && (include_internal || !is_internal(c)))
        .collect();
    let running = cs.iter().filter(|c| c.state == "running").count();
    (
        json!({"runningContainers": running, "stoppedContainers": cs.len() - running, "totalContainers": cs.len()}),
        cs.len(),
    )
}

fn list_containers(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let include_internal = ctx
        .q("includeInternal")
        .is_some_and(|v| v == "true" || v == "1");
    let st = ctx.sh.state();
    // docs/arcane-wire.md#container-list: counts are computed before search and filters; internal containers are
    // hidden from both unless includeInternal.
    let (counts, grand) = container_counts(&st, env, include_internal);
    let items: Vec<Value> = st
        .containers
        .iter()
        .filter(|c| c.environment_id == env && (include_internal || !is_internal(c)))
        .filter(|c| search_match(ctx, &[&c.name, &c.image, &c.state, &c.id]))
        .filter(|c| match filter_values(ctx, "standalone") {
            None => true,
            Some(v) => v
                .iter()
                .any(|v| v.parse::<bool>().ok() == Some(container_project(c).is_none())),
        })
        .filter(|c| match filter_values(ctx, "updates") {
            None => true,
            Some(v) => {
                let has = st
                    .projects
                    .iter()
                    .any(|p| Some(p.name.as_str()) == container_project(c) && p.has_update);
                let status = if has { "has_update" } else { "up_to_date" };
                v.iter().any(|v| v == status)
            }
        })
        .map(state::container_summary)
        .collect();
    drop(st);
    let (page, pagination) = paginate(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: false },
        CONTAINER_SORT,
    );
    let mut members = vec![("counts", counts)];
    if ctx.q("groupBy") == Some("project") {
        let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
        for item in &page {
            let g = item
                .get("labels")
                .and_then(|l| l.get("com.docker.compose.project"))
                .and_then(Value::as_str)
                .unwrap_or("No Project")
                .to_string();
            match groups.iter_mut().find(|(n, _)| *n == g) {
                Some((_, items)) => items.push(item.clone()),
                None => groups.push((g, vec![item.clone()])),
            }
        }
        let groups: Vec<Value> = groups
            .into_iter()
            .map(|(n, items)| json!({"groupName": n, "items": items}))
            .collect();
        members.push(("groups", Value::Array(groups)));
    }
    members.push(("pagination", pagination));
    ctx.ok(Value::Array(page), members)
}

fn get_container(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match find_container(&st, ctx.p(0), ctx.p(1)) {
        Some(i) => {
            let v = state::container_details(&st.containers[i]);
            drop(st);
            ctx.ok(v, vec![])
        }
        None => ctx.problem(
            404,
            &format!(
                "Failed to retrieve container: container not found: {}",
                no_such_container(ctx.p(1))
            ),
        ),
    }
}

fn create_container(ctx: &Ctx) -> Response {
    let env = ctx.p(0).to_string();
    let name = ctx.body_str("name").unwrap_or("").to_string();
    let image = ctx.body_str("image").unwrap_or("").to_string();
    let body = ctx.body.clone().unwrap_or(Value::Null);
    let strings = |k: &str| -> Vec<String> {
        body.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut st = ctx.sh.state();
    if st
        .containers
        .iter()
        .any(|c| c.environment_id == env && c.name == name)
    {
        let existing = st
            .containers
            .iter()
            .find(|c| c.environment_id == env && c.name == name)
            .map(|c| c.id.clone())
            .unwrap_or_default();
        drop(st);
        return ctx.problem(500, &format!("Failed to create container: Error response from daemon: Conflict. The container name \"/{name}\" is already in use by container \"{existing}\". You have to remove (or rename) that container to be able to reuse that name."));
    }
    let id = hex_id(&format!("container:{env}:{name}:{}", st.containers.len()));
    let mut env_vars = strings("env");
    env_vars.extend(strings("environment"));
    let labels = body
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let image_id = st
        .images
        .iter()
        .find(|i| i.environment_id == env && i.repo_tags.contains(&image))
        .map(|i| i.id.clone())
        .unwrap_or_else(|| format!("sha256:{}", hex_id(&format!("image:{image}"))));
    let c = Container {
        id: id.clone(),
        name: name.clone(),
        environment_id: env,
        image: image.clone(),
        image_id,
        state: "running".into(),
        status: "Up Less than a second".into(),
        created: 1_717_500_000,
        command: strings("cmd").join(" "),
        labels,
        env: env_vars,
        ports: vec![],
        networks: vec!["bridge".into()],
        mounts: vec![],
        logs: vec![format!("{name} started")],
        stderr: vec![],
        extra: Default::default(),
    };
    st.containers.push(c);
    drop(st);
    ctx.ok(
        json!({"id": id, "name": name, "image": image, "status": "running", "created": "2024-06-04T11:06:40Z"}),
        vec![],
    )
}

fn container_action(ctx: &Ctx, action: &str) -> Response {
    let mut st = ctx.sh.state();
    let Some(i) = find_container(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        // docs/arcane-wire.md#errors: actions on an unknown container are a 500.
        return ctx.problem(
            500,
            &format!(
                "Failed to {action} container: {}",
                no_such_container(ctx.p(1))
            ),
        );
    };
    let c = &mut st.containers[i];
    let err = match (action, c.state.as_str()) {
        ("pause", s) if s != "running" => Some(format!("Container {} is not running", c.id)),
        ("unpause", s) if s != "paused" => Some(format!("Container {} is not paused", c.id)),
        ("kill", s) if s != "running" && s != "paused" => Some(format!(
            "cannot kill container: {}: container {} is not running",
            c.name, c.id
        )),
        _ => None,
    };
    if let Some(e) = err {
        drop(st);
        return ctx.problem(
            500,
            &format!("Failed to {action} container: Error response from daemon: {e}"),
        );
    }
    let (new_state, status, msg) = match action {
        "start" => (
            "running",
            "Up Less than a second",
            "Container started successfully",
        ),
        "stop" => (
            "exited",
            "Exited (0) Less than a second ago",
            "Container stopped successfully",
        ),
        "restart" => (
            "running",
            "Up Less than a second",
            "Container restarted successfully",
        ),
        "kill" => (
            "exited",
            "Exited (137) Less than a second ago",
            "Container killed successfully",
        ),
        "pause" => (
            "paused",
            "Up 3 hours (Paused)",
            "Container paused successfully",
        ),
        _ => ("running", "Up 3 hours", "Container unpaused successfully"),
    };
    c.state = new_state.into();
    c.status = status.into();
    drop(st);
    ctx.ok(json!({"message": msg}), vec![])
}

fn delete_container(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let mut st = ctx.sh.state();
    let Some(i) = find_container(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        return ctx.problem(
            500,
            &format!(
                "Failed to delete container: {}",
                no_such_container(ctx.p(1))
            ),
        );
    };
    if st.containers[i].state == "running" && !force {
        let name = st.containers[i].name.clone();
        drop(st);
        return ctx.problem(500, &format!("Failed to delete container: Error response from daemon: cannot remove container \"/{name}\": container is running: stop the container before removing or force remove"));
    }
    st.containers.remove(i);
    drop(st);
    ctx.ok(json!({"message": "Container deleted successfully"}), vec![])
}

// ---------------------------------------------------------------------------------------
// Images.

/// Finds an image by ID (with or without `sha256:`, or a unique prefix), or by reference.
pub(crate) fn find_image(st: &State, env: &str, key: &str) -> Option<usize> {
    let bare = key.strip_prefix("sha256:").unwrap_or(key);
    let with_latest = if key.contains(':') || key.contains('@') {
        key.to_string()
    } else {
        format!("{key}:latest")
    };
    st.images
        .iter()
        .position(|i| {
            i.environment_id == env
                && (i.id == key
                    || i.id.strip_prefix("sha256:") == Some(bare)
                    || i.repo_tags.iter().any(|t| *t == key || *t == with_latest)
                    || i.repo_digests.iter().any(|d| d == key))
        })
        .or_else(|| {
            if bare.len() < 4 {
                return None;
            }
            let m: Vec<usize> = st
                .images
                .iter()
                .enumerate()
                .filter(|(_, i)| {
                    i.environment_id == env
                        && i.id
                            .strip_prefix("sha256:")
                            .unwrap_or(&i.id)
                            .starts_with(bare)
                })
                .map(|(n, _)| n)
                .collect();
            (m.len() == 1).then(|| m[0])
        })
}

pub(crate) fn image_in_use(st: &State, i: &state::Image) -> bool {
    st.containers.iter().any(|c| {
        c.environment_id == i.environment_id
            && (c.image_id == i.id || i.repo_tags.contains(&c.image))
    })
}

fn list_images(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let st = ctx.sh.state();
    let all: Vec<&state::Image> = st
        .images
        .iter()
        .filter(|i| i.environment_id == env)
        .collect();
    let grand = all.len();
    let items: Vec<Value> = all
        .iter()
        .filter(|i| {
            let tags = i.repo_tags.join(" ");
            search_match(ctx, &[&tags, &i.id])
        })
        .filter(|i| bool_filter(ctx, "inUse", image_in_use(&st, i)))
        .map(|i| state::image_summary(i, image_in_use(&st, i)))
        .collect();
    drop(st);
    let (page, pagination) = paginate(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: true },
        IMAGE_SORT,
    );
    ctx.ok(Value::Array(page), vec![("pagination", pagination)])
}

fn no_such_image(key: &str) -> String {
    format!("Error response from daemon: No such image: {key}")
}

fn get_image(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match find_image(&st, ctx.p(0), ctx.p(1)) {
        Some(i) => {
            let v = state::image_details(&st.images[i]);
            drop(st);
            ctx.ok(v, vec![])
        }
        None => ctx.problem(
            404,
            &format!(
                "Image not found: inspect not found: {}",
                no_such_image(ctx.p(1))
            ),
        ),
    }
}

fn remove_image(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let mut st = ctx.sh.state();
    let Some(i) = find_image(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        // Docker refuses a reference it cannot parse (a still-encoded `%3A`) before looking.
        if ctx.p(1).contains('%') {
            return ctx.problem(
                500,
                "Failed to remove image: Error response from daemon: invalid reference format: repository name must be lowercase",
            );
        }
        return ctx.problem(
            500,
            &format!("Failed to remove image: {}", no_such_image(ctx.p(1))),
        );
    };
    if !force && image_in_use(&st, &st.images[i]) {
        let short = st.images[i].id.trim_start_matches("sha256:")[..12].to_string();
        let user = st
            .containers
            .iter()
            .find(|c| c.image_id == st.images[i].id || st.images[i].repo_tags.contains(&c.image))
            .map(|c| c.id[..12.min(c.id.len())].to_string())
            .unwrap_or_default();
        drop(st);
        return ctx.problem(500, &format!("Failed to remove image: Error response from daemon: conflict: unable to delete {short} (must be forced) - image is being used by stopped container {user}"));
    }
    st.images.remove(i);
    drop(st);
    ctx.ok(json!({"message": "Image removed successfully"}), vec![])
}

fn image_ref(name: &str, tag: Option<&str>) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if last.contains(':') || name.contains('@') {
        name.to_string()
    } else {
        format!(
            "{name}:{}",
            tag.filter(|t| !t.is_empty()).unwrap_or("latest")
        )
    }
}

fn pull_lines(reference: &str) -> Vec<String> {
    let tag = reference
        .rsplit_once(':')
        .map(|(_, t)| t)
        .unwrap_or("latest");
    let repo = reference
        .rsplit_once(':')
        .map(|(r, _)| r)
        .unwrap_or(reference);
    let layers: Vec<String> = (0..3)
        .map(|n| hex_id(&format!("layer:{reference}:{n}"))[..12].to_string())
        .collect();
    let mut lines = vec![format!(
        "{tag}: Pulling from {}",
        if repo.contains('/') {
            repo.to_string()
        } else {
            format!("library/{repo}")
        }
    )];
    for l in &layers {
        lines.push(format!("{l}: Pulling fs layer"));
    }
    for l in &layers {
        lines.push(format!("{l}: Download complete"));
        lines.push(format!("{l}: Pull complete"));
    }
    lines.push(format!(
        "Digest: sha256:{}",
        hex_id(&format!("digest:{reference}"))
    ));
    lines.push(format!("Status: Downloaded newer image for {reference}"));
    lines
}

fn pull_image(ctx: &Ctx) -> Response {
    let env = ctx.p(0).to_string();
    let name = ctx.body_str("imageName").unwrap_or("").to_string();
    let reference = image_ref(&name, ctx.body_str("tag"));
    let lines = pull_lines(&reference);
    let r2 = reference.clone();
    json_stream(
        ctx,
        lines,
        Ok(()),
        Some(Box::new(move |st: &mut State| add_image(st, &env, &r2))),
    )
}

/// Adds a pulled image to an environment unless it is there already.
pub(crate) fn add_image(st: &mut State, env: &str, reference: &str) {
    if st
        .images
        .iter()
        .any(|i| i.environment_id == env && i.repo_tags.iter().any(|t| t == reference))
    {
        return;
    }
    let repo = reference
        .rsplit_once(':')
        .map(|(r, _)| r)
        .unwrap_or(reference);
    st.images.push(state::Image {
        id: state::demo_image_id(reference),
        environment_id: env.to_string(),
        repo_tags: vec![reference.to_string()],
        repo_digests: vec![format!(
            "{repo}@sha256:{}",
            hex_id(&format!("digest:{reference}"))
        )],
        size: 52_428_800,
        created: 1_717_600_000,
        labels: Default::default(),
        extra: Default::default(),
    });
}

fn build_image(ctx: &Ctx) -> Response {
    let env = ctx.p(0).to_string();
    let tag = ctx
        .body
        .as_ref()
        .and_then(|b| {
            b.get("tags")
                .and_then(|t| t.get(0))
                .and_then(Value::as_str)
                .or_else(|| b.get("tag").and_then(Value::as_str))
        })
        .unwrap_or("sim-build:latest")
        .to_string();
    let lines = vec![
        "#0 building with \"default\" instance using docker driver".to_string(),
        "#1 [internal] load build definition from Dockerfile".to_string(),
        "#1 DONE 0.0s".to_string(),
        "#2 [1/2] FROM docker.io/library/alpine:3.20".to_string(),
        "#2 DONE 0.1s".to_string(),
        "#3 [2/2] RUN echo built".to_string(),
        "#3 DONE 0.2s".to_string(),
        format!("#4 naming to docker.io/library/{tag} done"),
    ];
    let t2 = tag.clone();
    json_stream(
        ctx,
        lines,
        Ok(()),
        Some(Box::new(move |st: &mut State| add_image(st, &env, &t2))),
    )
}

fn prune_images(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let dangling_only = ctx
        .q("dangling")
        .map(|v| v == "true")
        .or_else(|| {
            ctx.body
                .as_ref()
                .and_then(|b| b.get("dangling"))
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    let mut st = ctx.sh.state();
    let snapshot = st.clone();
    let mut deleted = Vec::new();
    let mut space = 0i64;
    st.images.retain(|i| {
        let prune = i.environment_id == env
            && !image_in_use(&snapshot, i)
            && (!dangling_only || i.repo_tags.is_empty());
        if prune {
            deleted.push(i.id.clone());
            space += i.size;
        }
        !prune
    });
    drop(st);
    ctx.ok(
        json!({"imagesDeleted": deleted, "spaceReclaimed": space}),
        vec![],
    )
}

fn export_image(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let Some(i) = find_image(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        return ctx.problem(
            500,
            &format!("failed to export image: {}", no_such_image(ctx.p(1))),
        );
    };
    let img = st.images[i].clone();
    drop(st);
    let reference = ctx.p(1).to_string();
    let file: String = reference
        .chars()
        .map(|c| if matches!(c, '/' | ':' | '@') { '_' } else { c })
        .collect();
    let manifest = json!([{"Config": format!("{}.json", img.id.trim_start_matches("sha256:")), "RepoTags": img.repo_tags, "Layers": []}]);
    let tar = tar_archive(&[(
        "manifest.json",
        serde_json::to_vec(&manifest).unwrap_or_default(),
    )]);
    download(
        ctx,
        "application/x-tar",
        &format!("attachment; filename=\"{file}.tar\""),
        tar,
    )
}

/// A minimal ustar archive.
pub fn tar_archive(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        let mut h = [0u8; 512];
        h[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
        h[136..148].copy_from_slice(format!("{:011o}\0", 1_717_171_717u64).as_bytes());
        h[148..156].copy_from_slice(b"        ");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

// ---------------------------------------------------------------------------------------
// Projects.

/// Arcane finds a project by its database ID only; a name is not found.
fn find_project(st: &State, env: &str, key: &str) -> Option<usize> {
    st.projects
        .iter()
        .position(|p| p.environment_id == env && p.id == key)
}

fn project_containers<'a>(st: &'a State, p: &state::Project) -> Vec<&'a Container> {
    st.containers
        .iter()
        .filter(|c| {
            c.environment_id == p.environment_id && container_project(c) == Some(p.name.as_str())
        })
        .collect()
}

fn project_value(st: &State, i: usize, version: ArcaneVersion) -> Value {
    let p = &st.projects[i];
    let mut v = state::project_details(p, &project_containers(st, p));
    // 2.8.x always reports false; main reports whether a service has a `build` section.
    let builds =
        version == ArcaneVersion::Main && p.services.iter().any(|s| s.get("build").is_some());
    v["hasBuildDirective"] = json!(builds);
    v
}

/// Starts every container of a compose project and derives the project's status from them;
/// the project's index, when it exists.
pub(crate) fn start_project(st: &mut State, env: &str, name: &str) -> Option<usize> {
    for c in st.containers.iter_mut() {
        if c.environment_id == env && container_project(c) == Some(name) {
            c.state = "running".into();
            c.status = "Up Less than a second".into();
        }
    }
    let i = st
        .projects
        .iter()
        .position(|p| p.environment_id == env && p.name == name)?;
    recompute_status(st, i);
    Some(i)
}

fn recompute_status(st: &mut State, i: usize) {
    let p = st.projects[i].clone();
    let cs = project_containers(st, &p);
    let running = cs.iter().filter(|c| c.state == "running").count();
    st.projects[i].status = if cs.is_empty() || running == 0 {
        "stopped".into()
    } else if running == cs.len() {
        "running".into()
    } else {
        "partially running".into()
    };
}

fn list_projects(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let st = ctx.sh.state();
    let all: Vec<usize> = (0..st.projects.len())
        .filter(|i| st.projects[*i].environment_id == env)
        .collect();
    let grand = all.len();
    let items: Vec<Value> = all
        .into_iter()
        .filter(|i| search_match(ctx, &[&st.projects[*i].name]))
        .filter(|i| match filter_values(ctx, "status") {
            None => true,
            Some(v) => v
                .iter()
                .any(|s| s.eq_ignore_ascii_case(&st.projects[*i].status)),
        })
        .map(|i| project_value(&st, i, ctx.sh.version()))
        .collect();
    drop(st);
    // docs/arcane-wire.md#list-envelopes-and-paging: projects clamp limits like the DB-backed lists.
    let (page, mut pagination) = paginate(ctx, items, grand, Paging::Db, PROJECT_SORT);
    pagination["grandTotalItems"] = json!(grand);
    ctx.ok(Value::Array(page), vec![("pagination", pagination)])
}

fn project_not_found(ctx: &Ctx) -> Response {
    ctx.problem(404, "Failed to get project details: project not found")
}

fn get_project(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match find_project(&st, ctx.p(0), ctx.p(1)) {
        Some(i) => {
            let v = project_value(&st, i, ctx.sh.version());
            drop(st);
            ctx.ok(v, vec![])
        }
        None => {
            drop(st);
            project_not_found(ctx)
        }
    }
}

fn project_stream(ctx: &Ctx, action: &'static str) -> Response {
    let env = ctx.p(0).to_string();
    let mut st = ctx.sh.state();
    let Some(i) = find_project(&st, &env, ctx.p(1)) else {
        drop(st);
        // Failures before streaming starts are problem+json (docs/arcane-wire.md#streams).
        return project_not_found(ctx);
    };
    let p = st.projects[i].clone();
    if matches!(action, "up" | "redeploy") {
        crate::collections::ensure_project_containers(&mut st, &env, &p.name);
    }
    let containers: Vec<String> = project_containers(&st, &p)
        .iter()
        .map(|c| c.name.clone())
        .collect();
    drop(st);
    let images: Vec<String> = p
        .services
        .iter()
        .filter_map(|s| s.get("image").and_then(Value::as_str).map(str::to_string))
        .collect();
    let mut lines = Vec::new();
    if matches!(action, "pull" | "redeploy")
        || (action == "up"
            && ctx
                .body
                .as_ref()
                .and_then(|b| b.get("pullPolicy"))
                .and_then(Value::as_str)
                == Some("always"))
    {
        for img in &images {
            lines.push(format!(" {img} Pulling"));
            lines.extend(pull_lines(img).into_iter().map(|l| format!(" {l}")));
            lines.push(format!(" {img} Pulled"));
        }
    }
    if action == "build" {
        for s in &p.services {
            if s.get("build").is_some() {
                let n = s.get("name").and_then(Value::as_str).unwrap_or("app");
                lines.push(format!(
                    "#1 [{n} internal] load build definition from Dockerfile"
                ));
                lines.push("#1 DONE 0.0s".into());
                lines.push(format!("#2 [{n}] exporting to image"));
                lines.push("#2 DONE 0.3s".into());
            }
        }
        if lines.is_empty() {
            lines.push("No services to build".into());
        }
    }
    if matches!(action, "up" | "redeploy") {
        let net = format!("{}_default", p.name);
        lines.push(format!(" Network {net}  Creating"));
        lines.push(format!(" Network {net}  Created"));
        for c in &containers {
            lines.push(format!(
                " Container {c}  {}",
                if action == "redeploy" {
                    "Recreate"
                } else {
                    "Starting"
                }
            ));
        }
        for c in &containers {
            lines.push(format!(" Container {c}  Started"));
        }
    }
    let on_done: Option<crate::server::StateChange> = if matches!(action, "up" | "redeploy") {
        let name = p.name.clone();
        Some(Box::new(move |st: &mut State| {
            // A redeploy pulls the newer images and recreates the containers on them.
            if let Some(i) = start_project(st, &env, &name)
                && action == "redeploy"
            {
                st.projects[i].has_update = false;
            }
        }))
    } else {
        None
    };
    if ctx.response_schema().1.is_some() {
        // The loaded spec declares a JSON answer (Arcane 1.x): apply and answer JSON.
        if let Some(f) = on_done {
            f(&mut ctx.sh.state());
        }
        let msg = match action {
            "up" => "Project deployed successfully",
            "redeploy" => "Project redeployed successfully",
            "pull" => "Project images pulled successfully",
            _ => "Project images built successfully",
        };
        return ctx.ok(json!({"message": msg}), vec![]);
    }
    json_stream(ctx, lines, Ok(()), on_done)
}

fn project_action(ctx: &Ctx, action: &str) -> Response {
    let env = ctx.p(0).to_string();
    let mut st = ctx.sh.state();
    let Some(i) = find_project(&st, &env, ctx.p(1)) else {
        drop(st);
        return match action {
            "down" => ctx.problem(
                500,
                "Failed to bring down project: failed to get project: project not found",
            ),
            "destroy" => ctx.problem(500, "Failed to destroy project: project not found"),
            _ => ctx.problem(400, "Failed to restart project: project not found"),
        };
    };
    let name = st.projects[i].name.clone();
    let services: Option<Vec<String>> = ctx
        .q("services")
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(str::to_string).collect());
    let msg = match action {
        "down" => {
            for c in st.containers.iter_mut() {
                if c.environment_id == env && container_project(c) == Some(name.as_str()) {
                    c.state = "exited".into();
                    c.status = "Exited (0) Less than a second ago".into();
                }
            }
            recompute_status(&mut st, i);
            "Project brought down successfully"
        }
        "restart" => {
            for c in st.containers.iter_mut() {
                let svc = c
                    .labels
                    .get("com.docker.compose.service")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if c.environment_id == env
                    && container_project(c) == Some(name.as_str())
                    && services.as_ref().is_none_or(|s| s.contains(&svc))
                {
                    c.state = "running".into();
                    c.status = "Up Less than a second".into();
                }
            }
            recompute_status(&mut st, i);
            "Project restarted successfully"
        }
        _ => {
            st.containers.retain(|c| {
                !(c.environment_id == env && container_project(c) == Some(name.as_str()))
            });
            let remove_volumes = ctx
                .body
                .as_ref()
                .and_then(|b| b.get("removeVolumes"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if remove_volumes {
                st.volumes.retain(|v| {
                    !(v.environment_id == env
                        && v.labels
                            .get("com.docker.compose.project")
                            .and_then(Value::as_str)
                            == Some(name.as_str()))
                });
            }
            st.projects.remove(i);
            "Project destroyed successfully"
        }
    };
    drop(st);
    ctx.ok(json!({"message": msg}), vec![])
}

// ---------------------------------------------------------------------------------------
// Volumes.

fn volume_users(st: &State, v: &state::Volume) -> Vec<String> {
    st.containers
        .iter()
        .filter(|c| {
            c.environment_id == v.environment_id
                && c.mounts
                    .iter()
                    .any(|m| m.get("name").and_then(Value::as_str) == Some(v.name.as_str()))
        })
        .map(|c| c.id.clone())
        .collect()
}

fn volume_counts(st: &State, env: &str) -> Value {
    let vs: Vec<&state::Volume> = st
        .volumes
        .iter()
        .filter(|v| v.environment_id == env)
        .collect();
    let inuse = vs
        .iter()
        .filter(|v| !volume_users(st, v).is_empty())
        .count();
    json!({"inuse": inuse, "unused": vs.len() - inuse, "total": vs.len()})
}

fn list_volumes(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let st = ctx.sh.state();
    let counts = volume_counts(&st, env);
    let all: Vec<&state::Volume> = st
        .volumes
        .iter()
        .filter(|v| v.environment_id == env)
        .collect();
    let grand = all.len();
    let items: Vec<Value> = all
        .iter()
        .filter(|v| search_match(ctx, &[&v.name, &v.driver]))
        .filter(|v| bool_filter(ctx, "inUse", !volume_users(&st, v).is_empty()))
        .map(|v| state::volume_json(v, &volume_users(&st, v)))
        .collect();
    drop(st);
    let (page, pagination) = paginate(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: true },
        VOLUME_SORT,
    );
    ctx.ok(
        Value::Array(page),
        vec![("counts", counts), ("pagination", pagination)],
    )
}

fn get_volume(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match st
        .volumes
        .iter()
        .find(|v| v.environment_id == ctx.p(0) && v.name == ctx.p(1))
    {
        Some(v) => {
            let out = state::volume_json(v, &volume_users(&st, v));
            drop(st);
            ctx.ok(out, vec![])
        }
        None => ctx.problem(
            404,
            &format!(
                "Volume not found: Error response from daemon: get {}: no such volume",
                ctx.p(1)
            ),
        ),
    }
}

fn create_volume(ctx: &Ctx) -> Response {
    let env = ctx.p(0).to_string();
    let name = ctx.body_str("name").unwrap_or("").to_string();
    let mut st = ctx.sh.state();
    let existing = st
        .volumes
        .iter()
        .position(|v| v.environment_id == env && v.name == name);
    let i = match existing {
        Some(i) => i,
        None => {
            st.volumes.push(state::Volume {
                name: name.clone(),
                environment_id: env,
                driver: ctx
                    .body_str("driver")
                    .filter(|d| !d.is_empty())
                    .unwrap_or("local")
                    .to_string(),
                mountpoint: format!("/var/lib/docker/volumes/{name}/_data"),
                created_at: "2025-06-01T12:00:00Z".into(),
                labels: ctx
                    .body
                    .as_ref()
                    .and_then(|b| b.get("labels"))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
                size: 0,
                extra: Default::default(),
            });
            st.volumes.len() - 1
        }
    };
    let out = state::volume_json(&st.volumes[i], &volume_users(&st, &st.volumes[i]));
    drop(st);
    ctx.ok(out, vec![])
}

fn delete_volume(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let mut st = ctx.sh.state();
    let Some(i) = st
        .volumes
        .iter()
        .position(|v| v.environment_id == ctx.p(0) && v.name == ctx.p(1))
    else {
        drop(st);
        return ctx.problem(
            500,
            &format!(
                "Failed to delete volume: Error response from daemon: get {}: no such volume",
                ctx.p(1)
            ),
        );
    };
    let users = volume_users(&st, &st.volumes[i]);
    if !users.is_empty() && !force {
        drop(st);
        return ctx.problem(500, &format!("Failed to delete volume: Error response from daemon: remove {}: volume is in use - [{}]", ctx.p(1), users.join(", ")));
    }
    st.volumes.remove(i);
    drop(st);
    ctx.ok(json!({"message": "Volume removed successfully"}), vec![])
}

fn prune_volumes(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let mut st = ctx.sh.state();
    let snapshot = st.clone();
    let mut deleted = Vec::new();
    let mut space = 0;
    st.volumes.retain(|v| {
        let prune = v.environment_id == env && volume_users(&snapshot, v).is_empty();
        if prune {
            deleted.push(v.name.clone());
            space += v.size;
        }
        !prune
    });
    drop(st);
    ctx.ok(
        json!({"volumesDeleted": deleted, "spaceReclaimed": space}),
        vec![],
    )
}

// ---------------------------------------------------------------------------------------
// Networks.

fn network_in_use(st: &State, n: &state::Network) -> bool {
    st.containers
        .iter()
        .any(|c| c.environment_id == n.environment_id && c.networks.contains(&n.name))
}

fn is_default_network(n: &state::Network) -> bool {
    matches!(n.name.as_str(), "bridge" | "host" | "none")
}

fn network_counts(st: &State, env: &str) -> Value {
    let ns: Vec<&state::Network> = st
        .networks
        .iter()
        .filter(|n| n.environment_id == env)
        .collect();
    let inuse = ns.iter().filter(|n| network_in_use(st, n)).count();
    json!({"inuse": inuse, "unused": ns.len() - inuse, "total": ns.len()})
}

fn find_network(st: &State, env: &str, key: &str) -> Option<usize> {
    st.networks
        .iter()
        .position(|n| n.environment_id == env && (n.id == key || n.name == key))
        .or_else(|| {
            if key.len() < 4 {
                return None;
            }
            let m: Vec<usize> = st
                .networks
                .iter()
                .enumerate()
                .filter(|(_, n)| n.environment_id == env && n.id.starts_with(key))
                .map(|(i, _)| i)
                .collect();
            (m.len() == 1).then(|| m[0])
        })
}

fn list_networks(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let st = ctx.sh.state();
    let counts = network_counts(&st, env);
    let all: Vec<&state::Network> = st
        .networks
        .iter()
        .filter(|n| n.environment_id == env)
        .collect();
    let grand = all.len();
    let items: Vec<Value> = all
        .iter()
        .filter(|n| search_match(ctx, &[&n.name, &n.driver, &n.id]))
        .filter(|n| bool_filter(ctx, "inUse", network_in_use(&st, n)))
        .map(|n| state::network_json(n, network_in_use(&st, n)))
        .collect();
    drop(st);
    let (page, pagination) = paginate(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: false },
        NETWORK_SORT,
    );
    ctx.ok(
        Value::Array(page),
        vec![("counts", counts), ("pagination", pagination)],
    )
}

fn get_network(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    match find_network(&st, ctx.p(0), ctx.p(1)) {
        Some(i) => {
            let n = &st.networks[i];
            let mut v = state::network_json(n, network_in_use(&st, n));
            let members: Vec<Value> = st.containers.iter().filter(|c| c.environment_id == n.environment_id && c.networks.contains(&n.name)).map(|c| json!({"id": c.id, "name": c.name, "ipv4Address": "172.18.0.2/16", "macAddress": "02:42:ac:12:00:02"})).collect();
            v["containersList"] = Value::Array(members);
            v["containers"] = json!({});
            drop(st);
            ctx.ok(v, vec![])
        }
        None => ctx.problem(
            404,
            &format!(
                "Network not found: Error response from daemon: network {} not found",
                ctx.p(1)
            ),
        ),
    }
}

fn create_network(ctx: &Ctx) -> Response {
    let env = ctx.p(0).to_string();
    let name = ctx.body_str("name").unwrap_or("").to_string();
    let opts = ctx
        .body
        .as_ref()
        .and_then(|b| b.get("options"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut st = ctx.sh.state();
    if st
        .networks
        .iter()
        .any(|n| n.environment_id == env && n.name == name)
    {
        drop(st);
        return ctx.problem(500, &format!("Failed to create network: Error response from daemon: network with name {name} already exists"));
    }
    let id = hex_id(&format!("network:{env}:{name}"));
    st.networks.push(state::Network {
        id: id.clone(),
        name,
        environment_id: env,
        driver: opts
            .get("driver")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .unwrap_or("bridge")
            .to_string(),
        scope: "local".into(),
        internal: opts
            .get("internal")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        labels: opts
            .get("labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        created: "2025-06-01T12:00:00Z".into(),
        extra: Default::default(),
    });
    drop(st);
    ctx.ok(json!({"id": id}), vec![])
}

fn delete_network(ctx: &Ctx) -> Response {
    let mut st = ctx.sh.state();
    let Some(i) = find_network(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        return ctx.problem(
            500,
            &format!(
                "Failed to remove network: Error response from daemon: network {} not found",
                ctx.p(1)
            ),
        );
    };
    let n = st.networks[i].clone();
    if is_default_network(&n) {
        drop(st);
        return ctx.problem(500, &format!("Failed to remove network: Error response from daemon: {} is a pre-defined network and cannot be removed", n.name));
    }
    if network_in_use(&st, &n) {
        drop(st);
        return ctx.problem(500, &format!("Failed to remove network: Error response from daemon: error while removing network: network {} id {} has active endpoints", n.name, n.id));
    }
    st.networks.remove(i);
    drop(st);
    ctx.ok(json!({"message": "Network removed successfully"}), vec![])
}

fn prune_networks(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let mut st = ctx.sh.state();
    let snapshot = st.clone();
    let mut deleted = Vec::new();
    st.networks.retain(|n| {
        let prune =
            n.environment_id == env && !is_default_network(n) && !network_in_use(&snapshot, n);
        if prune {
            deleted.push(n.name.clone());
        }
        !prune
    });
    drop(st);
    ctx.ok(
        json!({"networksDeleted": deleted, "spaceReclaimed": 0}),
        vec![],
    )
}

// ---------------------------------------------------------------------------------------
// Swarm services.

fn find_service(st: &State, env: &str, key: &str) -> Option<usize> {
    st.swarm_services
        .iter()
        .position(|s| s.environment_id == env && (s.id == key || s.name == key))
}

fn list_swarm_services(ctx: &Ctx) -> Response {
    let env = ctx.p(0);
    let st = ctx.sh.state();
    let all: Vec<&state::SwarmService> = st
        .swarm_services
        .iter()
        .filter(|s| s.environment_id == env)
        .collect();
    let grand = all.len();
    let items: Vec<Value> = all
        .iter()
        .filter(|s| search_match(ctx, &[&s.name, &s.image]))
        .map(|s| state::swarm_service_json(s))
        .collect();
    drop(st);
    let (page, pagination) = paginate(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: false },
        SWARM_SERVICE_SORT,
    );
    ctx.ok(Value::Array(page), vec![("pagination", pagination)])
}

fn service_not_found(ctx: &Ctx) -> Response {
    ctx.problem(
        404,
        &format!(
            "Swarm service not found: Error response from daemon: service {} not found",
            ctx.p(1)
        ),
    )
}

fn get_swarm_service(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let Some(i) = find_service(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        return service_not_found(ctx);
    };
    let s = st.swarm_services[i].clone();
    drop(st);
    let mode = if s.mode == "global" {
        json!({"Global": {}})
    } else {
        json!({"Replicated": {"Replicas": s.replicas}})
    };
    let mut v = state::swarm_service_json(&s);
    if let Value::Object(o) = &mut v {
        o.insert("version".into(), json!({"Index": 42}));
        o.insert(
            "spec".into(),
            json!({"Name": s.name, "Labels": s.labels, "Mode": mode,
            "TaskTemplate": {"ContainerSpec": {"Image": s.image}}}),
        );
        o.insert("endpoint".into(), json!({"Ports": []}));
    }
    ctx.ok(v, vec![])
}

fn scale_swarm_service(ctx: &Ctx) -> Response {
    let replicas = ctx
        .body
        .as_ref()
        .and_then(|b| b.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut st = ctx.sh.state();
    let Some(i) = find_service(&st, ctx.p(0), ctx.p(1)) else {
        drop(st);
        return service_not_found(ctx);
    };
    if st.swarm_services[i].mode == "global" {
        drop(st);
        return ctx.problem(
            400,
            "scale can only be used with replicated or replicated-job mode",
        );
    }
    st.swarm_services[i].replicas = replicas;
    st.swarm_services[i].running_replicas = replicas;
    drop(st);
    ctx.ok(json!({"warnings": []}), vec![])
}

// ---------------------------------------------------------------------------------------
// Activities and the build workspace.

fn cancel_activity(ctx: &Ctx) -> Response {
    match ctx.sh.activity_running(ctx.p(1)) {
        // Everything the simulator starts finishes at once or streams briefly.
        Some(true) => generic(ctx),
        Some(false) => ctx.problem(409, "activity is not running"),
        None => ctx.problem(404, "activity not found"),
    }
}

/// The build workspace path of a request, an absolute path re-rooted under the build root;
/// `None` for a path with `..` (refused).
fn build_path(ctx: &Ctx) -> Option<String> {
    let raw = ctx.q("path").unwrap_or("");
    if raw.split('/').any(|s| s == "..") {
        return None;
    }
    Some(raw.trim_matches('/').to_string())
}

fn traversal(ctx: &Ctx) -> Response {
    ctx.problem(400, "invalid path: path traversal not allowed")
}

fn build_browse(ctx: &Ctx) -> Response {
    let Some(dir) = build_path(ctx) else {
        return traversal(ctx);
    };
    let st = ctx.sh.state();
    let mut names: Vec<(String, bool)> = Vec::new();
    if dir.is_empty() {
        names.push(("Dockerfile".into(), false));
    }
    for d in &st.build_dirs {
        let parent = d.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        if parent == dir {
            let name = d.rsplit('/').next().unwrap_or(d).to_string();
            names.push((name, true));
        }
    }
    drop(st);
    // 2.8.x sends neither `relativePath` nor `editable` although the document requires them,
    // so this answer is not fitted to the schema.
    let entries: Vec<Value> = names
        .into_iter()
        .map(|(name, is_dir)| {
            let path = if dir.is_empty() {
                format!("/app/data/builds/{name}")
            } else {
                format!("/app/data/builds/{dir}/{name}")
            };
            json!({"name": name, "path": path, "size": if is_dir { 4096 } else { 112 },
                   "isDirectory": is_dir, "isSymlink": false,
                   "modTime": "2025-06-01T12:00:00Z",
                   "mode": if is_dir { "drwxr-xr-x" } else { "-rw-r--r--" }})
        })
        .collect();
    let (status, _, name) = ctx.response_schema();
    let mut body = serde_json::Map::new();
    if let Some(n) = &name {
        body.insert("$schema".into(), json!(ctx.schema_url(n)));
    }
    body.insert("success".into(), json!(true));
    body.insert("data".into(), Value::Array(entries));
    ctx.finish_json(status, Value::Object(body), name.as_deref())
}

/// mkdir and delete answer 204 with no body.
fn build_change(ctx: &Ctx, mkdir: bool) -> Response {
    let Some(path) = build_path(ctx) else {
        return traversal(ctx);
    };
    let mut st = ctx.sh.state();
    if path.is_empty() {
        // The root itself: nothing to create or delete.
    } else if mkdir {
        if !st.build_dirs.contains(&path) {
            st.build_dirs.push(path);
        }
    } else {
        st.build_dirs
            .retain(|d| d != &path && !d.starts_with(&format!("{path}/")));
    }
    StatusCode::NO_CONTENT.into_response()
}

// ---------------------------------------------------------------------------------------
// Downloads (docs/arcane-wire.md#downloads).

const DEMO_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUYXJjYW5lLXNpbS1kZW1vLWNhMAoGCCqGSM49BAMCMB8x\nHTAbBgNVBAMMFGFyY2FuZS1zaW0gZGVtbyBDQSAwHhcNMjUwNjAxMTIwMDAwWhcN\nMzUwNjAxMTIwMDAwWjAfMR0wGwYDVQQDDBRhcmNhbmUtc2ltIGRlbW8gQ0EgMFkw\n-----END CERTIFICATE-----\n";
const EMPTY_GZIP: [u8; 20] = [
    0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

fn mtls_base_name(name: &str, env_id: &str) -> String {
    let base: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let base = base.trim_matches('-');
    format!(
        "{}-{env_id}",
        if base.is_empty() { "environment" } else { base }
    )
}

fn downloads(ctx: &Ctx, shape: &str) -> Response {
    match shape {
        "/environments/{}/images/{}/export" => export_image(ctx),
        "/environments/{}/volumes/backups/{}/download" => download(
            ctx,
            "application/x-gzip",
            &format!("attachment; filename={}.tar.gz", ctx.p(1)),
            EMPTY_GZIP.to_vec(),
        ),
        "/edge-mtls/ca" => download(
            ctx,
            "application/x-pem-file",
            "attachment; filename=\"ca.crt\"",
            DEMO_PEM.as_bytes().to_vec(),
        ),
        "/environments/{}/deployment/mtls/bundle" | "/environments/{}/deployment/mtls/{}" => {
            let st = ctx.sh.state();
            let Some(env) = st.environments.iter().find(|e| e.id == ctx.p(0)).cloned() else {
                drop(st);
                return ctx.problem(404, "Environment not found");
            };
            drop(st);
            let base = mtls_base_name(&env.name, &env.id);
            if shape.ends_with("/bundle") {
                let mut zip = vec![0x50, 0x4b, 0x05, 0x06];
                zip.extend_from_slice(&[0u8; 18]);
                return download(
                    ctx,
                    "application/zip",
                    &format!("attachment; filename=\"{base}-mtls.zip\""),
                    zip,
                );
            }
            let file = ctx.p(1);
            let name = match file {
                "agent.crt" => format!("{base}.pem"),
                "agent.key" => format!("{base}.key"),
                "ca.crt" => "ca.crt".to_string(),
                _ => return ctx.problem(404, "Requested mTLS asset was not found"),
            };
            let body = if file == "agent.key" {
                "-----BEGIN PRIVATE KEY-----\nYXJjYW5lLXNpbSBkZW1vIGtleSwgbm90IGEgcmVhbCBrZXk=\n-----END PRIVATE KEY-----\n".to_string()
            } else {
                DEMO_PEM.to_string()
            };
            download(
                ctx,
                "application/x-pem-file",
                &format!("attachment; filename=\"{name}\""),
                body.into_bytes(),
            )
        }
        _ => {
            let rel = ctx
                .q("relativePath")
                .or_else(|| ctx.q("path"))
                .unwrap_or("file.txt");
            let base = rel
                .rsplit('/')
                .next()
                .filter(|b| !b.is_empty())
                .unwrap_or("file.txt");
            download(
                ctx,
                "application/octet-stream",
                &format!("attachment; filename={base}"),
                format!("contents of {rel}\n").into_bytes(),
            )
        }
    }
}

// ---------------------------------------------------------------------------------------
// Generic responder.

/// A deterministic 2xx answer synthesized from the operation's response schema.
pub fn generic(ctx: &Ctx) -> Response {
    let spec = &ctx.sh.spec;
    let Some(op_i) = ctx.op else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let op = &spec.ops[op_i];
    let (status, schema, name) = ctx.response_schema();
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if ctx.method == "HEAD" || status == 204 {
        return code.into_response();
    }
    let Some(schema) = schema else {
        // No JSON body declared: a stream, an event stream or an opaque answer.
        if op.template == "/stream" {
            return (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                ": connected\n\n",
            )
                .into_response();
        }
        if ctx.method == "POST" {
            return json_stream(ctx, vec!["Working…".into()], Ok(()), None);
        }
        return download(
            ctx,
            "application/octet-stream",
            "attachment; filename=download.bin",
            b"arcane-sim\n".to_vec(),
        );
    };
    let mut v = synth(spec, schema, "", &op.template);
    if let Value::Object(o) = &mut v {
        let mut ordered = serde_json::Map::new();
        if let Some(n) = &name {
            ordered.insert("$schema".into(), json!(ctx.schema_url(n)));
        }
        for (k, val) in std::mem::take(o) {
            ordered.insert(k, val);
        }
        *o = ordered;
    }
    // Keep the pagination arithmetic consistent with the synthesized page.
    if let Some(Value::Array(items)) = v.get("data").cloned()
        && v.get("pagination").is_some()
    {
        let n = items.len();
        let (page, pagination) = paginate(ctx, items, n, Paging::Db, GENERIC_SORT);
        v["data"] = Value::Array(page);
        v["pagination"] = pagination;
    }
    ctx.finish_json(status, v, name.as_deref())
}
