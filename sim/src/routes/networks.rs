//! Networks: list (with counts), get (with its containers), create, delete and prune.

use axum::response::Response;
use serde_json::{Value, json};

use super::lists::{
    DOCKER, NETWORK_SORT, answer_page, bool_filter, search_match, select, usage_counts,
};
use super::{by_unique_prefix, change, get_one, message, refuse, take_marked};
use crate::server::Ctx;
use crate::state::{self, State};
use crate::synth::hex_id;

fn network_in_use(st: &State, n: &state::Network) -> bool {
    st.containers
        .iter()
        .any(|c| c.environment_id == n.environment_id && c.networks.contains(&n.name))
}

fn is_default_network(n: &state::Network) -> bool {
    matches!(n.name.as_str(), "bridge" | "host" | "none")
}

fn network_counts(st: &State, env: &str) -> Value {
    usage_counts(&st.networks, env, |n| network_in_use(st, n))
}

fn find_network(st: &State, env: &str, key: &str) -> Option<usize> {
    st.networks
        .iter()
        .position(|n| n.environment_id == env && (n.id == key || n.name == key))
        .or_else(|| by_unique_prefix(&st.networks, env, key, |n| &n.id))
}

/// `GET …/networks/counts`.
pub(super) fn counts(ctx: &Ctx) -> Response {
    let counts = network_counts(&ctx.sh.state(), ctx.env_id());
    ctx.ok(counts, vec![])
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let env = ctx.env_id();
    let st = ctx.sh.state();
    let counts = network_counts(&st, env);
    let (items, grand) = select(
        &st.networks,
        env,
        |n| {
            search_match(ctx, &[&n.name, &n.driver, &n.id])
                && bool_filter(ctx, "inUse", network_in_use(&st, n))
        },
        |n| state::network_json(n, network_in_use(&st, n)),
    );
    drop(st);
    answer_page(
        ctx,
        items,
        grand,
        DOCKER,
        NETWORK_SORT,
        vec![("counts", counts)],
    )
}

fn no_such_network(key: &str) -> String {
    format!("Error response from daemon: network {key} not found")
}

pub(super) fn get(ctx: &Ctx) -> Response {
    let key = ctx.param("networkId");
    get_one(
        ctx,
        |st| {
            let n = &st.networks[find_network(st, ctx.env_id(), key)?];
            let mut v = state::network_json(n, network_in_use(st, n));
            let members: Vec<Value> = st.containers.iter().filter(|c| c.environment_id == n.environment_id && c.networks.contains(&n.name)).map(|c| json!({"id": c.id, "name": c.name, "ipv4Address": "172.18.0.2/16", "macAddress": "02:42:ac:12:00:02"})).collect();
            v["containersList"] = Value::Array(members);
            v["containers"] = json!({});
            Some(v)
        },
        404,
        || format!("Network not found: {}", no_such_network(key)),
    )
}

pub(super) fn create(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
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

pub(super) fn delete(ctx: &Ctx) -> Response {
    let key = ctx.param("networkId");
    change(ctx, |st| {
        let Some(i) = find_network(st, ctx.env_id(), key) else {
            return Err(refuse(
                500,
                format!("Failed to remove network: {}", no_such_network(key)),
            ));
        };
        let n = &st.networks[i];
        if is_default_network(n) {
            return Err(refuse(
                500,
                format!(
                    "Failed to remove network: Error response from daemon: {} is a pre-defined network and cannot be removed",
                    n.name
                ),
            ));
        }
        if network_in_use(st, n) {
            return Err(refuse(
                500,
                format!(
                    "Failed to remove network: Error response from daemon: error while removing network: network {} id {} has active endpoints",
                    n.name, n.id
                ),
            ));
        }
        st.networks.remove(i);
        Ok(message("Network removed successfully"))
    })
}

/// Removes the networks of `env` that are neither pre-defined nor used and returns them;
/// `POST …/networks/prune` and the system prune share it.
pub(crate) fn prune_unused(st: &mut State, env: &str) -> Vec<state::Network> {
    let marks: Vec<bool> = st
        .networks
        .iter()
        .map(|n| n.environment_id == env && !is_default_network(n) && !network_in_use(st, n))
        .collect();
    take_marked(&mut st.networks, &marks)
}

pub(super) fn prune(ctx: &Ctx) -> Response {
    change(ctx, |st| {
        let deleted: Vec<String> = prune_unused(st, ctx.env_id())
            .into_iter()
            .map(|n| n.name)
            .collect();
        Ok(json!({"networksDeleted": deleted, "spaceReclaimed": 0}))
    })
}
