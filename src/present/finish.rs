//! The last step of a successful call: what the text gains after rendering (docs/output-format.md).
//!
//! * the `Next steps` section, named for the calling surface, never suggesting a withdrawn
//!   action, marked for destructive and safe-mode suggestions;
//! * a `resource_link` to the object's resource for `environment.get`, `container.get` and
//!   `project.get` (see [`crate::present::links`]);
//! * one more pass of the sanitizer over the finished text, whoever wrote it.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::next_steps::{Naming, next_steps};
use crate::load::snapshot::Snapshot;
use crate::surface::call_name;
use arcane_catalog::Action;
use arcane_markdown::sanitize;

/// The fields of Arcane's answer that the action's follow-up conditions read, at their dotted
/// paths: taken before the output schema is fitted and a flat client profile flattens the
/// structuredContent, so that the next steps are the same in every profile. `None` when the
/// action has no conditions.
pub fn condition_view(action: &Action, value: &Value) -> Option<Value> {
    let mut view = Map::new();
    for c in action
        .output
        .follow_ups
        .iter()
        .filter_map(|f| f.when.as_ref())
    {
        let mut at = Some(value);
        for key in c.field.split('.') {
            at = at.and_then(|v| v.get(key));
        }
        let Some(found) = at else { continue };
        let keys: Vec<&str> = c.field.split('.').collect();
        insert_at(&mut view, &keys, found.clone());
    }
    (!view.is_empty()).then_some(Value::Object(view))
}

/// Puts `value` at the path `keys` of `map`, making the maps on the way.
fn insert_at(map: &mut Map<String, Value>, keys: &[&str], value: Value) {
    match keys {
        [] => {}
        [last] => {
            map.insert((*last).to_string(), value);
        }
        [first, rest @ ..] => {
            let next = map
                .entry((*first).to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !next.is_object() {
                *next = Value::Object(Map::new());
            }
            if let Value::Object(inner) = next {
                insert_at(inner, rest, value);
            }
        }
    }
}

/// Adds next steps and the resource link to a successful result and sanitizes its text.
/// `facts` is what [`condition_view`] took of Arcane's answer.
pub fn finish(
    snap: &Snapshot,
    action: &Action,
    params: &Map<String, Value>,
    default_environment: &str,
    facts: Option<&Value>,
    mut result: CallToolResult,
) -> CallToolResult {
    let name = |a: &Action| call_name(snap.surface, a);
    let served = |a: &Action| snap.policy.serves(a);
    let naming = Naming {
        name: &name,
        served: &served,
        safe_mode: snap.policy.safe_mode,
        asks: snap.policy.confirmation == arcane_catalog::Confirmation::Ask,
    };
    let section = next_steps(action, &snap.catalog, &naming, facts);
    if let Some(ContentBlock::Text(t)) = result.content.first_mut() {
        if let Some(section) = &section {
            t.text.push_str(section);
        }
        if let std::borrow::Cow::Owned(clean) = sanitize(&t.text) {
            t.text = clean;
        }
    }
    if let Some(link) = crate::present::links::result_link(action, params, default_environment) {
        result.content.push(ContentBlock::resource_link(link));
    }
    result
}
