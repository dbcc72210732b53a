//! `arcane://tools` and `arcane://tools/{id}`: the served catalog as resources (docs/surfaces.md#resources).
//!
//! Both reflect the filtered catalog: with read-only mode or exclusions the count drops, and a
//! withdrawn ID answers with its reason. The `tool` and `call` fields follow the active surface.

use serde_json::{Value, json};

use arcane_catalog::{Action, Catalog};

/// How the active surface names and calls actions, and which it serves.
pub struct SurfaceView<'a> {
    /// `dynamic`, `meta` or `individual`.
    pub surface: &'a str,
    /// The tool that runs an action on this surface.
    pub tool: &'a dyn Fn(&Action) -> String,
    /// A ready-to-adapt call line, e.g. `arcane_container {"action":"kill","params":{...},"confirm":true}`.
    pub call: &'a dyn Fn(&Action) -> String,
    /// Whether the action is served; `Err(reason)` when withdrawn.
    pub served: &'a dyn Fn(&Action) -> Result<(), String>,
}

/// The `arcane://tools` document. `generation` counts the hot reloads swapped in since startup
/// (0 = the catalog loaded at startup) and `loadedAt` says when the served catalog was built.
pub fn tools_index(catalog: &Catalog, view: &SurfaceView<'_>) -> Value {
    let actions: Vec<Value> = catalog
        .actions
        .iter()
        .filter(|a| (view.served)(a).is_ok())
        .map(|a| {
            json!({
                "id": a.id,
                "title": a.title,
                "tool": (view.tool)(a),
                "call": (view.call)(a),
                "mutating": a.safety.mutating,
                "destructive": a.safety.destructive,
            })
        })
        .collect();
    json!({
        "surface": view.surface,
        "count": actions.len(),
        "arcaneVersion": catalog.arcane_version,
        "generation": catalog.generation,
        "loadedAt": catalog.loaded_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "actions": actions,
    })
}

/// The `arcane://tools/{id}` document: one action in full, or the reason it is withdrawn.
/// `Err` carries a message for an ID that names nothing (with the closest IDs).
pub fn tool_detail(catalog: &Catalog, id: &str, view: &SurfaceView<'_>) -> Result<Value, String> {
    if let Some(a) = catalog.resolve(id) {
        if let Err(reason) = (view.served)(a) {
            return Ok(json!({"id": a.id, "withdrawn": true, "reason": reason}));
        }
        return Ok(json!({
            "id": a.id,
            "title": a.title,
            "description": a.description,
            "usage": a.usage,
            "example": a.request.example,
            "tool": (view.tool)(a),
            "call": (view.call)(a),
            "method": a.request.method,
            "path": a.request.path,
            "operationId": a.request.operation_id,
            "required": a.request.required,
            "inputSchema": a.request.input_schema,
            "mutating": a.safety.mutating,
            "destructive": a.safety.destructive,
            "idempotent": a.safety.idempotent,
            "result": a.output.kind.as_str(),
            "related": a.output.related.iter().filter(|r| catalog.get(r).is_some_and(|t| (view.served)(t).is_ok())).collect::<Vec<_>>(),
        }));
    }
    if let Some(e) = catalog
        .excluded
        .iter()
        .find(|e| e.id.as_deref() == Some(id) || e.operation_id == id)
    {
        return Ok(json!({"id": e.id, "withdrawn": true, "reason": e.reason}));
    }
    // The name is the client's: cut and escaped like every echoed name.
    Err(format!(
        "no action {}; closest: {}; arcane://tools lists them all",
        arcane_markdown::quoted_name(id, 100),
        // A long name is compared by its start: the distance is quadratic in its length.
        catalog
            .closest(&arcane_markdown::clip(id, 100), 5)
            .join(", ")
    ))
}
