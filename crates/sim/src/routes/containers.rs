//! Containers: list (with counts and project groups), get, create, the lifecycle actions and
//! delete, with Docker's error texts as Arcane chains them.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{by_unique_prefix, change, get_one, message, refuse, str_array};
use super::lists::{
    CONTAINER_SORT, DOCKER, GENERIC_SORT, answer_page, filter_values, paginate, search_match,
};
use crate::ctx::Ctx;
use crate::state::{self, Container, State, container_project, is_internal};
use crate::synth::hex_id;

fn no_such_container(id: &str) -> String {
    format!("Error response from daemon: No such container: {id}")
}

/// Finds a container of an environment by full ID, name or unique ID prefix (as Docker does).
pub fn find_container(st: &State, env: &str, key: &str) -> Option<usize> {
    let key = key.strip_prefix('/').unwrap_or(key);
    st.containers
        .iter()
        .position(|c| c.environment_id == env && (c.id == key || c.name == key))
        .or_else(|| by_unique_prefix(&st.containers, env, key, |c| &c.id))
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

/// `GET …/containers/counts`: the counts of the list, without internal containers.
pub(super) fn counts(ctx: &Ctx) -> Response {
    let (counts, _) = container_counts(&ctx.sh.state(), ctx.env_id(), false);
    ctx.ok(counts, vec![])
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let env = ctx.env_id();
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
    let (page, pagination) = paginate(ctx, items, grand, DOCKER, CONTAINER_SORT);
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

pub(super) fn get(ctx: &Ctx) -> Response {
    let key = ctx.param("containerId");
    get_one(
        ctx,
        |st| {
            find_container(st, ctx.env_id(), key)
                .map(|i| state::container_details(&st.containers[i]))
        },
        404,
        || {
            format!(
                "Failed to retrieve container: container not found: {}",
                no_such_container(key)
            )
        },
    )
}

pub(super) fn create(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let name = ctx.body_str("name").unwrap_or("").to_string();
    let image = ctx.body_str("image").unwrap_or("").to_string();
    let body = ctx.body.clone().unwrap_or(Value::Null);
    let strings = |k: &str| str_array(body.get(k));
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
        started_at: None,
        finished_at: None,
        restart_policy: None,
        healthcheck: None,
        health: None,
        extra: Default::default(),
    };
    st.containers.push(c);
    drop(st);
    ctx.ok(
        json!({"id": id, "name": name, "image": image, "status": "running", "created": "2024-06-04T11:06:40Z"}),
        vec![],
    )
}

pub(super) fn action(ctx: &Ctx, action: &str) -> Response {
    let key = ctx.param("containerId");
    change(ctx, |st| {
        let outcome = act(st, ctx.env_id(), key, action);
        // Arcane logs the action before it runs, and its failure after.
        let error = outcome
            .as_ref()
            .err()
            .map(|e| e.split_once(": ").map_or(e.as_str(), |(_, d)| d));
        super::events::log_container_action(st, ctx, action, key, error);
        outcome.map(message).map_err(|e| refuse(500, e))
    })
}

/// Docker's status text of a running container: its healthcheck's state ends it.
fn up_status(since: &str, c: &Container) -> String {
    match state::health_status(c) {
        Some("starting") => format!("Up {since} (health: starting)"),
        Some(h) => format!("Up {since} ({h})"),
        None => format!("Up {since}"),
    }
}

/// One lifecycle action on the state: its success message, or Arcane's error text.
fn act(st: &mut State, env: &str, key: &str, action: &str) -> Result<&'static str, String> {
    let Some(i) = find_container(st, env, key) else {
        // docs/arcane-wire.md#errors: actions on an unknown container are a 500.
        return Err(format!(
            "Failed to {action} container: {}",
            no_such_container(key)
        ));
    };
    let c = &mut st.containers[i];
    let err = match (action, c.state.as_str()) {
        // Docker's 409, which Arcane answers as its 500
        // (docs/arcane-wire.md#conflicts-that-are-not-parameter-errors).
        ("start", "paused") => Some("cannot start a paused container, try unpause instead".into()),
        ("pause", s) if s != "running" => Some(format!("Container {} is not running", c.id)),
        ("unpause", s) if s != "paused" => Some(format!("Container {} is not paused", c.id)),
        ("kill", s) if s != "running" && s != "paused" => Some(format!(
            "cannot kill container: {}: container {} is not running",
            c.name, c.id
        )),
        _ => None,
    };
    if let Some(e) = err {
        return Err(format!(
            "Failed to {action} container: Error response from daemon: {e}"
        ));
    }
    if matches!(action, "start" | "restart")
        && let Some(h) = c.health.as_mut()
    {
        // A started container's healthcheck begins again.
        h["status"] = json!("starting");
        h["failingStreak"] = json!(0);
    }
    let (new_state, status, msg) = match action {
        "start" => (
            "running",
            up_status("Less than a second", c),
            "Container started successfully",
        ),
        "stop" => (
            "exited",
            "Exited (0) Less than a second ago".into(),
            "Container stopped successfully",
        ),
        "restart" => (
            "running",
            up_status("Less than a second", c),
            "Container restarted successfully",
        ),
        "kill" => (
            "exited",
            "Exited (137) Less than a second ago".into(),
            "Container killed successfully",
        ),
        "pause" => (
            "paused",
            "Up 3 hours (Paused)".into(),
            "Container paused successfully",
        ),
        _ => (
            "running",
            up_status("3 hours", c),
            "Container unpaused successfully",
        ),
    };
    c.state = new_state.into();
    c.status = status;
    Ok(msg)
}

pub(super) fn delete(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let key = ctx.param("containerId");
    change(ctx, |st| {
        let Some(i) = find_container(st, ctx.env_id(), key) else {
            return Err(refuse(
                500,
                format!("Failed to delete container: {}", no_such_container(key)),
            ));
        };
        let name = &st.containers[i].name;
        let why = match st.containers[i].state.as_str() {
            _ if force => None,
            "running" => {
                Some("container is running: stop the container before removing or force remove")
            }
            // Docker refuses a paused one too (daemon/delete.go).
            "paused" => Some("container is paused and must be unpaused first"),
            _ => None,
        };
        if let Some(why) = why {
            return Err(refuse(
                500,
                format!(
                    "Failed to delete container: Error response from daemon: cannot remove container \"/{name}\": {why}"
                ),
            ));
        }
        st.containers.remove(i);
        Ok(message("Container deleted successfully"))
    })
}

/// Every container port of the environment, published or not.
pub(super) fn ports(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let mut items = Vec::new();
    for c in st
        .containers
        .iter()
        .filter(|c| c.environment_id == ctx.env_id() && !state::is_internal(c))
    {
        for p in &c.ports {
            let private = p.get("privatePort").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("type").and_then(Value::as_str).unwrap_or("tcp");
            let public = p.get("publicPort").and_then(Value::as_i64);
            let mut m = json!({
                "id": format!("{}:{private}/{proto}", c.id),
                "containerId": c.id, "containerName": c.name,
                "containerPort": private, "protocol": proto,
                "isPublished": public.is_some(),
            });
            if let Some(h) = public {
                m["hostPort"] = json!(h);
                m["hostIp"] = p.get("ip").cloned().unwrap_or(json!("0.0.0.0"));
            }
            items.push(m);
        }
    }
    drop(st);
    let grand = items.len();
    answer_page(ctx, items, grand, DOCKER, GENERIC_SORT, vec![])
}
