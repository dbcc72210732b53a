//! `arcane_find_action`: search results as a tool result. Local only; no call to Arcane.
//!
//! Each match carries its ID, title, description, usage note, required parameters,
//! mutating/destructive flags, related actions, `schemaUri` and the query words it matched;
//! the first [`FULL_SCHEMAS`] include their full input schema, the rest one line per
//! parameter. Many clients give the model only the text, so the text carries what a call
//! needs: every result's ID, flags and required parameters, and for the first [`GUIDED`]
//! their usage note, example call and main optional parameters. When the best match is not
//! clearly better than the next, the text says so and names what is close (siblings, or the
//! closest domains), so that a model looks or rephrases instead of guessing (`docs/search.md`).

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::load::snapshot::Snapshot;
use arcane_catalog::{Action, ParamLocation};
use arcane_engine::type_of;
use arcane_markdown::code_span;

/// How many results carry their full input schema.
pub const FULL_SCHEMAS: usize = 5;

/// How many results carry their usage note, example call and main optional parameters in
/// the text.
pub const GUIDED: usize = 3;

/// Optional parameters named per guided result (the rest are counted).
const OPTIONAL_SHOWN: usize = 4;

/// Characters of a usage note kept in the text.
const USAGE_CHARS: usize = 200;

/// Domains the weak-match notice names, each with an example action.
const CLOSEST_DOMAINS: usize = 3;

const REPHRASE: &str = "Use plain words: a resource and a verb (list containers, pull image, \
                        restart project).";

/// The best match of `query` among every action, when the policy withdrew it: the action,
/// why it is withdrawn, and whether it clearly leads (with a close second the query may mean
/// another action). Searched again only when the policy withdraws anything.
fn withdrawn_match<'s>(
    snap: &'s Snapshot,
    index: &arcane_catalog::SearchIndex,
    query: &str,
) -> Option<(&'s Action, String, bool)> {
    if !snap.policy.withdraws_any() {
        return None;
    }
    let all = index.search(&snap.catalog, query, 2, &|_: &Action| true);
    let clear = !arcane_catalog::is_weak(&all);
    let a = snap.catalog.get(&all.first()?.id)?;
    snap.policy.withdrawn(a).map(|why| (a, why, clear))
}

/// Runs a search on a snapshot (withdrawn actions are never found; the one meant, when
/// withdrawn, is named with why).
pub fn find(snap: &Snapshot, query: &str, limit: usize) -> CallToolResult {
    let allow = |a: &Action| snap.policy.serves(a);
    let index = match snap.search.get(&snap.catalog) {
        Ok(index) => index,
        Err(text) => return crate::present::blocks::error_result(text.to_string()),
    };
    // One hit more than asked when one is asked: whether the first is clearly the one meant
    // depends on the next.
    let hits = index.search(&snap.catalog, query, limit.max(2), &allow);
    let served_hits: Vec<arcane_catalog::Hit> = hits
        .iter()
        .filter(|h| {
            snap.catalog
                .get(&h.id)
                .is_some_and(|a| snap.policy.serves(a))
        })
        .cloned()
        .collect();
    // The action the query means may be one the policy withdrew: say so, and why, rather than
    // rank a sibling first as if it were the one (or, when it clearly leads, call the served
    // ones a weak match).
    let withdrawn = withdrawn_match(snap, index, query);
    let weak = !withdrawn.as_ref().is_some_and(|(_, _, clear)| *clear)
        && arcane_catalog::is_weak(&served_hits);
    let served: Vec<(&Action, &arcane_catalog::Hit)> = served_hits
        .iter()
        .take(limit)
        .filter_map(|h| snap.catalog.get(&h.id).map(|a| (a, h)))
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
    let mut text = String::new();
    if let Some((a, why, clear)) = &withdrawn {
        let opening = if *clear {
            format!("This asks for {} ({}), which is", code_span(&a.id), a.title)
        } else {
            format!("The closest action, {} ({}), is", code_span(&a.id), a.title)
        };
        text.push_str(&format!(
            "{opening} withdrawn here: {}. It cannot be run; {}\n\n",
            why,
            if results.is_empty() {
                "nothing near it is served either."
            } else {
                "the nearest actions you may run follow."
            }
        ));
    }
    if results.is_empty() {
        text.push_str(&format!("No action matches {echo}. {REPHRASE}\n"));
        text.push_str(&domains_line(snap));
    } else {
        text.push_str(&format!("{} action(s) for {echo}:\n", results.len()));
        let best = served.first().map_or(0.0, |(_, h)| h.coverage);
        for (i, (r, (a, h))) in results.iter().zip(&served).enumerate() {
            // Guidance for the results a model may pick: the first, and those after it that
            // explain as much of the query (siblings), never for a mere alternative.
            let guided = i < GUIDED && (i == 0 || h.coverage >= best);
            // The class says why a call is asked (docs/security.md#impact-classes).
            let flags = if a.safety.destructive {
                " [destructive: confirm]".to_string()
            } else if a.needs_confirmation() && a.safety.impact.asks() {
                format!(" [{}: confirm]", a.safety.impact)
            } else if a.needs_confirmation() {
                " [confirm]".to_string()
            } else if a.safety.mutating {
                " [changes state]".to_string()
            } else {
                String::new()
            };
            text.push_str(&format!(
                "- {} — {}{}",
                r["id"].as_str().unwrap_or_default(),
                r["title"].as_str().unwrap_or_default(),
                flags
            ));
            // No required parameter, no `required:`.
            if !a.request.required.is_empty() {
                text.push_str("; required: ");
                text.push_str(&a.request.required.join(", "));
            }
            // Why a guided result was found; the others are alternatives to it.
            if guided {
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
                text.push_str("; matched: ");
                text.push_str(&matched);
            }
            text.push('\n');
            if guided {
                text.push_str(&guidance(a));
            }
        }
        if weak {
            text.push_str(&weak_notice(&served_hits));
        }
        text.push_str(
            "\nRun one with arcane_execute_action {\"action\": \"<id>\", \"params\": {...}}.",
        );
    }
    // The text is built from catalog words and the escaped query; sanitize is a last guard.
    let mut r = CallToolResult::success(vec![crate::present::blocks::assistant_text(
        arcane_markdown::sanitize(&text).into_owned(),
    )]);
    let mut structured = json!({
        "query": query,
        "count": results.len(),
        "weak": weak,
        "results": results,
    });
    if let Some((a, why, clear)) = &withdrawn {
        structured["withdrawn"] =
            json!({"id": a.id, "title": a.title, "reason": why, "clearly": clear});
    }
    r.structured_content = Some(structured);
    r
}

/// The lines under a guided result: its usage note, its example call and its main optional
/// parameters. The usage note is an operator's text: one line, escaped, whole sentences up to
/// [`USAGE_CHARS`]; the example is a code span.
fn guidance(a: &Action) -> String {
    let mut out = String::new();
    let usage = sentences(a.usage.trim(), USAGE_CHARS);
    if !usage.is_empty() {
        out.push_str("  Usage: ");
        out.push_str(&arcane_markdown::excerpt(&usage, USAGE_CHARS));
        out.push('\n');
    }
    let shown = a.request.example.as_ref().and_then(Value::as_object);
    if let Some(example) = &a.request.example {
        out.push_str("  Example: ");
        out.push_str(&code_span(&example.to_string()));
        out.push('\n');
    }
    let optional = main_optional(a, shown);
    if !optional.is_empty() {
        let names: Vec<String> = optional
            .iter()
            .take(OPTIONAL_SHOWN)
            .map(|n| arcane_markdown::inline_strict(n).into_owned())
            .collect();
        out.push_str("  Optional: ");
        out.push_str(&names.join(", "));
        if optional.len() > OPTIONAL_SHOWN {
            out.push_str(&format!(" (+{} more)", optional.len() - OPTIONAL_SHOWN));
        }
        out.push('\n');
    }
    out
}

/// The optional parameters of an action, the main ones first: those its usage note names
/// (the operator's choice), then path and query parameters (what to act on, filters), then the
/// body's. Left out: what the example already shows, and the configured environment.
fn main_optional<'a>(
    a: &'a Action,
    shown: Option<&serde_json::Map<String, Value>>,
) -> Vec<&'a str> {
    let usage: std::collections::HashSet<&str> = a
        .usage
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .collect();
    let mut optional: Vec<(u8, usize, &str)> = a
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.required && p.location != ParamLocation::Environment)
        .filter(|(_, p)| !shown.is_some_and(|e| e.contains_key(&p.name)))
        .map(|(i, p)| {
            let rank = if usage.contains(p.name.as_str()) {
                0
            } else if matches!(p.location, ParamLocation::Path | ParamLocation::Query) {
                1
            } else {
                2
            };
            (rank, i, p.name.as_str())
        })
        .collect();
    optional.sort();
    optional.into_iter().map(|(_, _, n)| n).collect()
}

/// The first sentences of a text that fit in `max` characters (at least the first, which
/// the caller cuts if it is longer).
fn sentences(text: &str, max: usize) -> String {
    let mut out = String::new();
    for s in text.split_inclusive(". ") {
        if !out.is_empty() && out.chars().count() + s.chars().count() > max {
            break;
        }
        out.push_str(s);
    }
    out.trim_end().to_string()
}

/// The weak-match notice. When the hit the first does not clearly lead is a sibling of one
/// domain explaining as much of the query, which siblings to tell apart (only those: a sibling
/// that explains less, or a changing action a question ruled out, is not offered as close);
/// otherwise the closest domains with an example action each.
fn weak_notice(hits: &[arcane_catalog::Hit]) -> String {
    let sibling = |first: &arcane_catalog::Hit, h: &arcane_catalog::Hit| {
        !h.passed_over && domain_of(h) == domain_of(first) && h.coverage >= first.coverage
    };
    if let Some((first, rest)) = hits.split_first()
        && let Some(rival) = rest.iter().find(|h| !h.passed_over)
        && sibling(first, rival)
    {
        let d = domain_of(first);
        // A third sibling as near the first as twice the lead.
        let near = first.score - 2.0 * arcane_catalog::CLEAR_LEAD * first.score.abs();
        let close: Vec<&str> = std::iter::once(first)
            .chain(std::iter::once(rival))
            .chain(
                rest.iter()
                    .filter(|h| h.id != rival.id && sibling(first, h) && h.score >= near)
                    .take(CLOSEST_DOMAINS - 2),
            )
            .map(|h| h.id.as_str())
            .collect();
        let next = match hits.iter().find(|h| domain_of(h) != d) {
            Some(other) => format!(
                " The next domain: {} (e.g. {}).",
                domain_of(other),
                other.id
            ),
            None => String::new(),
        };
        return format!(
            "\nWeak match: {} are close; pick by their titles and usage, or say more of what \
             is wanted.{next}\n",
            close.join(", "),
        );
    }
    format!(
        "\nWeak match: the first result is not clearly the one meant. {REPHRASE} \
         The closest domains: {}.\n",
        closest_domains(hits)
    )
}

/// A hit's domain: its ID up to the dot.
fn domain_of(h: &arcane_catalog::Hit) -> &str {
    h.id.split('.').next().unwrap_or_default()
}

/// The first [`CLOSEST_DOMAINS`] domains among the hits, best first, each with its best action:
/// where the query probably belongs, with a call to start from.
fn closest_domains(hits: &[arcane_catalog::Hit]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for h in hits {
        let domain = domain_of(h);
        if seen.contains(&domain) {
            continue;
        }
        seen.push(domain);
        out.push(format!("{domain} (e.g. {})", h.id));
        if out.len() == CLOSEST_DOMAINS {
            break;
        }
    }
    out.join(", ")
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
        .output
        .related
        .iter()
        .filter(|id| snap.catalog.get(id).is_some_and(|r| snap.policy.serves(r)))
        .map(String::as_str)
        .collect();
    let mut e = json!({
        "id": a.id,
        "title": a.title,
        "description": a.description,
        "required": a.request.required,
        "mutating": a.safety.mutating,
        "destructive": a.safety.destructive,
        "related": related,
        "schemaUri": format!("arcane://tools/{}", a.id),
    });
    if !a.usage.is_empty() {
        e["usage"] = Value::String(a.usage.clone());
    }
    if let Some(example) = &a.request.example {
        e["example"] = example.clone();
    }
    if full {
        e["inputSchema"] = a.request.input_schema.clone();
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
