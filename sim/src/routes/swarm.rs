//! Swarm services: list, get and scale (updates and rollbacks are in `collections`).

use axum::response::Response;
use serde_json::{Value, json};

use super::lists::{Paging, SWARM_SERVICE_SORT, answer_page, search_match, select};
use super::{change, refuse};
use crate::server::Ctx;
use crate::state::{self, State};

/// A swarm service of an environment by ID or name.
pub(crate) fn find_service(st: &State, env: &str, key: &str) -> Option<usize> {
    st.swarm_services
        .iter()
        .position(|s| s.environment_id == env && (s.id == key || s.name == key))
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let (items, grand) = select(
        &st.swarm_services,
        ctx.env_id(),
        |s| search_match(ctx, &[&s.name, &s.image]),
        state::swarm_service_json,
    );
    drop(st);
    answer_page(
        ctx,
        items,
        grand,
        Paging::Docker { zero_is_20: false },
        SWARM_SERVICE_SORT,
        vec![],
    )
}

fn not_found(key: &str) -> String {
    format!("Swarm service not found: Error response from daemon: service {key} not found")
}

pub(super) fn get(ctx: &Ctx) -> Response {
    let key = ctx.param("serviceId");
    let st = ctx.sh.state();
    let Some(i) = find_service(&st, ctx.env_id(), key) else {
        drop(st);
        return ctx.problem(404, &not_found(key));
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

pub(super) fn scale(ctx: &Ctx) -> Response {
    let replicas = ctx
        .body
        .as_ref()
        .and_then(|b| b.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let key = ctx.param("serviceId");
    change(ctx, |st| {
        let Some(i) = find_service(st, ctx.env_id(), key) else {
            return Err(refuse(404, not_found(key)));
        };
        let s = &mut st.swarm_services[i];
        if s.mode == "global" {
            return Err(refuse(
                400,
                "scale can only be used with replicated or replicated-job mode",
            ));
        }
        s.replicas = replicas;
        s.running_replicas = replicas;
        Ok(json!({"warnings": []}))
    })
}
