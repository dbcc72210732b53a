//! Arcane's database-backed resources (registries, git repositories, GitOps syncs, API keys, users,
//! templates, variables, webhooks, notifications, volume backups…) as stateful collections (stored
//! in [`crate::state::Collections`]), driven by the loaded spec rather than by a list of resources:
//! a path that has both a `POST` and a `GET` operation is a collection; `POST` stores what was sent
//! (plus an ID and timestamps), `GET` lists it, and the item routes below it (`…/{id}`) get, update
//! and delete one item. Answers are fitted to the operation's response schema like every other
//! stateful answer, so an item's secrets (passwords, tokens) are never shown back; an API key's
//! `key` is shown once, in the answer that creates it (as Arcane does).
//!
//! Also here: the two writes that act on a collection's item and on the Docker world at once
//! (a volume backup restore, a GitOps sync that deploys a project), and a backup's delete, which
//! names the backup by its ID alone, outside its volume's collection.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::compose::compose_services;
use super::lists::{DB, GENERIC_SORT, answer_page};
use super::projects::{ensure_project_containers, new_project, start_project};
use crate::ctx::Ctx;
use crate::spec::Spec;
use crate::state::timestamp;
use crate::synth::{hex_id, uuid};

/// Shapes with handlers or semantics of their own elsewhere: never generic collections.
fn docker_backed(shape: &str) -> bool {
    shape == "/environments"
        || shape == "/environments/{}"
        || [
            "/environments/{}/containers",
            "/environments/{}/images",
            "/environments/{}/projects",
            "/environments/{}/networks",
            "/environments/{}/swarm",
            "/environments/{}/ws",
        ]
        .iter()
        .any(|p| shape.starts_with(p))
        || (shape.starts_with("/environments/{}/volumes") && !shape.contains("/backups"))
}

fn has_op(spec: &Spec, method: &str, shape: &str) -> bool {
    spec.ops
        .iter()
        .any(|o| o.method == method && o.shape == shape)
}

/// Whether `shape` (a template with parameter names erased) is a stateful collection of the
/// loaded spec: creatable (`POST`) and listable (`GET`), and not one of the Docker-backed
/// resources that have handlers of their own.
pub fn is_collection_shape(spec: &Spec, shape: &str) -> bool {
    !docker_backed(shape) && has_op(spec, "POST", shape) && pages(spec, shape)
}

/// Whether the `GET` of `shape` answers a page of items (`data` + `pagination`): the mark of
/// Arcane's database-backed lists; other `GET`s of a creatable path are settings or singletons.
fn pages(spec: &Spec, shape: &str) -> bool {
    spec.ops
        .iter()
        .filter(|o| o.method == "GET" && o.shape == shape)
        .any(|o| {
            let (_, schema) = spec.success_response(&o.op);
            schema.is_some_and(|s| {
                let s = spec.resolve(s);
                s.pointer("/properties/pagination").is_some()
                    && s.pointer("/properties/data").is_some()
            })
        })
}

fn is_collection(ctx: &Ctx, shape: &str) -> bool {
    is_collection_shape(&ctx.sh.spec, shape)
}

/// The request path without `/api` and without a trailing slash.
fn sub_path(ctx: &Ctx) -> &str {
    ctx.path
        .strip_prefix("/api")
        .unwrap_or(&ctx.path)
        .trim_end_matches('/')
}

/// Field names whose values are credentials: stored, never shown back.
fn is_secret_field(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["password", "token", "secret", "privatekey", "sshkey"]
        .iter()
        .any(|s| k.contains(s))
        && !k.ends_with("set")
}

fn public_view(item: &Value) -> Value {
    match item {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !is_secret_field(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// An answer without a JSON body when the operation declares none (204), else `data`.
fn answer(ctx: &Ctx, data: Value) -> Response {
    let (status, schema, _) = ctx.response_schema();
    if schema.is_none() {
        return StatusCode::from_u16(status)
            .unwrap_or(StatusCode::NO_CONTENT)
            .into_response();
    }
    ctx.ok(data, vec![])
}

/// Handles `method` on `shape` when it belongs to a collection or to one of the Docker-backed
/// writes of this module; `None` leaves the request to the generic responder.
pub fn handle(ctx: &Ctx, method: &str, shape: &str) -> Option<Response> {
    if let Some(r) = docker_writes(ctx, method, shape) {
        return Some(r);
    }
    if is_collection(ctx, shape) {
        return Some(match method {
            "POST" => create(ctx, sub_path(ctx).to_string()),
            "GET" => list(ctx, sub_path(ctx)),
            _ => return None,
        });
    }
    let parent = shape.strip_suffix("/{}")?;
    if !is_collection(ctx, parent) {
        return None;
    }
    let path = sub_path(ctx);
    let (key, _) = path.rsplit_once('/')?;
    let id = ctx.last_param().to_string();
    Some(match method {
        "GET" => match find(ctx, key, &id) {
            Some(item) => answer(ctx, public_view(&item)),
            None => not_found(ctx, key),
        },
        "PUT" | "PATCH" => update(ctx, key, &id),
        "DELETE" => delete(ctx, key, &id),
        _ => return None,
    })
}

fn not_found(ctx: &Ctx, key: &str) -> Response {
    let what = key
        .rsplit('/')
        .next()
        .unwrap_or("item")
        .trim_end_matches('s')
        .replace('-', " ");
    ctx.problem(404, &format!("{what} not found"))
}

fn find(ctx: &Ctx, key: &str, id: &str) -> Option<Value> {
    ctx.sh
        .state()
        .collections
        .items
        .get(key)?
        .iter()
        .find(|i| i.get("id").and_then(Value::as_str) == Some(id))
        .cloned()
}

/// A request body's fields without its `null`s. Arcane's request types take optional fields as
/// Go pointers, where `null` means "not given": an update leaves such a field as it was
/// (docs/arcane-wire.md#checked-by-schemathesis). A create keeps them: the answer's fitting
/// turns a null into the field's value (`[]` for a list, a default otherwise).
fn given_fields(body: Option<&Value>) -> Map<String, Value> {
    match body {
        Some(Value::Object(o)) => o
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => Map::new(),
    }
}

fn create(ctx: &Ctx, key: String) -> Response {
    let mut item = match &ctx.body {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    let mut st = ctx.sh.state();
    st.collections.created += 1;
    let n = st.collections.created;
    let id = uuid(&format!("{key}#{n}"));
    let now = timestamp(n);
    item.insert("id".into(), json!(id));
    // An environment's resources name their environment.
    if let Some(env) = key
        .strip_prefix("/environments/")
        .and_then(|r| r.split('/').next())
    {
        item.entry("environmentId").or_insert(json!(env));
    }
    item.entry("createdAt").or_insert(json!(now));
    item.insert("updatedAt".into(), json!(now));
    let mut shown = public_view(&Value::Object(item.clone()));
    if key.ends_with("api-keys") {
        // The key itself exists once, in this answer; the stored item keeps its prefix.
        let secret = format!("arc_{}", &hex_id(&format!("api-key:{id}"))[..40]);
        let prefix = secret[..12].to_string();
        item.insert("keyPrefix".into(), json!(prefix));
        shown["keyPrefix"] = json!(prefix);
        shown["key"] = json!(secret);
    }
    st.collections
        .items
        .entry(key)
        .or_default()
        .push(Value::Object(item));
    drop(st);
    ctx.ok(shown, vec![])
}

fn list(ctx: &Ctx, key: &str) -> Response {
    let items: Vec<Value> = ctx
        .sh
        .state()
        .collections
        .items
        .get(key)
        .map(|v| v.iter().map(public_view).collect())
        .unwrap_or_default();
    let search = ctx.q("search").map(str::to_lowercase);
    let grand = items.len();
    let items: Vec<Value> = items
        .into_iter()
        .filter(|i| {
            search
                .as_deref()
                .is_none_or(|s| s.is_empty() || i.to_string().to_lowercase().contains(s))
        })
        .collect();
    answer_page(ctx, items, grand, DB, GENERIC_SORT, vec![])
}

fn update(ctx: &Ctx, key: &str, id: &str) -> Response {
    let mut st = ctx.sh.state();
    let n = st.collections.created;
    let Some(item) = st
        .collections
        .items
        .get_mut(key)
        .and_then(|v| v.iter_mut().find(|i| i["id"] == id))
    else {
        drop(st);
        return not_found(ctx, key);
    };
    if let (Value::Object(o), Some(Value::Object(_))) = (&mut *item, &ctx.body) {
        for (k, v) in given_fields(ctx.body.as_ref()) {
            if k != "id" {
                o.insert(k, v);
            }
        }
        o.insert("updatedAt".into(), json!(timestamp(n + 1)));
    }
    let shown = public_view(item);
    drop(st);
    answer(ctx, shown)
}

fn delete(ctx: &Ctx, key: &str, id: &str) -> Response {
    let mut st = ctx.sh.state();
    let removed = st.collections.items.get_mut(key).is_some_and(|v| {
        let before = v.len();
        v.retain(|i| i["id"] != id);
        v.len() < before
    });
    drop(st);
    if !removed {
        return not_found(ctx, key);
    }
    answer(ctx, json!({"message": "Deleted successfully"}))
}

// ---------------------------------------------------------------------------------------
// Writes that reach from a collection item into the Docker world.

fn docker_writes(ctx: &Ctx, method: &str, shape: &str) -> Option<Response> {
    Some(match (method, shape) {
        ("POST", "/environments/{}/volumes/{}/backups/{}/restore") => restore_backup(ctx),
        ("POST", "/environments/{}/gitops-syncs/{}/sync") => gitops_sync(ctx),
        ("DELETE", "/environments/{}/volumes/backups/{}") => delete_backup(ctx),
        _ => return None,
    })
}

/// `DELETE …/volumes/backups/{backupId}`: the backup is removed from the collection of the
/// volume it was made from (Arcane keeps backups by ID; a later list no longer shows it).
fn delete_backup(ctx: &Ctx) -> Response {
    let prefix = format!("/environments/{}/volumes/", ctx.env_id());
    let id = ctx.param("backupId");
    let key = ctx
        .sh
        .state()
        .collections
        .items
        .iter()
        .find(|(key, items)| {
            key.starts_with(&prefix)
                && key.ends_with("/backups")
                && items.iter().any(|b| b["id"] == id)
        })
        .map(|(key, _)| key.clone());
    match key {
        Some(key) => delete(ctx, &key, id),
        None => not_found(ctx, &format!("{prefix}backups")),
    }
}

fn restore_backup(ctx: &Ctx) -> Response {
    let key = format!(
        "/environments/{}/volumes/{}/backups",
        ctx.env_id(),
        ctx.param("volumeName")
    );
    let Some(backup) = find(ctx, &key, ctx.param("backupId")) else {
        return not_found(ctx, &key);
    };
    let mut st = ctx.sh.state();
    st.collections.created += 1;
    let now = timestamp(st.collections.created);
    if let Some(v) = st
        .volumes
        .iter_mut()
        .find(|v| v.environment_id == ctx.env_id() && v.name == ctx.param("volumeName"))
    {
        v.labels
            .insert("arcane.sim/restored-from".into(), backup["id"].clone());
        v.extra.insert("restoredAt".into(), json!(now));
    }
    drop(st);
    ctx.ok(json!({"message": "Backup restored successfully"}), vec![])
}

/// Syncing a GitOps sync deploys its compose file as a project (created on the first sync).
fn gitops_sync(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let key = format!("/environments/{env}/gitops-syncs");
    let Some(sync) = find(ctx, &key, ctx.param("syncId")) else {
        return not_found(ctx, &key);
    };
    let project = sync
        .get("projectName")
        .or_else(|| sync.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("gitops")
        .to_string();
    let compose_path = sync
        .get("composePath")
        .and_then(Value::as_str)
        .unwrap_or("compose.yaml")
        .to_string();
    let mut st = ctx.sh.state();
    st.collections.created += 1;
    let now = timestamp(st.collections.created);
    if !st
        .projects
        .iter()
        .any(|p| p.environment_id == env && p.name == project)
    {
        let compose = format!(
            "# {compose_path} from the repository\nservices:\n  app:\n    image: nginx:1.27-alpine\n"
        );
        let services = compose_services(&project, &compose).unwrap_or_default();
        let p = new_project(
            &env,
            &project,
            compose,
            String::new(),
            services,
            now.clone(),
        );
        st.projects.push(p);
    }
    ensure_project_containers(&mut st, &env, &project);
    start_project(&mut st, &env, &project);
    let sync_id = ctx.param("syncId").to_string();
    if let Some(item) = st
        .collections
        .items
        .get_mut(&key)
        .and_then(|v| v.iter_mut().find(|i| i["id"] == sync_id.as_str()))
    {
        item["lastSyncAt"] = json!(now);
        item["lastSyncStatus"] = json!("success");
        item["projectName"] = json!(project);
    }
    drop(st);
    ctx.ok(
        json!({"success": true, "message": format!("Synced project {project}")}),
        vec![],
    )
}
