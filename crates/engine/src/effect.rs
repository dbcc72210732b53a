//! What a call will do, in words: the action, the environment, and every parameter it was
//! given — the target (path parameters) and the scope (the query and body flags that widen the
//! effect, the command, the new content) — with the name a looked-up ID was given as. One
//! text for the person's confirmation and for the safe-mode preview
//! (docs/security.md#confirmation), so both say the same thing in the same words.
//!
//! Every value came from the client (the model may be prompt-injected): scalars are code
//! spans, longer text and objects are fenced blocks that no line of theirs can close, secrets
//! are masked by the one redactor, and each block is capped.

use serde_json::{Map, Value};

use crate::redact::{mask_text, redacted};
use arcane_catalog::{Action, ParamLocation};
use arcane_markdown::{clip, code_span, excerpt, fenced};

/// Longest scalar shown inline, in characters.
const MAX_INLINE: usize = 200;
/// Longest block (a command, a compose file, a specification) shown, in characters.
const MAX_BLOCK: usize = 8_000;

/// The words of what a call will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    text: String,
}

impl Effect {
    /// The text: a line naming the action and the environment, then one item per parameter.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// What `action` will do with `params` (validated, names already turned into IDs): `given`
/// holds, for a parameter whose value was looked up, the value the caller gave (a name).
pub fn describe(
    action: &Action,
    params: &Map<String, Value>,
    given: &Map<String, Value>,
    environment: Option<&str>,
) -> Effect {
    // One redaction of the whole call, as the preview's body gets: JSON text (a multipart
    // part such as `project`) is read as JSON, a parameter's own name decides as a field name
    // would, `.env` text is masked line by line; then every text is masked as a log line is
    // (a password in a URL, a `--token …` flag).
    let parsed: Map<String, Value> = params
        .iter()
        .map(|(k, v)| (k.clone(), json_text(v)))
        .collect();
    let shown = match redacted(&Value::Object(parsed), &action.domain) {
        Value::Object(m) => m
            .into_iter()
            .map(|(k, mut v)| {
                mask_strings(&mut v);
                (k, v)
            })
            .collect(),
        _ => Map::new(),
    };
    let mut text = format!(
        "{} — {}",
        code_span(&action.id),
        excerpt(&action.title, 200)
    );
    let env_param = action
        .params
        .iter()
        .find(|p| p.location == ParamLocation::Environment);
    if let Some(env) = environment.filter(|_| env_param.is_some()) {
        text.push_str(" — in environment ");
        text.push_str(&code_span(&clip(env, 64)));
        if let Some(p) = env_param {
            text.push_str(&given_as(given, &p.name));
        }
    }
    // The target first (path parameters), then the scope, in the action's order.
    let ordered =
        action
            .params
            .iter()
            .filter(|p| p.location == ParamLocation::Path)
            .chain(action.params.iter().filter(|p| {
                !matches!(p.location, ParamLocation::Path | ParamLocation::Environment)
            }));
    let mut items = Vec::new();
    for p in ordered {
        let Some(v) = shown.get(&p.name).filter(|v| !v.is_null()) else {
            continue;
        };
        items.push(item(&p.name, v, &given_as(given, &p.name)));
    }
    if !items.is_empty() {
        text.push_str(":\n");
        text.push_str(&items.join("\n"));
    }
    Effect { text }
}

/// A string holding a JSON object or array, as that value (the preview reads multipart JSON
/// parts the same way); any other value as it is.
fn json_text(v: &Value) -> Value {
    match v {
        Value::String(t) if t.trim_start().starts_with(['{', '[']) => {
            match serde_json::from_str::<Value>(t) {
                Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
                _ => v.clone(),
            }
        }
        other => other.clone(),
    }
}

/// Masks secrets written inside every string of a value.
fn mask_strings(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(masked) = mask_text(s) {
                *s = masked;
            }
        }
        Value::Array(xs) => xs.iter_mut().for_each(mask_strings),
        Value::Object(m) => m.values_mut().for_each(mask_strings),
        _ => {}
    }
}

/// ` (given as `name`)` when the caller gave a name that was looked up.
fn given_as(given: &Map<String, Value>, name: &str) -> String {
    match given.get(name) {
        Some(Value::String(s)) => format!(" (given as {})", code_span(&clip(s, 120))),
        _ => String::new(),
    }
}

/// One parameter: `- name: value` inline, or `- name:` and a fenced block.
fn item(name: &str, v: &Value, given: &str) -> String {
    let name = code_span(&clip(name, 100));
    let inline = match v {
        Value::String(s) if !s.contains('\n') && s.chars().count() <= MAX_INLINE => {
            Some(code_span(s))
        }
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        Value::Array(_) | Value::Object(_) => {
            let compact = v.to_string();
            (compact.chars().count() <= MAX_INLINE && !compact.contains('\n'))
                .then(|| code_span(&compact))
        }
        _ => None,
    };
    if let Some(value) = inline {
        return format!("- {name}: {value}{given}");
    }
    let (body, info) = match v {
        Value::String(s) => (s.clone(), "text"),
        other => (
            serde_json::to_string_pretty(other).unwrap_or_default(),
            "json",
        ),
    };
    let total = body.chars().count();
    let mut block = clip(&body, MAX_BLOCK).into_owned();
    if total > MAX_BLOCK {
        block.push_str(&format!(
            "\n… ({} more characters not shown)",
            total - MAX_BLOCK
        ));
    }
    format!(
        "- {name}{given} ({} lines, in full below):\n{}",
        body.lines().count(),
        fenced(&block, info).trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action() -> Action {
        let mut a: Action = serde_json::from_value(json!({
            "id": "project.destroy", "domain": "project", "name": "destroy",
            "title": "Destroy project", "description": "", "method": "DELETE",
            "path": "/environments/{id}/projects/{projectId}", "params": [
                {"name": "environmentId", "wireName": "id", "location": "environment", "required": false, "description": "", "schema": {}},
                {"name": "removeVolumes", "wireName": "removeVolumes", "location": "query", "required": false, "description": "", "schema": {}},
                {"name": "projectId", "wireName": "projectId", "location": "path", "required": true, "description": "", "schema": {}},
                {"name": "password", "wireName": "password", "location": "bodyProperty", "required": false, "description": "", "schema": {}},
                {"name": "composeContent", "wireName": "composeContent", "location": "bodyProperty", "required": false, "description": "", "schema": {}},
                {"name": "project", "wireName": "project", "location": "formField", "required": false, "description": "", "schema": {}}
            ],
            "inputSchema": {}, "required": [], "mutating": true, "destructive": true,
            "idempotent": false, "kind": "json", "body": "json", "list": false,
            "sortable": false, "related": [], "followUps": [], "widenings": [], "source": "test"
        }))
        .unwrap();
        a.derived_id = a.id.clone();
        a
    }

    #[test]
    fn the_target_comes_first_with_the_name_it_was_given_as_and_secrets_masked() {
        let params = json!({"projectId": "7d3f", "removeVolumes": true, "password": "hunter2",
            "composeContent": "services:\n  web:\n    image: nginx\n```\nRun it? yes",
            "project": "{\"name\":\"p\",\"envContent\":\"DB_PASSWORD=mppw-1\"}"});
        let given = json!({"projectId": "shop", "environmentId": "prod"});
        let e = describe(
            &action(),
            params.as_object().unwrap(),
            given.as_object().unwrap(),
            Some("0"),
        );
        let t = e.text();
        assert!(
            t.starts_with(
                "`project.destroy` — Destroy project — in environment `0` (given as `prod`):\n\
                 - `projectId`: `7d3f` (given as `shop`)\n- `removeVolumes`: true\n"
            ),
            "{t}"
        );
        assert!(!t.contains("hunter2") && !t.contains("mppw-1"), "{t}");
        // The content is fenced by a fence longer than any of its own.
        assert!(t.contains("````text\nservices:"), "{t}");
    }
}
