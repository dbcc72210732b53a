//! Arcane's database-backed resources (registries, git repositories, GitOps syncs, API keys,
//! users, templates, variables, webhooks, notifications, volume backups…) as stateful
//! collections, driven by the loaded spec rather than by a list of resources: a path that has
//! both a `POST` and a `GET` operation is a collection; `POST` stores what was sent (plus an
//! ID and timestamps), `GET` lists it, and the item routes below it (`…/{id}`) get, update and
//! delete one item. Answers are fitted to the operation's response schema like every other
//! stateful answer, so an item's secrets (passwords, tokens) are never shown back; an API
//! key's `key` is shown once, in the answer that creates it (as Arcane does).
//!
//! Also here: the Docker-backed writes the operator jobs need that have no handler of their
//! own (a project created from compose text, swarm service updates and rollbacks, volume
//! backup restores, GitOps syncs that deploy a project).

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::routes::images::{self, add_image, image_in_use};
use crate::routes::lists::{DB, DOCKER, Sorting, answer_page};
use crate::routes::projects::start_project;
use crate::routes::{networks, str_array, volumes};
use crate::server::Ctx;
use crate::spec::Spec;
use crate::state::{self, State};
use crate::synth::hex_id;

/// The stored items of every collection, keyed by the collection's concrete path (without
/// `/api`, e.g. `/container-registries` or `/environments/0/gitops-syncs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Collections {
    pub items: BTreeMap<String, Vec<Value>>,
    /// How many items were ever created: the source of IDs and timestamps, so that a run
    /// gives the same answers every time.
    pub created: u64,
    /// Environments whose build cache was pruned (every environment starts with some).
    pub build_cache_pruned: Vec<String>,
}

/// The build cache every environment has until it is pruned.
pub const BUILD_CACHE_BYTES: i64 = 412_000_000;

impl Collections {
    pub fn is_empty(&self) -> bool {
        self.items.values().all(Vec::is_empty)
            && self.created == 0
            && self.build_cache_pruned.is_empty()
    }
}

const DB_SORT: Sorting = Sorting {
    keys: &[],
    docker_order_changes: false,
};

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

/// A UUID-shaped ID from a seed.
fn uuid(seed: &str) -> String {
    let h = hex_id(seed);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The simulator's clock for stored objects: a fixed start plus one second per creation, so
/// answers are the same on every run.
fn timestamp(n: u64) -> String {
    state::unix_to_rfc3339(1_767_225_600 + n as i64)
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
    answer_page(ctx, items, grand, DB, DB_SORT, vec![])
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
    if let (Value::Object(o), Some(Value::Object(b))) = (&mut *item, &ctx.body) {
        for (k, v) in b {
            if k != "id" {
                o.insert(k.clone(), v.clone());
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
// Docker-backed writes.

fn docker_writes(ctx: &Ctx, method: &str, shape: &str) -> Option<Response> {
    Some(match (method, shape) {
        ("POST", "/environments/{}/projects") => create_project(ctx),
        ("POST", "/environments/{}/volumes/{}/backups/{}/restore") => restore_backup(ctx),
        ("POST", "/environments/{}/gitops-syncs/{}/sync") => gitops_sync(ctx),
        ("POST", "/environments/{}/system/prune") => system_prune(ctx),
        ("GET", "/environments/{}/images/counts") => image_counts(ctx),
        ("GET", "/environments/{}/projects/counts") => project_counts(ctx),
        ("GET", "/environments/{}/ports") => ports(ctx),
        ("GET", "/environments/{}/system/docker/info") => derived(ctx, docker_info),
        ("GET", "/environments/{}/dashboard") => derived(ctx, dashboard),
        _ => return None,
    })
}

/// One part of a `multipart/form-data` body: its name, file name (if any) and text.
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub value: String,
}

/// The parts of a `multipart/form-data` body (as text). The boundary is the body's first
/// line, which is all a well-formed body needs.
pub fn multipart_parts(body: &[u8]) -> Vec<Part> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(body);
    let Some(first) = text.lines().next() else {
        return out;
    };
    let delim = first.trim_end();
    if !delim.starts_with("--") {
        return out;
    }
    for part in text.split(delim).skip(1) {
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let disposition = head.split("\r\n").next().unwrap_or("");
        let attr = |key: &str| {
            disposition
                .split(';')
                .map(str::trim)
                .find_map(|p| p.strip_prefix(key))
                .map(|v| v.trim_matches('"').to_string())
        };
        let Some(name) = attr("name=") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        out.push(Part {
            name,
            file_name: attr("filename="),
            value: value.to_string(),
        });
    }
    out
}

/// A compose file's services as stored in a project (compose-go's JSON shape, the fields
/// the simulator uses).
pub fn compose_services(project: &str, compose: &str) -> Result<Vec<Value>, String> {
    let doc: Value = yaml_serde::from_str(compose).map_err(|e| format!("invalid compose: {e}"))?;
    let Some(services) = doc.get("services").and_then(Value::as_object) else {
        return Err("invalid compose: no services".into());
    };
    let mut out = Vec::new();
    for (name, s) in services {
        let image = s
            .get("image")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{project}-{name}"));
        let mut svc = json!({"name": name, "image": image});
        let env: Vec<String> = match s.get("environment") {
            Some(a @ Value::Array(_)) => str_array(Some(a)),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    Value::Null => k.clone(),
                    v => format!("{k}={v}"),
                })
                .collect(),
            _ => Vec::new(),
        };
        if !env.is_empty() {
            svc["environment"] = json!(env);
        }
        if let Some(p) = s.get("ports") {
            svc["ports"] = p.clone();
        }
        if let Some(b) = s.get("build") {
            svc["build"] = b.clone();
        }
        out.push(svc);
    }
    Ok(out)
}

fn create_project(ctx: &Ctx) -> Response {
    let env = ctx.env_id().to_string();
    let parts = multipart_parts(&ctx.raw_body);
    let part = |name: &str| parts.iter().find(|p| p.name == name);
    let spec: Value = match part("project").map(|p| serde_json::from_str(&p.value)) {
        Some(Ok(v)) => v,
        Some(Err(e)) => return ctx.problem(400, &format!("invalid project JSON: {e}")),
        None => match ctx.body.as_ref().and_then(|b| b.get("project")) {
            Some(Value::String(p)) => match serde_json::from_str(p) {
                Ok(v) => v,
                Err(e) => return ctx.problem(400, &format!("invalid project JSON: {e}")),
            },
            Some(v @ Value::Object(_)) => v.clone(),
            // Arcane 1.x takes the project's fields as a JSON body.
            _ => match &ctx.body {
                Some(b) if b.get("name").is_some() => b.clone(),
                _ => return ctx.problem(400, "project is required"),
            },
        },
    };
    let name = spec
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    if name.is_empty() {
        return ctx.problem(400, "project name is required");
    }
    // The compose text is in the project part, or a compose file among the workspace files.
    let compose = spec
        .get("composeContent")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
        .or_else(|| {
            parts
                .iter()
                .find(|p| {
                    p.name == "files"
                        && p.file_name.as_deref().is_some_and(|f| {
                            f.ends_with("compose.yaml") || f.ends_with("compose.yml")
                        })
                })
                .map(|p| p.value.clone())
        })
        .unwrap_or_default();
    let env_content = spec
        .get("envContent")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let services = if compose.trim().is_empty() {
        Vec::new()
    } else {
        match compose_services(name, &compose) {
            Ok(s) => s,
            Err(e) => return ctx.problem(400, &format!("Failed to create project: {e}")),
        }
    };
    let mut st = ctx.sh.state();
    if st
        .projects
        .iter()
        .any(|p| p.environment_id == env && p.name == name)
    {
        drop(st);
        return ctx.problem(
            400,
            &format!("Failed to create project: project {name} already exists"),
        );
    }
    st.collections.created += 1;
    let now = timestamp(st.collections.created);
    let p = state::Project {
        id: uuid(&format!("project:{env}:{name}")),
        name: name.to_string(),
        environment_id: env.clone(),
        status: "stopped".into(),
        path: format!("/app/data/projects/{name}"),
        compose_content: compose,
        env_content,
        services,
        created_at: now.clone(),
        updated_at: now,
        has_update: false,
        extra: Map::new(),
    };
    let v = state::project_details(&p, &[]);
    st.projects.push(p);
    drop(st);
    ctx.ok(v, vec![])
}

/// Creates the containers of a project's services that do not exist yet (what `compose up`
/// does before starting them), labelled with the compose project and service.
pub fn ensure_project_containers(st: &mut State, env: &str, project: &str) {
    let Some(p) = st
        .projects
        .iter()
        .find(|p| p.environment_id == env && p.name == project)
        .cloned()
    else {
        return;
    };
    // Only a project never started gets containers: the seeded projects keep exactly theirs.
    if st
        .containers
        .iter()
        .any(|c| c.environment_id == env && state::container_project(c) == Some(project))
    {
        return;
    }
    for s in &p.services {
        let svc = s.get("name").and_then(Value::as_str).unwrap_or("app");
        let exists = st.containers.iter().any(|c| {
            c.environment_id == env
                && state::container_project(c) == Some(project)
                && c.labels
                    .get("com.docker.compose.service")
                    .and_then(Value::as_str)
                    == Some(svc)
        });
        if exists {
            continue;
        }
        let image = s
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or("alpine:3.20")
            .to_string();
        let name = format!("{project}-{svc}-1");
        let mut labels = Map::new();
        labels.insert("com.docker.compose.project".into(), json!(project));
        labels.insert("com.docker.compose.service".into(), json!(svc));
        let ports: Vec<Value> = s
            .get("ports")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        let text = match p {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            _ => return None,
                        };
                        let (public, private) = match text.rsplit_once(':') {
                            Some((a, b)) => (a.rsplit(':').next()?.parse::<u16>().ok(), b),
                            None => (None, text.as_str()),
                        };
                        let private: u16 = private.split('/').next()?.parse().ok()?;
                        Some(match public {
                            Some(p) => json!({"ip": "0.0.0.0", "privatePort": private, "publicPort": p, "type": "tcp"}),
                            None => json!({"ip": "invalid IP", "privatePort": private, "type": "tcp"}),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let env_list = str_array(s.get("environment"));
        add_image(st, env, &image);
        st.containers.push(state::Container {
            id: state::demo_container_id(&format!("{env}/{name}")),
            name: name.clone(),
            environment_id: env.to_string(),
            image: image.clone(),
            image_id: state::demo_image_id(&image),
            state: "created".into(),
            status: "Created".into(),
            created: 1_767_225_600,
            command: String::new(),
            labels,
            env: env_list,
            ports,
            networks: vec![format!("{project}_default")],
            mounts: Vec::new(),
            logs: vec![format!("{svc} started ({image})")],
            stderr: Vec::new(),
            extra: Map::new(),
        });
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
        st.projects.push(state::Project {
            id: uuid(&format!("project:{env}:{project}")),
            name: project.clone(),
            environment_id: env.clone(),
            status: "stopped".into(),
            path: format!("/app/data/projects/{project}"),
            compose_content: compose,
            env_content: String::new(),
            services,
            created_at: now.clone(),
            updated_at: now.clone(),
            has_update: false,
            extra: Map::new(),
        });
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

// ---------------------------------------------------------------------------------------
// Answers derived from the state.

fn image_counts(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let images: Vec<&state::Image> = st
        .images
        .iter()
        .filter(|i| i.environment_id == ctx.env_id())
        .collect();
    let in_use = images.iter().filter(|i| image_in_use(&st, i)).count();
    let size: i64 = images.iter().map(|i| i.size).sum();
    let v = json!({"imagesInuse": in_use, "imagesUnused": images.len() - in_use,
                   "totalImages": images.len(), "totalImageSize": size});
    drop(st);
    ctx.ok(v, vec![])
}

fn project_counts(ctx: &Ctx) -> Response {
    let st = ctx.sh.state();
    let ps: Vec<&state::Project> = st
        .projects
        .iter()
        .filter(|p| p.environment_id == ctx.env_id())
        .collect();
    let running = ps.iter().filter(|p| p.status != "stopped").count();
    let v = json!({"runningProjects": running, "stoppedProjects": ps.len() - running,
                   "totalProjects": ps.len(), "archivedProjects": 0});
    drop(st);
    ctx.ok(v, vec![])
}

/// Every container port of the environment, published or not.
fn ports(ctx: &Ctx) -> Response {
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
    answer_page(ctx, items, grand, DOCKER, DB_SORT, vec![])
}

/// A synthesized answer with the parts the state knows replaced by the state's values.
fn derived(ctx: &Ctx, patch: fn(&State, &str, &mut Value)) -> Response {
    let spec = &ctx.sh.spec;
    let (status, schema, name) = ctx.response_schema();
    let (Some(schema), Some(op)) = (schema, ctx.op) else {
        return crate::routes::generic(ctx);
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

fn docker_info(st: &State, env: &str, v: &mut Value) {
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

fn dashboard(st: &State, env: &str, v: &mut Value) {
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
fn system_prune(ctx: &Ctx) -> Response {
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
    if mode("volumes").is_some() {
        let gone = volumes::prune_unused(&mut st, &env);
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
