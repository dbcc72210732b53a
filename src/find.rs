//! `arcane_find_action`: search results as a tool result. Local only; no call to Arcane.
//!
//! Each match carries its ID, title, description, usage note, required parameters,
//! mutating/destructive flags, related actions and `schemaUri`; the first
//! [`FULL_SCHEMAS`] include their full input schema, the rest one line per parameter.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::catalog::Action;
use crate::exec::errors::type_of;
use crate::snapshot::Snapshot;

/// How many results carry their full input schema.
pub const FULL_SCHEMAS: usize = 5;

/// Runs a search on a snapshot (withdrawn actions are never found).
pub fn find(snap: &Snapshot, query: &str, limit: usize) -> CallToolResult {
    let allow = |a: &Action| snap.policy.serves(a);
    let hits = snap.search.search(&snap.catalog, query, limit, &allow);
    let results: Vec<Value> = hits
        .iter()
        .filter_map(|h| snap.catalog.get(&h.id))
        .filter(|a| snap.policy.serves(a))
        .enumerate()
        .map(|(i, a)| entry(snap, a, i < FULL_SCHEMAS))
        .collect();
    let mut text = String::new();
    if results.is_empty() {
        text.push_str(&format!(
            "No action matches {query:?}. Use plain words: a resource and a verb (list containers, pull image)."
        ));
    } else {
        text.push_str(&format!("{} action(s) for {query:?}:\n", results.len()));
        for r in &results {
            let flags = match (r["destructive"].as_bool(), r["mutating"].as_bool()) {
                (Some(true), _) => " [destructive: confirm]",
                (_, Some(true)) => " [changes state]",
                _ => "",
            };
            text.push_str(&format!(
                "- {} — {}{}; required: {}\n",
                r["id"].as_str().unwrap_or_default(),
                r["title"].as_str().unwrap_or_default(),
                flags,
                r["required"]
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .map(|a| a
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_else(|| "none".into())
            ));
        }
        text.push_str(
            "\nRun one with arcane_execute_action {\"action\": \"<id>\", \"params\": {...}}; \
             structuredContent has each input schema (first 5) or parameter lines.",
        );
    }
    let mut r = CallToolResult::success(vec![crate::exec::assistant_text(
        crate::render::escape::sanitize(&text).into_owned(),
    )]);
    r.structured_content =
        Some(json!({"query": query, "count": results.len(), "results": results}));
    r
}

fn entry(snap: &Snapshot, a: &Action, full: bool) -> Value {
    let related: Vec<&str> = a
        .related
        .iter()
        .filter(|id| snap.catalog.get(id).is_some_and(|r| snap.policy.serves(r)))
        .map(String::as_str)
        .collect();
    let mut e = json!({
        "id": a.id,
        "title": a.title,
        "description": a.description,
        "required": a.required,
        "mutating": a.mutating,
        "destructive": a.destructive,
        "related": related,
        "schemaUri": format!("arcane://tools/{}", a.id),
    });
    if !a.usage.is_empty() {
        e["usage"] = Value::String(a.usage.clone());
    }
    if let Some(example) = &a.example {
        e["example"] = example.clone();
    }
    if full {
        e["inputSchema"] = a.input_schema.clone();
    } else {
        let lines: Vec<String> = a
            .params
            .iter()
            .map(|p| {
                let mut l = format!("{}: {}", p.name, type_of(&p.schema));
                if p.required {
                    l.push_str(", required");
                }
                if !p.description.is_empty() {
                    l.push_str(" — ");
                    l.push_str(p.description.lines().next().unwrap_or(""));
                }
                l
            })
            .collect();
        e["params"] = json!(lines);
    }
    e
}
