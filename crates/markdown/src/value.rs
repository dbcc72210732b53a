//! How one value from Arcane is written inside a text: scalars, numbers with human units for
//! byte counts, short lists, and JSON that survives `sanitize` unchanged.

use serde_json::Value;

use crate::escape::{code_span, fenced, inline_strict, sanitize, table_cell_strict};
use crate::fields::is_identifier_field;
use crate::units::{human_bytes, is_byte_field};

/// Short lists of scalars (`names`, `repoTags`) stay on the field's line up
/// to this many elements; longer ones get a JSON block.
const MAX_SHORT_LIST: usize = 10;

/// Longest nested value, in characters, written on its field's line (compact JSON or a
/// `key=value` map); longer ones get a JSON block.
pub(crate) const MAX_INLINE_JSON: usize = 240;

pub(crate) fn is_scalar(v: &Value) -> bool {
    !(v.is_array() || v.is_object())
}

pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn trim_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    }
}

/// A number as Arcane sent it, with human units appended for byte counts
/// (some encoders send whole byte counts as floats: `1.5e9`).
pub(crate) fn number_text(field: &str, n: &serde_json::Number) -> String {
    if let Some(t) = time_text(field, n) {
        return t;
    }
    format!("{n}{}", number_units(field, n).unwrap_or_default())
}

/// ` (1.5 GB)` when `n` is a whole byte count of at least 1000 in a byte-count field.
pub(crate) fn number_units(field: &str, n: &serde_json::Number) -> Option<String> {
    let b = n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    })?;
    (b >= 1000 && is_byte_field(field) && !is_identifier_field(field))
        .then(|| format!(" ({})", human_bytes(b)))
}

/// Fields whose numbers are times: Docker's `Created` (seconds), and names that say so.
fn is_time_field(field: &str) -> bool {
    let f = field.to_ascii_lowercase();
    matches!(
        f.as_str(),
        "created" | "createdat" | "updatedat" | "time" | "timestamp"
    ) || f.ends_with("timestamp")
}

/// `2024-04-13 09:20 UTC` for a Unix time in seconds (or milliseconds) between 2000 and
/// 2100 in a time field, in place of the count (`structuredContent` keeps the number): a
/// count in such a field outside those years is left as it is.
fn time_text(field: &str, n: &serde_json::Number) -> Option<String> {
    if !is_time_field(field) {
        return None;
    }
    let v = n.as_i64()?;
    const FROM: i64 = 946_684_800; // 2000-01-01
    const TO: i64 = 4_102_444_800; // 2100-01-01
    let secs = match v {
        FROM..=TO => v,
        _ if (FROM * 1000..=TO * 1000).contains(&v) => v / 1000,
        _ => return None,
    };
    let t = chrono::DateTime::from_timestamp(secs, 0)?;
    Some(t.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// The human units of a byte count Arcane sent as decimal text: compose-go writes compose
/// byte sizes (`mem_limit`, `shm_size`…) as quoted strings (docs/arcane-wire.md#compose-byte-sizes).
/// `None` unless the field is a byte count, not an identifier, and the text is all digits.
pub(crate) fn byte_text_units(field: &str, s: &str) -> Option<String> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let b: u64 = s.parse().ok()?;
    (b >= 1000 && is_byte_field(field) && !is_identifier_field(field))
        .then(|| format!(" ({})", human_bytes(b)))
}

/// At most [`MAX_SHORT_LIST`] one-line scalars: a list that fits on a line or in a cell.
pub(crate) fn is_short_list(a: &[Value]) -> bool {
    a.len() <= MAX_SHORT_LIST && a.iter().all(is_one_line_scalar)
}

/// A scalar whose text stays on one line once sanitized.
pub(crate) fn is_one_line_scalar(x: &Value) -> bool {
    is_scalar(x) && !sanitize(&scalar_text(x)).contains('\n')
}

/// A short list's elements, comma-separated, each escaped for running text or, with `table`,
/// for a table cell.
pub(crate) fn joined(a: &[Value], table: bool) -> String {
    a.iter()
        .map(|x| list_element(&scalar_text(x), table))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One value of a comma-separated short list; an empty one is shown as `""`
/// so that the list keeps its shape.
pub(crate) fn list_element(text: &str, table: bool) -> String {
    if sanitize(text).is_empty() {
        "\"\"".to_owned()
    } else if table {
        table_cell_strict(text).into_owned()
    } else {
        inline_strict(text).into_owned()
    }
}

/// A nested value as compact JSON in a code span on the field's line, when it is short
/// (a port mapping, a small list of objects); `None` when it is longer than
/// [`MAX_INLINE_JSON`] characters.
pub(crate) fn short_json(v: &Value) -> Option<String> {
    let text = json_text(v, false);
    (text.chars().count() <= MAX_INLINE_JSON).then(|| code_span(&text))
}

/// JSON in a fenced block: pretty for a lone value, compact inside an object's
/// text (indentation costs a model tokens and carries nothing). Characters that
/// `sanitize` would drop or turn into line breaks can only sit inside JSON
/// strings; they are written as `\uXXXX` escapes (as serde_json already does
/// for C0 controls), so the block stays valid JSON that parses back to
/// Arcane's exact value.
pub(crate) fn json_block(v: &Value, pretty: bool) -> String {
    fenced(&json_text(v, pretty), "json")
}

/// JSON text of a value (pretty or compact) in which every character `sanitize` would drop or
/// rewrite is a `\uXXXX` escape, so the text survives [`finish`](crate::context::finish) unchanged.
fn json_text(v: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    } else {
        v.to_string()
    };
    crate::escape::escape_unsafe(&text, false).into_owned()
}
