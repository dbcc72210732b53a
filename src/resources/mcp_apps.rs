//! The MCP Apps view (docs/apps.md): the `ui://` resource holding the one self-contained app
//! (`apps/dist/arcane-app.html`, built from `apps/src/` by `apps/build.mjs`), whether a client
//! negotiated the `io.modelcontextprotocol/ui` extension, and the tool `_meta` that links a tool
//! to the view. The text and `structuredContent` of every result are the same with or without it.

use rmcp::model::{ClientCapabilities, MetaObject, Resource, ResourceContents, Tool};
use serde_json::{Value, json};

use crate::load::snapshot::Snapshot;
use crate::surface::{EXECUTE_TOOL, Surface};

/// The extension's identifier (SEP-1865).
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP Apps HTML view.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The one view's URI.
pub const URI: &str = "ui://arcane/app";

/// The built app: HTML with its CSS and JavaScript inline and a hash-pinned CSP of its own.
/// `tests/e2e_apps.rs` fails when it is not what `apps/build.mjs` makes of `apps/src/`.
pub const HTML: &str = include_str!("../../apps/dist/arcane-app.html");

/// The actions that have a view: lists (the server's history of changes too), the dashboard,
/// stats, logs and objects. The app picks the view from the action named in the call and the
/// shape of its result.
pub const VIEW_ACTIONS: &[&str] = &[
    "container.list",
    "project.list",
    "image.list",
    "volume.list",
    "network.list",
    "swarm_service.list",
    "environment.list",
    "history.list",
    "environment.dashboard",
    "container.stats",
    "system.stats",
    "container.logs",
    "project.logs",
    "swarm_service.logs",
    "container.get",
    "project.get",
    "image.get",
    "volume.get",
    "network.get",
    "swarm_service.get",
    "environment.get",
];

/// Whether the client declared the extension with the app's MIME type.
pub fn negotiated(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.extensions.as_ref())
        .and_then(|e| e.get(EXTENSION))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME)))
}

/// The server's side of the extension, for its capabilities.
pub fn server_settings() -> serde_json::Map<String, Value> {
    let Value::Object(m) = json!({"mimeTypes": [MIME]}) else {
        unreachable!("a JSON object literal")
    };
    m
}

/// The resource as `resources/list` shows it (to a client that negotiated the extension).
pub fn resource() -> Resource {
    Resource::new(URI, "arcane-app")
        .with_title("Arcane views")
        .with_description(
            "Interactive views of Arcane results: lists, dashboard, stats, logs and objects",
        )
        .with_mime_type(MIME)
        .with_meta(resource_meta())
}

/// What the host is asked for: no network origin at all (the app talks only to the host, over
/// `postMessage`), no frames, clipboard writing for the logs' copy button, a border.
fn resource_meta() -> MetaObject {
    let Value::Object(m) = json!({
        "ui": {
            "csp": {
                "connectDomains": [],
                "resourceDomains": [],
                "frameDomains": [],
                "baseUriDomains": []
            },
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": true
        }
    }) else {
        unreachable!("a JSON object literal")
    };
    MetaObject(m)
}

/// The answer of `resources/read` for [`URI`].
pub fn contents() -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: URI.into(),
        mime_type: Some(MIME.into()),
        text: HTML.into(),
        meta: Some(resource_meta()),
    }
}

/// The tool `_meta` naming the view: the current key and the deprecated flat one some hosts
/// still read.
fn tool_meta() -> MetaObject {
    let Value::Object(m) = json!({"ui": {"resourceUri": URI}, "ui/resourceUri": URI}) else {
        unreachable!("a JSON object literal")
    };
    MetaObject(m)
}

/// Whether a tool of the snapshot's surface runs an action that has a view: the individual
/// tool of one, the meta tool of a domain with one, the dynamic surface's execute tool.
fn has_view(snap: &Snapshot, tool: &str) -> bool {
    match snap.surface {
        Surface::Dynamic => tool == EXECUTE_TOOL,
        Surface::Meta | Surface::Individual => VIEW_ACTIONS.iter().any(|id| {
            snap.catalog.get(id).is_some_and(|a| {
                snap.policy.serves(a)
                    && if snap.surface == Surface::Meta {
                        a.meta_tool_name() == tool
                    } else {
                        a.individual_tool_name() == tool
                    }
            })
        }),
    }
}

/// The snapshot's tools with the view linked to those that have one.
pub fn with_views(snap: &Snapshot) -> Vec<Tool> {
    snap.tools
        .iter()
        .map(|t| {
            if !has_view(snap, &t.name) {
                return t.clone();
            }
            let mut meta = t.meta.clone().unwrap_or_default();
            meta.0.extend(tool_meta().0);
            let mut t = t.clone();
            t.meta = Some(meta);
            t
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_the_declared_mime_type_negotiates() {
        assert!(negotiated(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": [MIME]}}})
        ))));
        assert!(!negotiated(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}})
        ))));
        assert!(!negotiated(Some(&caps(
            json!({"extensions": {EXTENSION: {}}})
        ))));
        assert!(!negotiated(Some(&caps(json!({})))));
        assert!(!negotiated(None));
    }

    #[test]
    fn the_app_is_small_and_self_contained() {
        assert!(HTML.len() < 150 * 1024, "{} bytes", HTML.len());
        assert!(HTML.starts_with("<!DOCTYPE html>"));
        for bad in [
            "<script src",
            "<link",
            "@import",
            "url(",
            "fetch(",
            "XMLHttpRequest",
            "WebSocket",
            "sendBeacon",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "javascript:",
            "ui/open-link",
        ] {
            assert!(!HTML.contains(bad), "the app must load nothing: {bad}");
        }
    }
}
