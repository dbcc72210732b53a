//! Activities (cancel) and the build workspace (browse, mkdir, delete).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ctx::Ctx;

pub(super) fn cancel_activity(ctx: &Ctx) -> Response {
    match ctx.sh.activity_running(ctx.param("activityId")) {
        // Everything the simulator starts finishes at once or streams briefly.
        Some(true) => super::generic::generic(ctx),
        Some(false) => ctx.problem(409, "activity is not running"),
        None => ctx.problem(404, "activity not found"),
    }
}

/// The build workspace path of a request, an absolute path re-rooted under the build root;
/// `None` for a path with `..` (refused).
fn build_path(ctx: &Ctx) -> Option<String> {
    let raw = ctx.q("path").unwrap_or("");
    if raw.split('/').any(|s| s == "..") {
        return None;
    }
    Some(raw.trim_matches('/').to_string())
}

fn traversal(ctx: &Ctx) -> Response {
    ctx.problem(400, "invalid path: path traversal not allowed")
}

pub(super) fn browse(ctx: &Ctx) -> Response {
    let Some(dir) = build_path(ctx) else {
        return traversal(ctx);
    };
    let st = ctx.sh.state();
    let mut names: Vec<(String, bool)> = Vec::new();
    if dir.is_empty() {
        names.push(("Dockerfile".into(), false));
    }
    for d in &st.build_dirs {
        let parent = d.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        if parent == dir {
            let name = d.rsplit('/').next().unwrap_or(d).to_string();
            names.push((name, true));
        }
    }
    drop(st);
    // Arcane 2.8.0 builds each entry from its file-system listing with `relativePath` set to
    // the entry's `path` and `editable` left false (docs/arcane-wire.md#build-workspace).
    let entries: Vec<Value> = names
        .into_iter()
        .map(|(name, is_dir)| {
            let path = if dir.is_empty() {
                format!("/app/data/builds/{name}")
            } else {
                format!("/app/data/builds/{dir}/{name}")
            };
            json!({"name": name, "path": path, "relativePath": path,
                   "size": if is_dir { 4096 } else { 112 }, "editable": false,
                   "isDirectory": is_dir, "isSymlink": false,
                   "modTime": "2025-06-01T12:00:00Z",
                   "mode": if is_dir { "drwxr-xr-x" } else { "-rw-r--r--" }})
        })
        .collect();
    ctx.ok_unfitted(Value::Array(entries))
}

/// mkdir and delete answer 204 with no body.
pub(super) fn change(ctx: &Ctx, mkdir: bool) -> Response {
    let Some(path) = build_path(ctx) else {
        return traversal(ctx);
    };
    let mut st = ctx.sh.state();
    if path.is_empty() {
        // The root itself: nothing to create or delete.
    } else if mkdir {
        if !st.build_dirs.contains(&path) {
            st.build_dirs.push(path);
        }
    } else {
        st.build_dirs
            .retain(|d| d != &path && !d.starts_with(&format!("{path}/")));
    }
    StatusCode::NO_CONTENT.into_response()
}
