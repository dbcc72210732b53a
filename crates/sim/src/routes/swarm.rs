//! Swarm services: list, get, scale, update (the previous spec kept) and rollback.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{Refusal, change, message, refuse};
use super::lists::{DOCKER, SWARM_SERVICE_SORT, answer_page, search_match, select};
use crate::ctx::Ctx;
use crate::state::{self, State};

/// A swarm service of an environment by ID or name.
fn find_service(st: &State, env: &str, key: &str) -> Option<usize> {
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
    answer_page(ctx, items, grand, DOCKER, SWARM_SERVICE_SORT, vec![])
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

/// Runs `f` on the service of the request under the state lock and answers its `data`; an
/// unknown service is a 404 with the text `missing` gives (Arcane's routes word it differently).
fn change_service(
    ctx: &Ctx,
    missing: fn(&str) -> String,
    f: impl FnOnce(&mut state::SwarmService) -> Result<Value, Refusal>,
) -> Response {
    let key = ctx.param("serviceId");
    change(ctx, |st| match find_service(st, ctx.env_id(), key) {
        Some(i) => f(&mut st.swarm_services[i]),
        None => Err(refuse(404, missing(key))),
    })
}

pub(super) fn scale(ctx: &Ctx) -> Response {
    let replicas = ctx
        .body
        .as_ref()
        .and_then(|b| b.get("replicas"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    change_service(ctx, not_found, |s| {
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

fn update_not_found(key: &str) -> String {
    format!("service {key} not found")
}

/// A swarm service's spec as kept for rollback: image, replicas and env (`null` when it has
/// none, so that a rollback leaves it without).
fn service_spec(s: &state::SwarmService) -> Value {
    json!({"image": s.image, "replicas": s.replicas, "env": s.extra.get("env")})
}

fn bump_version(s: &mut state::SwarmService) {
    let v = s
        .extra
        .get("version")
        .and_then(|v| v.get("index"))
        .and_then(Value::as_i64)
        .unwrap_or(10);
    s.extra.insert("version".into(), json!({"index": v + 1}));
}

/// `PUT …/swarm/services/{serviceId}`: image, env and replicas from the ServiceSpec.
pub(super) fn update(ctx: &Ctx) -> Response {
    let body = ctx.body.clone().unwrap_or(json!({}));
    // Arcane passes Docker's ServiceSpec through: the image sits in the task template.
    let spec = body.get("spec").unwrap_or(&body);
    let image = spec
        .pointer("/TaskTemplate/ContainerSpec/Image")
        .or_else(|| spec.pointer("/taskTemplate/containerSpec/image"))
        .or_else(|| spec.get("image"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let env_vars = spec
        .pointer("/TaskTemplate/ContainerSpec/Env")
        .or_else(|| spec.pointer("/taskTemplate/containerSpec/env"))
        .or_else(|| spec.get("env"))
        .cloned();
    let replicas = spec
        .pointer("/Mode/Replicated/Replicas")
        .or_else(|| spec.get("replicas"))
        .and_then(Value::as_i64);
    change_service(ctx, update_not_found, |s| {
        let previous = service_spec(s);
        s.extra.insert("previousSpec".into(), previous);
        if let Some(img) = image {
            s.image = img;
        }
        if let Some(e) = env_vars {
            s.extra.insert("env".into(), e);
        }
        if let Some(r) = replicas {
            s.replicas = r;
            s.running_replicas = r;
        }
        bump_version(s);
        Ok(json!({"warnings": []}))
    })
}

/// `POST …/swarm/services/{serviceId}/rollback`: back to the spec before the last update.
pub(super) fn rollback(ctx: &Ctx) -> Response {
    change_service(ctx, update_not_found, |s| {
        let Some(prev) = s.extra.remove("previousSpec") else {
            return Err(refuse(
                500,
                "rollback failed: service does not have a previous spec",
            ));
        };
        let current = service_spec(s);
        if let Some(img) = prev.get("image").and_then(Value::as_str) {
            s.image = img.to_string();
        }
        if let Some(r) = prev.get("replicas").and_then(Value::as_i64) {
            s.replicas = r;
            s.running_replicas = r;
        }
        match prev.get("env") {
            Some(env) if !env.is_null() => s.extra.insert("env".into(), env.clone()),
            _ => s.extra.remove("env"),
        };
        // Docker keeps the spec rolled back from as the previous one.
        s.extra.insert("previousSpec".into(), current);
        bump_version(s);
        Ok(message("Service rolled back successfully"))
    })
}
