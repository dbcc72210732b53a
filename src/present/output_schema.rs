//! The `Output schema` note of a result the catalog's [`arcane_catalog::OutputFitter`] adjusted
//! (docs/output-schemas.md): where, and Arcane's original values.

use std::fmt::Write as _;

use serde_json::Value;

use arcane_catalog::Adjustment;
use arcane_markdown::code_span;

/// At most this many adjusted parts are listed in the note.
pub const NOTE_MAX_PARTS: usize = 20;

/// Each original value in the note is cut at this many bytes of JSON.
pub const NOTE_MAX_VALUE_BYTES: usize = 4000;

/// The `Output schema` note appended to the text block when [`OutputFitter::fit`] adjusted
/// something (empty string when nothing was): the JSON Pointer of each adjusted part and
/// Arcane's original value there, at most [`NOTE_MAX_PARTS`] parts (then how many more), each
/// value's JSON cut at [`NOTE_MAX_VALUE_BYTES`] bytes (saying so).
///
/// Pointers and values are written as code spans with a fence longer than any backtick run
/// inside, so nothing in them forms Markdown; the server's final pass over the text (docs/escaping.md:
/// control characters, bidi controls…) still applies to it.
pub fn note(adjustments: &[Adjustment]) -> String {
    if adjustments.is_empty() {
        return String::new();
    }
    let mut s = String::from("**Output schema**\n");
    let _ = writeln!(
        s,
        "{} part(s) of Arcane's answer did not fit this action's output schema; Arcane's original values:",
        adjustments.len()
    );
    for a in adjustments.iter().take(NOTE_MAX_PARTS) {
        let (json, cut) = cut_json(&a.original, NOTE_MAX_VALUE_BYTES);
        let pointer = if a.pointer.is_empty() {
            "(the whole value)".to_string()
        } else {
            code_span(&a.pointer)
        };
        let _ = write!(
            s,
            "- {pointer} (expected {}): {}",
            a.expected,
            code_span(&json)
        );
        if let Some(total) = cut {
            let _ = write!(s, " (cut at {NOTE_MAX_VALUE_BYTES} of {total} bytes)");
        }
        s.push('\n');
    }
    if adjustments.len() > NOTE_MAX_PARTS {
        let _ = writeln!(
            s,
            "- … and {} more part(s) not listed.",
            adjustments.len() - NOTE_MAX_PARTS
        );
    }
    s
}

/// Compact JSON of `v`, cut at `max` bytes on a character boundary; `Some(total)` when cut.
pub fn cut_json(v: &Value, max: usize) -> (String, Option<usize>) {
    let json = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    if json.len() <= max {
        return (json, None);
    }
    let total = json.len();
    let mut end = max;
    while !json.is_char_boundary(end) {
        end -= 1;
    }
    (format!("{}…", &json[..end]), Some(total))
}
