//! The last step of a successful call: what the text gains after rendering (docs/output-format.md).
//!
//! * the `Next steps` section, named for the calling surface, never suggesting a withdrawn
//!   action, marked for destructive and safe-mode suggestions;
//! * a `resource_link` to the object's resource for `environment.get`, `container.get` and
//!   `project.get` (see [`crate::resources::links`]);
//! * one more pass of the sanitizer over the finished text, whoever wrote it.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::next_steps::{Naming, next_steps};
use crate::snapshot::Snapshot;
use crate::surface::call_name;
use arcane_catalog::Action;
use arcane_markdown::sanitize;

/// Adds next steps and the resource link to a successful result and sanitizes its text.
pub fn finish(
    snap: &Snapshot,
    action: &Action,
    params: &Map<String, Value>,
    default_environment: &str,
    mut result: CallToolResult,
) -> CallToolResult {
    let name = |a: &Action| call_name(snap.surface, a);
    let served = |a: &Action| snap.policy.serves(a);
    let naming = Naming {
        name: &name,
        served: &served,
        safe_mode: snap.policy.safe_mode,
    };
    let section = next_steps(
        action,
        &snap.catalog,
        &naming,
        result.structured_content.as_ref(),
    );
    if let Some(ContentBlock::Text(t)) = result.content.first_mut() {
        if let Some(section) = &section {
            t.text.push_str(section);
        }
        if let std::borrow::Cow::Owned(clean) = sanitize(&t.text) {
            t.text = clean;
        }
    }
    if let Some(link) = crate::resources::links::result_link(action, params, default_environment) {
        result.content.push(ContentBlock::resource_link(link));
    }
    result
}
