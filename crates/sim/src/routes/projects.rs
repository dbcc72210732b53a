//! Compose projects: list, get (also its compose, runtime and updates views), the streamed
//! up/redeploy/pull/build, and down/restart/destroy.

use axum::response::Response;
use serde_json::{Map, Value, json};

use super::common::{change, get_one, message, refuse, str_array};
use super::compose::{compose_services, multipart_parts};
use super::images::{add_image, pull_lines};
use super::lists::{PROJECT_SORT, Paging, answer_page, filter_values, search_match};
use crate::config::ArcaneVersion;
use crate::ctx::Ctx;
use crate::state::{self, Container, State, container_project, timestamp};
use crate::streams::json_stream;
use crate::synth::uuid;

/// Arcane finds a project by its database ID only; a name is not found.
fn find_project(st: &State, env: &str, key: &str) -> Option<usize> {
    st.projects
        .iter()
        .position(|p| p.environment_id == env && p.id == key)
}

fn project_containers<'a>(st: &'a State, p: &state::Project) -> Vec<&'a Container> {
    st.containers
        .iter()
        .filter(|c| {
            c.environment_id == p.environment_id && container_project(c) == Some(p.name.as_str())
        })
        .collect()
}

fn project_value(st: &State, i: usize, version: ArcaneVersion) -> Value {
    let p = &st.projects[i];
    let mut v = state::project_details(p, &project_containers(st, p));
    // 2.8.x always reports false; main reports whether a service has a `build` section.
    let builds =
        version == ArcaneVersion::Main && p.services.iter().any(|s| s.get("build").is_some());
    v["hasBuildDirective"] = json!(builds);
    v
}

/// Starts every container of a compose project and derives the project's status from them;
/// the project's index, when it exists.
pub(crate) fn start_project(st: &mut State, env: &str, name: &str) -> Option<usize> {
    for c in st.containers.iter_mut() {
        if c.environment_id == env && container_project(c) == Some(name) {
            c.state = "running".into();
            c.status = "Up Less than a second".into();
        }
    }
    let i = st
        .projects
        .iter()
        .position(|p| p.environment_id == env && p.name == name)?;
    recompute_status(st, i);
    Some(i)
}

fn recompute_status(st: &mut State, i: usize) {
    let p = st.projects[i].clone();
    let cs = project_containers(st, &p);
    let running = cs.iter().filter(|c| c.state == "running").count();
    st.projects[i].status = if cs.is_empty() || running == 0 {
        "stopped".into()
    } else if running == cs.len() {
        "running".into()
    } else {
        "partially running".into()
    };
}

pub(super) fn list(ctx: &Ctx) -> Response {
    let env = ctx.env_id();
    let st = ctx.sh.state();
    let all: Vec<usize> = (0..st.projects.len())
        .filter(|i| st.projects[*i].environment_id == env)
        .collect();
    let searched: Vec<usize> = all
        .into_iter()
        .filter(|i| search_match(ctx, &[&st.projects[*i].name]))
        .collect();
    let grand = searched.len();
    let items: Vec<Value> = searched
        .into_iter()
        .filter(|i| match filter_values(ctx, "status") {
            None => true,
            Some(v) => v
                .iter()
                .any(|s| s.eq_ignore_ascii_case(&st.projects[*i].status)),
        })
        .map(|i| project_value(&st, i, ctx.sh.version()))
        .collect();
    drop(st);
    // docs/arcane-wire.md#list-envelopes-and-paging: projects clamp limits like the DB-backed
    // lists; only with a `status` (or `updates`) filter, which Arcane applies in memory after
    // the database's search, is the grand total reported — the count after the search, before
    // that filter. Otherwise it is 0, as for every database-backed list.
    let derived = filter_values(ctx, "status").is_some() || filter_values(ctx, "updates").is_some();
    let paging = Paging::Db {
        reports_grand_total: derived,
    };
    answer_page(ctx, items, grand, paging, PROJECT_SORT, vec![])
}

const NOT_FOUND: &str = "Failed to get project details: project not found";

pub(super) fn get(ctx: &Ctx) -> Response {
    get_one(
        ctx,
        |st| {
            let i = find_project(st, ctx.env_id(), ctx.param("projectId"))?;
            Some(project_value(st, i, ctx.sh.version()))
        },
        404,
        || NOT_FOUND.to_string(),
    )
}

pub(super) fn stream(ctx: &Ctx, action: &'static str) -> Response {
    let env = ctx.env_id().to_string();
    let mut st = ctx.sh.state();
    let Some(i) = find_project(&st, &env, ctx.param("projectId")) else {
        drop(st);
        // Failures before streaming starts are problem+json (docs/arcane-wire.md#streams).
        return ctx.problem(404, NOT_FOUND);
    };
    let p = st.projects[i].clone();
    if matches!(action, "up" | "redeploy") {
        ensure_project_containers(&mut st, &env, &p.name);
    }
    let containers: Vec<String> = project_containers(&st, &p)
        .iter()
        .map(|c| c.name.clone())
        .collect();
    drop(st);
    let images: Vec<String> = p
        .services
        .iter()
        .filter_map(|s| s.get("image").and_then(Value::as_str).map(str::to_string))
        .collect();
    let mut lines = Vec::new();
    if matches!(action, "pull" | "redeploy")
        || (action == "up"
            && ctx
                .body
                .as_ref()
                .and_then(|b| b.get("pullPolicy"))
                .and_then(Value::as_str)
                == Some("always"))
    {
        for img in &images {
            lines.push(format!(" {img} Pulling"));
            lines.extend(pull_lines(img).into_iter().map(|l| format!(" {l}")));
            lines.push(format!(" {img} Pulled"));
        }
    }
    if action == "build" {
        for s in &p.services {
            if s.get("build").is_some() {
                let n = s.get("name").and_then(Value::as_str).unwrap_or("app");
                lines.push(format!(
                    "#1 [{n} internal] load build definition from Dockerfile"
                ));
                lines.push("#1 DONE 0.0s".into());
                lines.push(format!("#2 [{n}] exporting to image"));
                lines.push("#2 DONE 0.3s".into());
            }
        }
        if lines.is_empty() {
            lines.push("No services to build".into());
        }
    }
    if matches!(action, "up" | "redeploy") {
        let net = format!("{}_default", p.name);
        lines.push(format!(" Network {net}  Creating"));
        lines.push(format!(" Network {net}  Created"));
        for c in &containers {
            lines.push(format!(
                " Container {c}  {}",
                if action == "redeploy" {
                    "Recreate"
                } else {
                    "Starting"
                }
            ));
        }
        for c in &containers {
            lines.push(format!(" Container {c}  Started"));
        }
    }
    let on_done: Option<crate::streams::StateChange> = if matches!(action, "up" | "redeploy") {
        let name = p.name.clone();
        Some(Box::new(move |st: &mut State| {
            // A redeploy pulls the newer images and recreates the containers on them.
            if let Some(i) = start_project(st, &env, &name)
                && action == "redeploy"
            {
                st.projects[i].has_update = false;
            }
        }))
    } else {
        None
    };
    if ctx.response_schema().1.is_some() {
        // The loaded spec declares a JSON answer (Arcane 1.x): apply and answer JSON.
        if let Some(f) = on_done {
            f(&mut ctx.sh.state());
        }
        let msg = match action {
            "up" => "Project deployed successfully",
            "redeploy" => "Project redeployed successfully",
            "pull" => "Project images pulled successfully",
            _ => "Project images built successfully",
        };
        return ctx.ok(message(msg), vec![]);
    }
    json_stream(ctx, lines, Ok(()), on_done)
}

pub(super) fn action(ctx: &Ctx, action: &str) -> Response {
    let env = ctx.env_id();
    let services: Option<Vec<String>> = ctx
        .q("services")
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(str::to_string).collect());
    change(ctx, |st| {
        let Some(i) = find_project(st, env, ctx.param("projectId")) else {
            return Err(match action {
                "down" => refuse(
                    500,
                    "Failed to bring down project: failed to get project: project not found",
                ),
                "destroy" => refuse(500, "Failed to destroy project: project not found"),
                _ => refuse(400, "Failed to restart project: project not found"),
            });
        };
        let name = st.projects[i].name.clone();
        let msg = match action {
            "down" => {
                for c in st.containers.iter_mut() {
                    if c.environment_id == env && container_project(c) == Some(name.as_str()) {
                        c.state = "exited".into();
                        c.status = "Exited (0) Less than a second ago".into();
                    }
                }
                recompute_status(st, i);
                "Project brought down successfully"
            }
            "restart" => {
                for c in st.containers.iter_mut() {
                    let svc = c
                        .labels
                        .get("com.docker.compose.service")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    if c.environment_id == env
                        && container_project(c) == Some(name.as_str())
                        && services.as_ref().is_none_or(|s| s.contains(&svc))
                    {
                        c.state = "running".into();
                        c.status = "Up Less than a second".into();
                    }
                }
                recompute_status(st, i);
                "Project restarted successfully"
            }
            _ => {
                st.containers.retain(|c| {
                    !(c.environment_id == env && container_project(c) == Some(name.as_str()))
                });
                let remove_volumes = ctx
                    .body
                    .as_ref()
                    .and_then(|b| b.get("removeVolumes"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if remove_volumes {
                    st.volumes.retain(|v| {
                        !(v.environment_id == env
                            && v.labels
                                .get("com.docker.compose.project")
                                .and_then(Value::as_str)
                                == Some(name.as_str()))
                    });
                }
                st.projects.remove(i);
                "Project destroyed successfully"
            }
        };
        Ok(message(msg))
    })
}

/// `GET …/projects/counts`.
pub(super) fn counts(ctx: &Ctx) -> Response {
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

/// `POST …/projects`: the JSON-encoded `project` part of a multipart body (or 1.x's JSON body),
/// its compose text from the part or a compose file among the workspace files.
pub(super) fn create(ctx: &Ctx) -> Response {
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
    let p = new_project(&env, name, compose, env_content, services, now);
    let v = state::project_details(&p, &[]);
    st.projects.push(p);
    drop(st);
    ctx.ok(v, vec![])
}

/// A project as a create stores it: never started, its database ID derived from environment
/// and name, created and updated `now`.
pub(crate) fn new_project(
    env: &str,
    name: &str,
    compose: String,
    env_content: String,
    services: Vec<Value>,
    now: String,
) -> state::Project {
    state::Project {
        id: uuid(&format!("project:{env}:{name}")),
        name: name.to_string(),
        environment_id: env.to_string(),
        status: "stopped".into(),
        path: format!("/app/data/projects/{name}"),
        compose_content: compose,
        env_content,
        services,
        created_at: now.clone(),
        updated_at: now,
        has_update: false,
        extra: Map::new(),
    }
}

/// Creates the containers of a project's services that do not exist yet (what `compose up`
/// does before starting them), labelled with the compose project and service.
pub(crate) fn ensure_project_containers(st: &mut State, env: &str, project: &str) {
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
            started_at: None,
            finished_at: None,
            restart_policy: None,
            healthcheck: None,
            health: None,
            extra: Map::new(),
        });
    }
}
