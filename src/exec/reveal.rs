//! Secrets that are the very purpose of an action (a new API key's `key`, swarm join tokens):
//! the overlay field `revealsSecret` names them, and the result tells the user they are shown
//! once. Text redaction elsewhere must leave exactly these fields of these actions alone.

use serde_json::Value;

use crate::catalog::Action;

/// The revealed fields present (and non-empty) in a result: top-level fields of the answer.
pub fn revealed<'a>(action: &'a Action, value: &Value) -> Vec<&'a str> {
    action
        .reveals_secret
        .iter()
        .filter(|f| {
            value.get(f.as_str()).is_some_and(|v| match v {
                Value::Null => false,
                Value::String(s) => !s.is_empty(),
                Value::Array(xs) => !xs.is_empty(),
                _ => true,
            })
        })
        .map(String::as_str)
        .collect()
}

/// The note under a result that reveals a secret, if it does.
pub fn note(action: &Action, value: &Value) -> Option<String> {
    let fields = revealed(action, value);
    if fields.is_empty() {
        return None;
    }
    let names: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
    Some(format!(
        "**Shown once: store it now.** {} {} a secret Arcane will not show again; keep it in a \
         password manager or secret store, never in chat logs or files under version control.",
        names.join(", "),
        if fields.len() == 1 { "is" } else { "are" }
    ))
}
