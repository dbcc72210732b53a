//! MCP resources (docs/surfaces.md#resources): the catalog (`arcane://tools`), Docker state as redacted views, and
//! working guides. The same on every surface, except that names and call lines follow it.
//!
//! | URI | what |
//! |---|---|
//! | `arcane://tools`, `arcane://tools/{id}` | the served catalog; a withdrawn ID gives its reason |
//! | `arcane://environments`, `arcane://containers`, `arcane://projects`, `arcane://images`, `arcane://dashboard`, `arcane://activities` | lists and views of the default environment |
//! | `arcane://environment/{environmentId}`, `…/dashboard`, `…/activities` | one environment, its dashboard and activities |
//! | `arcane://environment/{environmentId}/{container,project,image}/{id}` | one object |
//! | `arcane://{container,project,image}/{id}` | the same, in the default environment |
//! | `arcane://guides/{slug}` | task guides naming actions as the surface spells them |
//!
//! Which of them are live (subscribable) is [`live`]'s. Docker state is read through the executor (the same validation, policy and errors as a tool
//! call), then redacted ([`arcane_redact::redact_for`]) with a note of what was masked.

pub mod guides;
pub mod live;
pub mod mcp_apps;
pub mod tools;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, Resource, ResourceContents,
    ResourceTemplate,
};
use serde_json::{Map, Value, json};

use crate::load::snapshot::Snapshot;
use crate::surface::call_name;
use arcane_catalog::Action;
use arcane_engine::Executor;
use arcane_markdown::quoted_name;

/// Resources per `resources/list` page.
pub const PAGE_SIZE: usize = 100;

const JSON: &str = "application/json";
const MARKDOWN: &str = "text/markdown";

/// Docker-state list resources: URI, action that reads it, title.
const STATE_LISTS: &[(&str, &str, &str)] = &[
    ("arcane://environments", "environment.list", "Environments"),
    (
        "arcane://containers",
        "container.list",
        "Containers (default environment)",
    ),
    (
        "arcane://projects",
        "project.list",
        "Compose projects (default environment)",
    ),
    (
        "arcane://images",
        "image.list",
        "Images (default environment)",
    ),
    (
        "arcane://dashboard",
        "environment.dashboard",
        "Dashboard (default environment)",
    ),
    (
        "arcane://activities",
        "activity.list",
        "Activities (default environment)",
    ),
];

/// Views of one environment besides its objects: URI segment, action.
const ENV_VIEWS: &[(&str, &str)] = &[
    ("dashboard", "environment.dashboard"),
    ("activities", "activity.list"),
];

/// Object kinds under an environment: URI segment, action, its ID parameter.
const OBJECTS: &[(&str, &str, &str)] = &[
    ("container", "container.get", "containerId"),
    ("project", "project.get", "projectId"),
    ("image", "image.get", "imageId"),
];

/// What a resource read failed with: a message for the client.
#[derive(Debug)]
pub enum ReadError {
    /// No resource has this URI (an unknown address, or an ID or name nothing carries).
    NotFound(String),
    /// Arcane answered an error (its text says what to do).
    Upstream(String),
}

/// How the active surface names and calls an action, for the catalog resources.
fn surface_view(
    snap: &Snapshot,
) -> (
    impl Fn(&Action) -> String + '_,
    impl Fn(&Action) -> String + '_,
) {
    let tool = move |a: &Action| crate::surface::tool_name(snap.surface, a);
    let call = move |a: &Action| crate::surface::call_line(snap.surface, a);
    (tool, call)
}

/// The catalog resources as `tools::SurfaceView`.
fn with_view<R>(snap: &Snapshot, f: impl FnOnce(&tools::SurfaceView<'_>) -> R) -> R {
    let (tool, call) = surface_view(snap);
    let served = |a: &Action| match snap.policy.withdrawn(a) {
        Some(reason) => Err(reason),
        None => Ok(()),
    };
    let view = tools::SurfaceView {
        surface: snap.surface.as_str(),
        tool: &tool,
        call: &call,
        served: &served,
    };
    f(&view)
}

/// Every concrete resource, in a stable order: the catalog, the state lists, the guides, then
/// one `arcane://tools/{id}` per served action.
pub fn all_resources(snap: &Snapshot) -> Vec<Resource> {
    let mut out = vec![
        Resource::new("arcane://tools", "tools")
            .with_title("Served actions")
            .with_description("Every action this server serves on the active surface, with the tool and call line that run it")
            .with_mime_type(JSON),
    ];
    for (uri, action, title) in STATE_LISTS {
        if snap
            .catalog
            .get(action)
            .is_some_and(|a| snap.policy.serves(a))
        {
            let name = uri.trim_start_matches("arcane://");
            let description = if live::Topic::of(uri, "").is_some() {
                "Redacted view (secrets masked); live: resources/subscribe (or subscriptions/listen) for notifications/resources/updated"
            } else {
                "Redacted view (secrets masked)"
            };
            out.push(
                Resource::new(*uri, name)
                    .with_title(*title)
                    .with_description(description)
                    .with_mime_type(JSON),
            );
        }
    }
    for g in guides::GUIDES {
        out.push(
            Resource::new(
                format!("arcane://guides/{}", g.slug),
                format!("guide-{}", g.slug),
            )
            .with_title(g.title)
            .with_description(g.description)
            .with_mime_type(MARKDOWN),
        );
    }
    for a in snap
        .catalog
        .actions
        .iter()
        .filter(|a| snap.policy.serves(a))
    {
        out.push(
            Resource::new(format!("arcane://tools/{}", a.id), a.id.clone())
                .with_title(a.title.clone())
                .with_mime_type(JSON),
        );
    }
    out
}

/// One page of [`all_resources`] (after the MCP Apps view, when `with_app`: only a client that
/// negotiated the extension sees it); the cursor is the index of the next item.
pub fn page(
    snap: &Snapshot,
    cursor: Option<&str>,
    with_app: bool,
) -> Result<(Vec<Resource>, Option<String>), String> {
    let start: usize = match cursor {
        None => 0,
        Some(c) => c
            .parse()
            .map_err(|_| format!("invalid cursor {c:?}; start again without one"))?,
    };
    let mut all = all_resources(snap);
    if with_app {
        all.insert(0, mcp_apps::resource());
    }
    let end = (start + PAGE_SIZE).min(all.len());
    let next = (end < all.len()).then(|| end.to_string());
    Ok((all.into_iter().skip(start).take(PAGE_SIZE).collect(), next))
}

/// The resource templates.
pub fn templates() -> Vec<ResourceTemplate> {
    let t = |uri: &str, name: &str, title: &str, mime: &str| {
        ResourceTemplate::new(uri, name)
            .with_title(title)
            .with_mime_type(mime)
    };
    vec![
        t("arcane://tools/{id}", "tool", "One action in full", JSON),
        t(
            "arcane://environment/{environmentId}",
            "environment",
            "An environment (redacted; live)",
            JSON,
        ),
        t(
            "arcane://environment/{environmentId}/dashboard",
            "environment-dashboard",
            "An environment's dashboard (redacted; live)",
            JSON,
        ),
        t(
            "arcane://environment/{environmentId}/activities",
            "environment-activities",
            "An environment's activities (redacted; live)",
            JSON,
        ),
        t(
            "arcane://environment/{environmentId}/container/{containerId}",
            "container",
            "A container (redacted; live)",
            JSON,
        ),
        t(
            "arcane://container/{containerId}",
            "container-default",
            "A container of the default environment (redacted; live)",
            JSON,
        ),
        t(
            "arcane://environment/{environmentId}/project/{projectId}",
            "project",
            "A compose project (redacted; live)",
            JSON,
        ),
        t(
            "arcane://project/{projectId}",
            "project-default",
            "A compose project of the default environment (redacted; live)",
            JSON,
        ),
        t(
            "arcane://environment/{environmentId}/image/{imageId}",
            "image",
            "An image",
            JSON,
        ),
        t(
            "arcane://image/{imageId}",
            "image-default",
            "An image of the default environment",
            JSON,
        ),
        t(
            "arcane://guides/{slug}",
            "guide",
            "A working guide",
            MARKDOWN,
        ),
    ]
}

/// Reads one resource.
pub async fn read(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    uri: &str,
) -> Result<ResourceContents, ReadError> {
    let Some(segs) = crate::present::links::segments(uri) else {
        return Err(ReadError::NotFound(format!(
            "{} is not an arcane:// resource",
            quoted_name(uri, 200)
        )));
    };
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let default_env = exec.config().environment.clone();
    let r = Reading {
        snap,
        exec,
        ctx,
        uri,
    };
    match segs.as_slice() {
        ["tools"] => Ok(json_contents(
            uri,
            &with_view(snap, |v| tools::tools_index(&snap.catalog, v)),
        )),
        ["tools", id] => with_view(snap, |v| tools::tool_detail(&snap.catalog, id, v))
            .map(|doc| json_contents(uri, &doc))
            .map_err(ReadError::NotFound),
        ["guides", slug] => {
            let g = guides::GUIDES
                .iter()
                .find(|g| g.slug == *slug)
                .ok_or_else(|| {
                    ReadError::NotFound(format!(
                        "no guide {}; arcane://tools and resources/list name them",
                        quoted_name(slug, 100)
                    ))
                })?;
            let name = |id: &str| {
                snap.catalog
                    .get(id)
                    .filter(|a| snap.policy.serves(a))
                    .map(|a| call_name(snap.surface, a))
            };
            Ok(ResourceContents::TextResourceContents {
                uri: uri.to_string(),
                mime_type: Some(MARKDOWN.into()),
                text: g.render(&name),
                meta: None,
            })
        }
        [list]
            if STATE_LISTS
                .iter()
                .any(|(u, _, _)| u.ends_with(&format!("//{list}"))) =>
        {
            let (_, action, _) = STATE_LISTS
                .iter()
                .find(|(u, _, _)| u.ends_with(&format!("//{list}")))
                .unwrap();
            if let Some((_, action)) = ENV_VIEWS.iter().find(|(v, _)| v == list) {
                return r.env_view(&default_env, action).await;
            }
            let mut params = Map::new();
            if *list != "environments" {
                params.insert("environmentId".into(), Value::String(default_env));
            }
            params.insert("limit".into(), json!(100));
            r.state(action, params).await
        }
        ["environment", env, view] if ENV_VIEWS.iter().any(|(v, _)| v == view) => {
            let (_, action) = ENV_VIEWS.iter().find(|(v, _)| v == view).unwrap();
            r.env_view(env, action).await
        }
        ["environment", env] => {
            let params =
                Map::from_iter([("environmentId".to_string(), Value::String(env.to_string()))]);
            r.state("environment.get", params).await
        }
        ["environment", env, kind, id] => r.object(env, kind, id).await,
        [kind, id] if OBJECTS.iter().any(|(k, _, _)| k == kind) => {
            r.object(&default_env, kind, id).await
        }
        _ => Err(ReadError::NotFound(format!(
            "no resource {}; resources/list and resources/templates/list show what exists",
            quoted_name(uri, 200)
        ))),
    }
}

/// One `resources/read`: the snapshot, executor and caller it reads with, and its URI.
struct Reading<'a> {
    snap: &'a Snapshot,
    exec: &'a Executor,
    ctx: &'a arcane_engine::CallContext,
    uri: &'a str,
}

impl Reading<'_> {
    /// An environment's dashboard or activities.
    async fn env_view(&self, env: &str, action: &str) -> Result<ResourceContents, ReadError> {
        let mut params = Map::from_iter([("environmentId".to_string(), Value::String(env.into()))]);
        if action == "activity.list" {
            params.insert("limit".into(), json!(100));
        }
        self.state(action, params).await
    }

    async fn object(&self, env: &str, kind: &str, id: &str) -> Result<ResourceContents, ReadError> {
        let Some((_, action, param)) = OBJECTS.iter().find(|(k, _, _)| *k == kind) else {
            return Err(ReadError::NotFound(format!(
                "no resource kind {} in {}; use container, project or image",
                quoted_name(kind, 100),
                quoted_name(self.uri, 200)
            )));
        };
        let params = Map::from_iter([
            ("environmentId".to_string(), Value::String(env.to_string())),
            (param.to_string(), Value::String(id.to_string())),
        ]);
        self.state(action, params).await
    }

    /// Runs a read action and returns its redacted value with a note of what was masked.
    async fn state(
        &self,
        action: &str,
        params: Map<String, Value>,
    ) -> Result<ResourceContents, ReadError> {
        let (snap, exec) = (self.snap, self.exec);
        let answer = exec
            .execute(&snap.scope(), action, params, false, self.ctx)
            .await;
        // What the URI names does not exist: a name nothing carries, an ID Arcane does not know.
        let unknown = matches!(
            &answer,
            Err(arcane_engine::CallError::Resolve(_))
                | Err(arcane_engine::CallError::Arcane { status: 404, .. })
        );
        let result = crate::present::tool_result(snap, exec.config(), answer);
        if result.is_error == Some(true) {
            let text = crate::present::result_text(&result);
            return Err(if unknown {
                ReadError::NotFound(text)
            } else {
                ReadError::Upstream(text)
            });
        }
        let mut value = result.structured_content.unwrap_or(Value::Null);
        let domain = snap
            .catalog
            .get(action)
            .map(|a| a.domain.as_str())
            .unwrap_or("");
        let masked = arcane_redact::redact_for(&mut value, domain);
        let doc = if masked.is_empty() {
            value
        } else {
            json!({
                "redacted": {
                    "note": format!("{} secret value(s) masked as {:?}; read them in Arcane if you really need them", masked.len(), arcane_redact::MASK),
                    "pointers": masked,
                },
                "value": value,
            })
        };
        Ok(json_contents(self.uri, &doc))
    }
}

/// Runs a read action as a tool call would (policy, validation, errors), with no progress.
async fn run_read(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    action: &str,
    params: Map<String, Value>,
) -> rmcp::model::CallToolResult {
    let answer = exec
        .execute(&snap.scope(), action, params, false, ctx)
        .await;
    crate::present::tool_result(snap, exec.config(), answer)
}

fn json_contents(uri: &str, doc: &Value) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some(JSON.into()),
        text: serde_json::to_string_pretty(doc).unwrap_or_default(),
        meta: None,
    }
}

/// `completion/complete` for the templates' arguments: real IDs fetched from Arcane.
pub async fn complete(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    r: &rmcp::model::ResourceTemplateReference,
    req: &CompleteRequestParams,
) -> CompleteResult {
    let env = req
        .context
        .as_ref()
        .and_then(|c| c.arguments.as_ref())
        .and_then(|a| a.get("environmentId").cloned())
        .unwrap_or_else(|| exec.config().environment.clone());
    let values: Vec<String> = match (req.argument.name.as_str(), r.uri.as_str()) {
        ("id", u) if u.starts_with("arcane://tools") => snap
            .catalog
            .actions
            .iter()
            .filter(|a| snap.policy.serves(a))
            .map(|a| a.id.clone())
            .collect(),
        ("slug", _) => guides::GUIDES.iter().map(|g| g.slug.to_string()).collect(),
        (param, _) => names_of(snap, exec, ctx, param, &env).await,
    };
    completion(values, &req.argument.value)
}

/// The values a client may be offered for `partial`: those containing it (ignoring case),
/// those starting with it first, otherwise in the order given (names before IDs), at most
/// [`CompletionInfo::MAX_VALUES`] with the total.
pub fn completion(mut values: Vec<String>, partial: &str) -> CompleteResult {
    let partial = partial.to_ascii_lowercase();
    values.retain(|v| v.to_ascii_lowercase().contains(&partial));
    values.sort_by_key(|v| !v.to_ascii_lowercase().starts_with(&partial));
    values.dedup();
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let info = CompletionInfo::with_pagination(
        values,
        Some(total as u32),
        total > CompletionInfo::MAX_VALUES,
    )
    .unwrap_or_default();
    CompleteResult::new(info)
}

/// The names and IDs of the objects a parameter names (`projectId` → the projects of `env`),
/// read through the list action its resolver looks names up in: the completions of resource
/// templates and of prompt arguments. Anything failing (policy, Arcane) gives no values.
pub async fn names_of(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    param: &str,
    env: &str,
) -> Vec<String> {
    let (action, in_env, fields): (&str, bool, &[&str]) = match param {
        "environmentId" => ("environment.list", false, &["id", "name"]),
        "containerId" => ("container.list", true, &["names", "id"]),
        "projectId" => ("project.list", true, &["name", "id"]),
        "imageId" => ("image.list", true, &["repoTags", "id"]),
        "volumeName" => ("volume.list", true, &["name"]),
        "serviceId" => ("swarm_service.list", true, &["name", "id"]),
        _ => return Vec::new(),
    };
    ids(snap, exec, ctx, action, in_env.then_some(env), fields).await
}

/// Identifiers from a list action's items: every item's names, then every item's IDs.
async fn ids(
    snap: &Snapshot,
    exec: &Executor,
    ctx: &arcane_engine::CallContext,
    action: &str,
    env: Option<&str>,
    fields: &[&str],
) -> Vec<String> {
    let mut params = Map::new();
    if let Some(e) = env {
        params.insert("environmentId".into(), Value::String(e.to_string()));
    }
    params.insert("limit".into(), json!(100));
    let result = run_read(snap, exec, ctx, action, params).await;
    let Some(items) = result
        .structured_content
        .as_ref()
        .and_then(|v| v.get("items"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    // Every name before every ID: a person types names, and an ID that merely contains the
    // typed letters (hex digits do) must not push a name that matches off the list.
    let (mut names, mut out) = (Vec::new(), Vec::new());
    for item in items {
        for f in fields {
            let into = if *f == "id" { &mut out } else { &mut names };
            match item.get(*f) {
                Some(Value::String(s)) => into.push(s.clone()),
                Some(Value::Array(a)) => {
                    into.extend(a.iter().filter_map(Value::as_str).map(str::to_string))
                }
                _ => {}
            }
        }
    }
    names.append(&mut out);
    names
}
