//! The text of an object (docs/output-format.md#objects): one `- field: value` line per set
//! field, identity and state first, and a section per longer value (multi-line text, a table of
//! flat rows, JSON).

use serde_json::{Map, Value};

use crate::context::{MAX_ROWS, RenderContext, finish, push_line, table_header, title};
use crate::escape::{
    fenced, heading_text, inline, inline_strict, list_item_key, sanitize, table_cell,
};
use crate::fields::{IDENTITY, STATUS, field_label, field_union};
use crate::value::{
    MAX_INLINE_JSON, byte_text_units, is_one_line_scalar, is_scalar, is_short_list, joined,
    json_block, number_text, number_units, scalar_text, short_json,
};

/// Most entries of a map of scalars written on one line.
const MAX_LINE_MAP: usize = 12;

/// The text of an object (`render_object` for a value that is one).
pub(crate) fn object_text(ctx: &RenderContext<'_>, map: &Map<String, Value>) -> String {
    let mut out = title(ctx.title);
    if let Some(notice) = ctx.notice {
        push_line(&mut out, notice);
    }
    let mut omitted: Vec<&str> = Vec::new();
    let mut fields: Vec<(usize, usize, &String, Value)> = map
        .iter()
        .enumerate()
        .filter_map(|(order, (k, v))| {
            let l = k.to_ascii_lowercase();
            let rank = IDENTITY
                .iter()
                .position(|&x| x == l)
                .or_else(|| STATUS.iter().position(|&x| x == l).map(|i| 100 + i))
                .unwrap_or(1000);
            let mut v = text_form(v)?;
            if rank < 1000 {
                return Some((rank, order, k, v));
            }
            let mut took_out = false;
            for path in ctx.omit {
                let mut names = path.split('.');
                if names.next() != Some(k.as_str()) {
                    continue;
                }
                let rest: Vec<&str> = names.collect();
                if rest.is_empty() {
                    omitted.push(path);
                    return None;
                }
                if omit_path(&mut v, &rest) {
                    omitted.push(path);
                    took_out = true;
                }
            }
            // What is left once a path is taken out may be nothing; otherwise `v` is in its
            // text form already.
            if took_out {
                v = text_form(&v)?;
            }
            Some((rank, order, k, v))
        })
        .collect();
    fields.sort_by_key(|&(rank, order, _, _)| (rank, order));

    let mut lines = FieldLines::default();
    for (_, _, key, v) in &fields {
        lines.field(key, key, v, 0);
    }
    out.push_str(&lines.lines);
    if !lines.lines.is_empty() {
        out.push('\n');
    }
    if !omitted.is_empty() {
        let names: Vec<String> = omitted.iter().map(|p| field_label(p)).collect();
        push_line(&mut out, &format!("Not shown here: {}.", names.join(", ")));
    }
    if map.is_empty() {
        push_line(&mut out, "No fields.");
    } else if fields.is_empty() {
        push_line(&mut out, "No field has a value.");
    }
    out.push_str(&lines.sections);
    finish(out)
}

/// Deepest nesting written as `parent.child` lines; a value below it is written as JSON.
const MAX_FLAT_DEPTH: usize = 3;

/// The `- field: value` lines of an object and the sections of its longer values.
#[derive(Default)]
struct FieldLines {
    lines: String,
    sections: String,
}

impl FieldLines {
    /// Writes one field whose value is already in its text form: `path` is how the line names
    /// it (`parent.child` inside a flattened map), `name` its own key.
    fn field(&mut self, path: &str, name: &str, v: &Value, depth: usize) {
        let line_value = match v {
            Value::String(s) => {
                let clean = sanitize(s);
                if clean.contains('\n') {
                    section(&mut self.sections, path, &fenced(&clean, "text"));
                    return;
                }
                let mut text = inline(&clean).into_owned();
                if let Some(units) = byte_text_units(name, s) {
                    text.push_str(&units);
                }
                text
            }
            Value::Number(n) => number_text(name, n),
            Value::Bool(b) => b.to_string(),
            Value::Null => return,
            Value::Array(a) => match short_list(a) {
                Some(text) => text,
                None => {
                    // A table (in its own section) costs less than JSON from three rows on.
                    if let Some(table) = rows_table(v) {
                        section(&mut self.sections, path, &table);
                        return;
                    }
                    match short_json(v) {
                        Some(text) => text,
                        None => {
                            section(&mut self.sections, path, &json_block(v, false));
                            return;
                        }
                    }
                }
            },
            Value::Object(o) => match map_line(o) {
                Some(text) => text,
                None if depth < MAX_FLAT_DEPTH && flattens(o) => {
                    self.flattened(path, o, depth);
                    return;
                }
                None => match short_json(v) {
                    Some(text) => text,
                    None => {
                        section(&mut self.sections, path, &json_block(v, false));
                        return;
                    }
                },
            },
        };
        self.line(path, &line_value);
    }

    /// A map of maps (`networkSettings.networks.<name>`): its scalars on the map's own line,
    /// each nested value on a `parent.child` line of its own.
    fn flattened(&mut self, path: &str, map: &Map<String, Value>, depth: usize) {
        let scalars: Map<String, Value> = map
            .iter()
            .filter(|(_, v)| is_scalar(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(text) = map_line(&scalars) {
            self.line(path, &text);
        }
        for (k, v) in map.iter().filter(|(_, v)| !is_scalar(v)) {
            self.field(&format!("{path}.{k}"), k, v, depth + 1);
        }
    }

    fn line(&mut self, path: &str, text: &str) {
        self.lines.push_str("- ");
        self.lines.push_str(&list_item_key(path));
        self.lines.push(':');
        if !text.is_empty() {
            self.lines.push(' ');
            self.lines.push_str(text);
        }
        self.lines.push('\n');
    }
}

/// A short list of one-line scalars on its field's line, comma-separated (`names`, `repoTags`).
fn short_list(a: &[Value]) -> Option<String> {
    is_short_list(a).then(|| joined(a, false))
}

/// Whether a map that is not one `key=value` line can be written as `parent.child` lines: a
/// few entries, each key a plain name (letters, digits, `_`, `-`), so that a dotted path reads
/// back unambiguously.
fn flattens(map: &Map<String, Value>) -> bool {
    map.len() <= MAX_LINE_MAP
        && map.keys().all(|k| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// Takes the field at `path` out of `v` (out of each element when `v` is a list); whether
/// anything was there.
fn omit_path(v: &mut Value, path: &[&str]) -> bool {
    match (v, path) {
        (Value::Array(items), _) => {
            // Every element, not only up to the first that had the field.
            let mut found = false;
            for item in items {
                found |= omit_path(item, path);
            }
            found
        }
        (Value::Object(map), [last]) => map.remove(*last).is_some(),
        (Value::Object(map), [first, rest @ ..]) => map
            .get_mut(*first)
            .is_some_and(|child| omit_path(child, rest)),
        _ => false,
    }
}

/// A nested value as an object's text shows it: unset values left out at every depth (a map
/// left empty is itself unset). `None` when nothing is left.
fn text_form(v: &Value) -> Option<Value> {
    let out = match v {
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| text_form(x).unwrap_or_else(|| x.clone()))
                .collect(),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter_map(|(k, x)| Some((k.clone(), text_form(x)?)))
                .collect(),
        ),
        other => other.clone(),
    };
    (!is_unset(&out)).then_some(out)
}

/// Go's zero time: what Arcane sends for a moment that has not happened (a container that never
/// finished).
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A value that says nothing: null, empty text, an empty list or map, or Go's zero time. An
/// object's text leaves such fields out (they stay in `structuredContent`).
fn is_unset(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty() || s == ZERO_TIME,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// A list of at least three flat objects (network endpoints, mounts…) as a table with a column
/// per field: the field names are written once instead of once per element. `None` when an
/// element is not an object, holds a multi-line value or a nested one other than a short list
/// of one-line scalars (written comma-separated in its cell), or the list is longer than a table
/// shows ([`MAX_ROWS`]); the caller then writes JSON. Cells are never trimmed: this is the full
/// item.
fn rows_table(v: &Value) -> Option<String> {
    let items = v.as_array()?;
    if items.len() < 3 || items.len() > MAX_ROWS {
        return None;
    }
    let objects: Vec<&Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    let flat = objects.iter().all(|o| {
        o.values().all(|x| match x {
            Value::Array(a) => is_short_list(a),
            x => is_one_line_scalar(x),
        })
    });
    let columns = field_union(&objects);
    if !flat || columns.is_empty() || columns.iter().any(|c| sanitize(c).is_empty()) {
        return None;
    }
    let mut out = String::new();
    table_header(&mut out, &columns);
    for obj in &objects {
        out.push('|');
        for col in &columns {
            match obj.get(col.as_str()) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => out.push_str(" \"\""),
                Some(Value::Array(a)) => {
                    if !a.is_empty() {
                        out.push(' ');
                        out.push_str(&joined(a, true));
                    }
                }
                Some(Value::Number(n)) => {
                    out.push(' ');
                    out.push_str(&number_text(col, n));
                }
                Some(x) => {
                    out.push(' ');
                    let text = scalar_text(x);
                    out.push_str(&table_cell(&sanitize(&text)));
                    if let Some(units) = byte_text_units(col, &text) {
                        out.push_str(&units);
                    }
                }
            }
            out.push_str(" |");
        }
        out.push('\n');
    }
    Some(out)
}

/// A small map of scalars on one line, `key=value, key=value` (labels, a state, a restart
/// policy): the cheapest form that keeps every entry. `None` when the map is large, holds a
/// nested value, or a key or value would make the line ambiguous (`=` in a key, `, ` or a line
/// break anywhere); the caller then writes JSON.
fn map_line(map: &Map<String, Value>) -> Option<String> {
    if map.len() > MAX_LINE_MAP || !map.values().all(is_scalar) {
        return None;
    }
    let mut parts = Vec::with_capacity(map.len());
    let mut chars = 0;
    for (k, v) in map.iter().filter(|(_, v)| !is_unset(v)) {
        let k = sanitize(k);
        let value = scalar_text(v);
        let value = sanitize(&value);
        if k.is_empty() || k.contains(['=', '\n']) || k.contains(", ") {
            return None;
        }
        if value.contains('\n') || value.contains(", ") {
            return None;
        }
        chars += k.chars().count() + value.chars().count() + 3;
        if chars > MAX_INLINE_JSON {
            return None;
        }
        let mut part = inline_strict(&format!("{k}={value}")).into_owned();
        let units = match v {
            Value::Number(n) => number_units(&k, n),
            _ => byte_text_units(&k, &value),
        };
        if let Some(units) = units {
            part.push_str(&units);
        }
        parts.push(part);
    }
    // A map of unset values only is written as JSON, which shows what it holds.
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn section(sections: &mut String, key: &str, block: &str) {
    sections.push_str("## ");
    sections.push_str(&heading_text(key));
    sections.push_str("\n\n");
    sections.push_str(block);
    sections.push('\n');
}
