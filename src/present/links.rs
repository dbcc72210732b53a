//! URIs of the Docker-state resources, and the `resource_link` that `environment.get`,
//! `container.get` and `project.get` results end with (docs/output-format.md, docs/surfaces.md#resources).

use rmcp::model::Resource;
use serde_json::{Map, Value};

use arcane_catalog::Action;

/// `arcane://environment/{environmentId}`; `None` for an ID that is no path segment.
pub fn environment_uri(env: &str) -> Option<String> {
    Some(format!("arcane://environment/{}", enc(env)?))
}

/// `arcane://environment/{environmentId}/{kind}/{id}` (`kind`: container, project, image).
pub fn object_uri(env: &str, kind: &str, id: &str) -> Option<String> {
    Some(format!(
        "arcane://environment/{}/{kind}/{}",
        enc(env)?,
        enc(id)?
    ))
}

/// The decoded path segments of an `arcane://` URI; `None` for another scheme.
pub fn segments(uri: &str) -> Option<Vec<String>> {
    let rest = uri.strip_prefix("arcane://")?;
    Some(
        rest.split('/')
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect(),
    )
}

/// A URI segment, encoded by the one path-segment encoder (dot and empty segments refused).
fn enc(s: &str) -> Option<String> {
    arcane_engine::segment("id", s).ok()
}

/// The link a successful result of `action` ends with, if it has one: filled with the call's
/// arguments, the default environment when `environmentId` was omitted.
pub fn result_link(
    action: &Action,
    params: &Map<String, Value>,
    default_env: &str,
) -> Option<Resource> {
    let env = params
        .get("environmentId")
        .and_then(Value::as_str)
        .unwrap_or(default_env);
    let arg = |name: &str| params.get(name).and_then(Value::as_str).map(str::to_string);
    let (uri, name, title) = match action.id.as_str() {
        "environment.get" => (
            environment_uri(env)?,
            format!("environment-{env}"),
            format!("Environment {env}"),
        ),
        "container.get" => {
            let id = arg("containerId")?;
            (
                object_uri(env, "container", &id)?,
                format!("container-{id}"),
                format!("Container {id}"),
            )
        }
        "project.get" => {
            let id = arg("projectId")?;
            (
                object_uri(env, "project", &id)?,
                format!("project-{id}"),
                format!("Project {id}"),
            )
        }
        _ => return None,
    };
    Some(
        Resource::new(uri, name)
            .with_title(title)
            .with_mime_type("application/json"),
    )
}
