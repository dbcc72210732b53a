//! Volumes: list (with counts), get, create, delete and prune.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{change, get_one, message, refuse, take_marked};
use super::lists::{
    DOCKER_ZERO_IS_20, VOLUME_SORT, answer_page, bool_filter, search_match, select, usage_counts,
};
use crate::ctx::Ctx;
use crate::state::{self, State};

/// The IDs of the containers that mount `v`.
pub(crate) fn volume_users(st: &State, v: &state::Volume) -> Vec<String> {
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
    usage_counts(&st.volumes, env, |v| !volume_users(st, v).is_empty())
}

/// `GET …/volumes/counts`.
pub(super) fn counts(ctx: &Ctx) -> Response {
    let counts = volume_counts(&ctx.sh.state(), ctx.env_id());
    ctx.ok(counts, vec![])
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let env = ctx.env_id();
    let st = ctx.sh.state();
    let counts = volume_counts(&st, env);
    let (items, grand) = select(
        &st.volumes,
        env,
        |v| {
            search_match(ctx, &[&v.name, &v.driver])
                && bool_filter(ctx, "inUse", !volume_users(&st, v).is_empty())
        },
        |v| state::volume_json(v, &volume_users(&st, v)),
    );
    drop(st);
    answer_page(
        ctx,
        items,
        grand,
        DOCKER_ZERO_IS_20,
        VOLUME_SORT,
        vec![("counts", counts)],
    )
}

fn find_volume(st: &State, env: &str, name: &str) -> Option<usize> {
    st.volumes
        .iter()
        .position(|v| v.environment_id == env && v.name == name)
}

fn no_such_volume(name: &str) -> String {
    format!("Error response from daemon: get {name}: no such volume")
}

pub(super) fn get(ctx: &Ctx) -> Response {
    let name = ctx.param("volumeName");
    get_one(
        ctx,
        |st| {
            let v = &st.volumes[find_volume(st, ctx.env_id(), name)?];
            Some(state::volume_json(v, &volume_users(st, v)))
        },
        404,
        || format!("Volume not found: {}", no_such_volume(name)),
    )
}

pub(super) fn create(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let name = ctx.body_str("name").unwrap_or("").to_string();
    let mut st = ctx.sh.state();
    let i = match find_volume(&st, &env, &name) {
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

pub(super) fn delete(ctx: &Ctx) -> Response {
    let force = ctx.q("force") == Some("true");
    let name = ctx.param("volumeName");
    change(ctx, |st| {
        let Some(i) = find_volume(st, ctx.env_id(), name) else {
            return Err(refuse(
                500,
                format!("Failed to delete volume: {}", no_such_volume(name)),
            ));
        };
        let users = volume_users(st, &st.volumes[i]);
        if !users.is_empty() && !force {
            return Err(refuse(
                500,
                format!(
                    "Failed to delete volume: Error response from daemon: remove {name}: volume is in use - [{}]",
                    users.join(", ")
                ),
            ));
        }
        st.volumes.remove(i);
        Ok(message("Volume removed successfully"))
    })
}

/// Removes the volumes of `env` no container mounts — with `all`, named ones too; without it
/// only anonymous ones, as Docker's prune (API 1.42+) does (docs/arcane-wire.md#volume-prune) —
/// and returns them;
/// `POST …/volumes/prune` (never `all` in Arcane 2.8.0) and the system prune share it.
pub(crate) fn prune_unused(st: &mut State, env: &str, all: bool) -> Vec<state::Volume> {
    let marks: Vec<bool> = st
        .volumes
        .iter()
        .map(|v| {
            v.environment_id == env
                && (all || state::is_anonymous(v))
                && volume_users(st, v).is_empty()
        })
        .collect();
    take_marked(&mut st.volumes, &marks)
}

pub(super) fn prune(ctx: &Ctx) -> Response {
    change(ctx, |st| {
        let gone = prune_unused(st, ctx.env_id(), false);
        let space: i64 = gone.iter().map(|v| v.size).sum();
        let deleted: Vec<&str> = gone.iter().map(|v| v.name.as_str()).collect();
        Ok(json!({"volumesDeleted": deleted, "spaceReclaimed": space}))
    })
}

/// `GET …/volumes/sizes`: Docker's disk usage of each volume of the environment, with how
/// many containers use it (the same volumes `volumes` lists).
pub(super) fn sizes(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let items: Vec<Value> = st
        .volumes
        .iter()
        .filter(|v| v.environment_id == ctx.env_id())
        .map(|v| json!({"name": v.name, "size": v.size, "refCount": volume_users(&st, v).len()}))
        .collect();
    drop(st);
    ctx.ok(Value::Array(items), vec![])
}
