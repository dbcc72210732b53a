//! System answers derived from the state: Docker info, the dashboard and the system prune
//! (which reuses the images', volumes' and networks' prunes).

use axum::response::Response;
use serde_json::{Map, Value, json};

use super::images::image_in_use;
use super::{images, networks, volumes};
use crate::ctx::Ctx;
use crate::state::{self, BUILD_CACHE_BYTES, State};

/// A synthesized answer with the parts the state knows replaced by the state's values.
pub(super) fn derived(ctx: &Ctx, patch: fn(&State, &str, &mut Value)) -> Response {
    let spec = &ctx.sh.spec;
    let (status, schema, name) = ctx.response_schema();
    let (Some(schema), Some(op)) = (schema, ctx.op) else {
        return super::generic::generic(ctx);
    };
    let mut v = crate::synth::synth(spec, schema, "", &spec.ops[op].template);
    patch(&ctx.sh.state(), ctx.env_id(), &mut v);
    let mut body = Map::new();
    if let Some(n) = &name {
        body.insert("$schema".into(), json!(ctx.schema_url(n)));
    }
    if let Value::Object(o) = v {
        body.extend(o);
    }
    let v = crate::synth::conform(spec, schema, Value::Object(body), &ctx.path);
    ctx.finish_json(status, v, name.as_deref())
}

fn visible_containers<'a>(st: &'a State, env: &str) -> Vec<&'a state::Container> {
    st.containers
        .iter()
        .filter(|c| c.environment_id == env && !state::is_internal(c))
        .collect()
}

pub(super) fn docker_info(st: &State, env: &str, v: &mut Value) {
    let cs: Vec<&state::Container> = st
        .containers
        .iter()
        .filter(|c| c.environment_id == env)
        .collect();
    let count = |s: &str| cs.iter().filter(|c| c.state == s).count();
    let running = count("running");
    let paused = count("paused");
    v["Containers"] = json!(cs.len());
    v["ContainersRunning"] = json!(running);
    v["ContainersPaused"] = json!(paused);
    v["ContainersStopped"] = json!(cs.len() - running - paused);
    v["Images"] = json!(st.images.iter().filter(|i| i.environment_id == env).count());
    if let Some(e) = st.environments.iter().find(|e| e.id == env) {
        v["Name"] = json!(e.name);
    }
}

pub(super) fn dashboard(st: &State, env: &str, v: &mut Value) {
    let Some(d) = v.get_mut("data").filter(|d| d.is_object()) else {
        return;
    };
    let cs = visible_containers(st, env);
    let running = cs.iter().filter(|c| c.state == "running").count();
    d["containers"] = json!({
        "data": cs.iter().map(|c| state::container_summary(c)).collect::<Vec<_>>(),
        "counts": {"runningContainers": running, "stoppedContainers": cs.len() - running,
                   "totalContainers": cs.len()},
        "pagination": page_of(cs.len()),
    });
    let images: Vec<&state::Image> = st
        .images
        .iter()
        .filter(|i| i.environment_id == env)
        .collect();
    let in_use = images.iter().filter(|i| image_in_use(st, i)).count();
    d["images"] = json!({
        "data": images.iter().map(|i| state::image_summary(i, image_in_use(st, i))).collect::<Vec<_>>(),
        "pagination": page_of(images.len()),
    });
    d["imageUsageCounts"] = json!({"imagesInuse": in_use, "imagesUnused": images.len() - in_use,
        "totalImages": images.len(), "totalImageSize": images.iter().map(|i| i.size).sum::<i64>()});
    let vols: Vec<&state::Volume> = st
        .volumes
        .iter()
        .filter(|v| v.environment_id == env)
        .collect();
    let vol_in_use = vols
        .iter()
        .filter(|v| {
            st.containers.iter().any(|c| {
                c.environment_id == v.environment_id
                    && c.mounts
                        .iter()
                        .any(|m| m.get("name").and_then(Value::as_str) == Some(v.name.as_str()))
            })
        })
        .count();
    d["volumeUsageCounts"] =
        json!({"inuse": vol_in_use, "unused": vols.len() - vol_in_use, "total": vols.len()});
}

fn page_of(n: usize) -> Value {
    json!({"totalPages": 1, "totalItems": n, "currentPage": 1, "itemsPerPage": n.max(1),
           "grandTotalItems": n})
}

/// `docker system prune` by parts: each part's `mode` (`none` or absent skips it) says what goes.
pub(super) fn prune(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let body = ctx.body.clone().unwrap_or(json!({}));
    let mode = |part: &str| {
        body.pointer(&format!("/{part}/mode"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty() && *m != "none")
            .map(str::to_string)
    };
    let mut st = ctx.sh.state();
    let mut out = json!({"containersPruned": [], "imagesDeleted": [], "volumesDeleted": [],
                         "networksDeleted": [], "containerSpaceReclaimed": 0,
                         "imageSpaceReclaimed": 0, "volumeSpaceReclaimed": 0,
                         "buildCacheSpaceReclaimed": 0, "errors": [], "success": true});
    if mode("containers").is_some() {
        let mut gone = Vec::new();
        st.containers.retain(|c| {
            let prune = c.environment_id == env
                && !matches!(c.state.as_str(), "running" | "paused" | "restarting")
                && !state::is_internal(c);
            if prune {
                gone.push(c.id.clone());
            }
            !prune
        });
        out["containersPruned"] = json!(gone);
    }
    // Each part is judged after the parts before it, as Docker prunes them in this order.
    if let Some(m) = mode("images") {
        let gone = images::prune_unused(&mut st, &env, m != "all");
        out["imagesDeleted"] = json!(gone.iter().map(|i| &i.id).collect::<Vec<_>>());
        out["imageSpaceReclaimed"] = json!(gone.iter().map(|i| i.size).sum::<i64>());
    }
    // Arcane 2.8.0 prunes volumes for any mode but `none`, named ones only with `all`.
    let volumes_mode = body.pointer("/volumes/mode").and_then(Value::as_str);
    if let Some(m) = volumes_mode.filter(|m| *m != "none") {
        let gone = volumes::prune_unused(&mut st, &env, m == "all");
        out["volumesDeleted"] = json!(gone.iter().map(|v| &v.name).collect::<Vec<_>>());
        out["volumeSpaceReclaimed"] = json!(gone.iter().map(|v| v.size).sum::<i64>());
    }
    if mode("networks").is_some() {
        let gone = networks::prune_unused(&mut st, &env);
        out["networksDeleted"] = json!(gone.iter().map(|n| &n.id).collect::<Vec<_>>());
    }
    if mode("buildCache").is_some() && !st.collections.build_cache_pruned.contains(&env) {
        st.collections.build_cache_pruned.push(env.clone());
        out["buildCacheSpaceReclaimed"] = json!(BUILD_CACHE_BYTES);
    }
    drop(st);
    let total: i64 = [
        "containerSpaceReclaimed",
        "imageSpaceReclaimed",
        "volumeSpaceReclaimed",
        "buildCacheSpaceReclaimed",
    ]
    .iter()
    .filter_map(|k| out[k].as_i64())
    .sum();
    out["spaceReclaimed"] = json!(total);
    ctx.ok(out, vec![])
}
