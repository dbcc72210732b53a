//! The envelope members beside a list's items or a lone value (`counts`, `warnings`,
//! `failedEnvironments`…), one short paragraph each.

use serde_json::{Map, Value};

use crate::context::push_line;
use crate::escape::{fenced, inline, inline_strict, list_item_key, list_item_value, sanitize};
use crate::value::{is_scalar, number_text, scalar_text, trim_chars};

/// Summarizes envelope members other than `skip` (`counts`, `warnings`,
/// `failedEnvironments`…), one short paragraph each.
pub(crate) fn envelope(out: &mut String, map: &Map<String, Value>, skip: &[&str]) {
    for (key, v) in map {
        if skip.contains(&key.as_str()) || v.is_null() {
            continue;
        }
        // The label opens a paragraph.
        let label = if sanitize(key).is_empty() {
            "\"\"".into()
        } else {
            list_item_key(key)
        };
        let line = match v {
            Value::Object(o) if o.values().all(is_scalar) => {
                let parts: Vec<String> = o
                    .iter()
                    .filter(|(_, x)| !x.is_null())
                    .map(|(k, x)| {
                        let val = match x {
                            Value::Number(n) => number_text(k, n),
                            other => inline_strict(&scalar_text(other)).into_owned(),
                        };
                        format!("{} {val}", inline_strict(k))
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                format!("{label}: {}.", parts.join(", "))
            }
            Value::Array(a) if a.is_empty() => continue,
            Value::Object(o) if o.is_empty() => continue,
            Value::Array(a) if a.iter().all(is_scalar) => {
                let mut s = format!("{label} ({}):\n\n", a.len());
                for x in a.iter().take(5) {
                    let text = sanitize(&scalar_text(x)).into_owned();
                    let (head, cut) = trim_chars(&text, 200);
                    s.push_str("- ");
                    s.push_str(&list_item_value(head));
                    if cut {
                        s.push('…');
                    }
                    s.push('\n');
                }
                if a.len() > 5 {
                    s.push_str(&format!("- … and {} more\n", a.len() - 5));
                }
                s.pop();
                s
            }
            Value::Array(a) => format!("{label}: {} entries.", a.len()),
            Value::Object(o) => format!("{label}: an object with {} field(s).", o.len()),
            Value::String(s) if sanitize(s).contains('\n') => {
                format!("{label}:\n\n{}", fenced(s, "text").trim_end())
            }
            Value::Number(n) => format!("{label}: {}", number_text(key, n)),
            other => format!("{label}: {}", inline(&scalar_text(other))),
        };
        push_line(out, &line);
    }
}
