//! Networks: list (with counts), get (with its containers), create, delete and prune.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{by_unique_prefix, change, get_one, message, refuse, take_marked};
use super::lists::{
    DOCKER, NETWORK_SORT, answer_page, bool_filter, search_match, select, usage_counts,
};
use crate::ctx::Ctx;
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

/// What Arcane 2.8 sends about a network's members, as Docker reports them: `containers` keyed
/// by container ID (Docker's field names) and the same endpoints again as `containersList`,
/// each with its own address, the MAC Docker derives from it and an endpoint ID; the network's
/// IPAM configuration (a /16 per network from Docker's default pool, `.1` the gateway).
fn endpoints(v: &mut Value, n: &state::Network, members: &[&state::Container]) {
    let subnet = 18
        + n.id
            .get(..2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0)
            % 14;
    let mut list = Vec::new();
    let mut map = serde_json::Map::new();
    for (i, c) in members.iter().enumerate() {
        let host = 2 + i as u8;
        let ip = format!("172.{subnet}.0.{host}/16");
        let mac = format!("02:42:ac:{subnet:02x}:00:{host:02x}");
        let endpoint = hex_id(&format!("endpoint {} {}", n.id, c.id));
        list.push(json!({"id": c.id, "name": c.name, "endpointId": endpoint, "ipv4Address": ip, "ipv6Address": "", "macAddress": mac}));
        map.insert(
            c.id.clone(),
            json!({"Name": c.name, "EndpointID": endpoint, "MacAddress": mac, "IPv4Address": ip, "IPv6Address": ""}),
        );
    }
    v["containersList"] = Value::Array(list);
    v["containers"] = Value::Object(map);
    if v.get("ipam")
        .is_none_or(|x| x.as_object().is_none_or(|o| o.is_empty()))
    {
        v["ipam"] = json!({"driver": "default", "config": [{"subnet": format!("172.{subnet}.0.0/16"), "gateway": format!("172.{subnet}.0.1")}]});
    }
    if v.get("configFrom").is_none() {
        v["configFrom"] = json!({"Network": ""});
    }
}

pub(super) fn get(ctx: &Ctx) -> Response {
    let key = ctx.param("networkId");
    get_one(
        ctx,
        |st| {
            let n = &st.networks[find_network(st, ctx.env_id(), key)?];
            let mut v = state::network_json(n, network_in_use(st, n));
            let members: Vec<&state::Container> = st
                .containers
                .iter()
                .filter(|c| c.environment_id == n.environment_id && c.networks.contains(&n.name))
                .collect();
            endpoints(&mut v, n, &members);
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
