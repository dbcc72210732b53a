//! `arcane_find_action`: search results as a tool result. Local only; no call to Arcane.
//!
//! Each match carries its ID, title, description, usage note, required parameters,
//! mutating/destructive flags, related actions, `schemaUri` and the query words it matched;
//! the first [`FULL_SCHEMAS`] include their full input schema, the rest one line per
//! parameter. When even the best match explains few of the query's words, the text says so
//! and lists the domains, so that a model rephrases instead of guessing (`docs/search.md`).

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::snapshot::Snapshot;
use arcane_catalog::Action;
use arcane_engine::type_of;
use arcane_markdown::code_span;

/// How many results carry their full input schema.
pub const FULL_SCHEMAS: usize = 5;

/// Below this share of the query's words explained by the best match, the match is weak.
pub const WEAK_COVERAGE: f32 = 0.5;

const REPHRASE: &str = "Use plain words: a resource and a verb (list containers, pull image, \
                        restart project).";

/// Runs a search on a snapshot (withdrawn actions are never found).
pub fn find(snap: &Snapshot, query: &str, limit: usize) -> CallToolResult {
    let allow = |a: &Action| snap.policy.serves(a);
    let index = match snap.search.get(&snap.catalog) {
        Ok(index) => index,
        Err(text) => return crate::present::error_result(text.to_string()),
    };
    let hits = index.search(&snap.catalog, query, limit, &allow);
    let served: Vec<(&Action, &arcane_catalog::Hit)> = hits
        .iter()
        .filter_map(|h| snap.catalog.get(&h.id).map(|a| (a, h)))
        .filter(|(a, _)| snap.policy.serves(a))
        .collect();
    let results: Vec<Value> = served
        .iter()
        .enumerate()
        .map(|(i, (a, h))| {
            let mut e = entry(snap, a, i < FULL_SCHEMAS);
            e["matched"] = json!(h.matched);
            e
        })
        .collect();
    // The query is the client's text: written as a code span, it cannot add structure.
    let echo = code_span(query);
    let weak = served
        .first()
        .is_none_or(|(_, h)| h.coverage < WEAK_COVERAGE);
    let mut text = String::new();
    if results.is_empty() {
        text.push_str(&format!("No action matches {echo}. {REPHRASE}\n"));
        text.push_str(&domains_line(snap));
    } else {
        text.push_str(&format!("{} action(s) for {echo}:\n", results.len()));
        for (r, (_, h)) in results.iter().zip(&served) {
            let flags = match (r["destructive"].as_bool(), r["mutating"].as_bool()) {
                (Some(true), _) => " [destructive: confirm]",
                (_, Some(true)) => " [changes state]",
                _ => "",
            };
            // Matched words are query words (letters and digits only), escaped all the same.
            let matched = if h.matched.is_empty() {
                "description only".to_string()
            } else {
                h.matched
                    .iter()
                    .map(|m| arcane_markdown::inline_strict(m).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            text.push_str(&format!(
                "- {} — {}{}; required: {}; matched: {}\n",
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
                    .unwrap_or_else(|| "none".into()),
                matched,
            ));
        }
        if weak {
            text.push_str(&format!(
                "\nWeak match: even the first result explains few of the words of the query. \
                 {REPHRASE} Or name a domain:\n"
            ));
            text.push_str(&domains_line(snap));
        }
        text.push_str(
            "\nRun one with arcane_execute_action {\"action\": \"<id>\", \"params\": {...}}; \
             structuredContent has each input schema (first 5) or parameter lines.",
        );
    }
    // The text is built from catalog words and the escaped query; sanitize is a last guard.
    let mut r = CallToolResult::success(vec![crate::present::assistant_text(
        arcane_markdown::sanitize(&text).into_owned(),
    )]);
    r.structured_content = Some(json!({
        "query": query,
        "count": results.len(),
        "weak": weak,
        "results": results,
    }));
    r
}

/// `Domains: container, image, …` — the domains with at least one served action.
fn domains_line(snap: &Snapshot) -> String {
    let names: Vec<&str> = snap
        .catalog
        .domains
        .iter()
        .filter(|d| {
            d.actions
                .iter()
                .any(|id| snap.catalog.get(id).is_some_and(|a| snap.policy.serves(a)))
        })
        .map(|d| d.name.as_str())
        .collect();
    format!("Domains: {}.\n", names.join(", "))
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
