//! Which renderer a result gets: a list (`items`), a lone value (`value`) or an object; and the
//! text of a lone value.

use serde_json::{Map, Value};

use crate::context::{RenderContext, finish, push_line, title};
use crate::envelope::envelope;
use crate::escape::{fenced, list_item_value, sanitize};
use crate::list::render_list;
use crate::object::object_text;
use crate::value::json_block;

/// Envelope members that may stand beside a lone `value`.
const ENVELOPE_MEMBERS: [&str; 4] = ["pagination", "counts", "warnings", "failedEnvironments"];

/// Renders any result value: a list (`items`), a lone value (`value`) or an
/// object.
///
/// ```
/// use arcane_markdown::{render_value, RenderContext};
/// let ctx = RenderContext { title: "Version", ..Default::default() };
/// let text = render_value(&ctx, &serde_json::json!({"value": "1.2.3"}));
/// assert_eq!(text, "# Version\n\n1.2.3\n");
/// ```
pub fn render_value(ctx: &RenderContext<'_>, value: &Value) -> String {
    match value {
        Value::Object(map) if map.get("items").is_some_and(Value::is_array) => {
            render_list(ctx, value)
        }
        Value::Object(map)
            if map.contains_key("value")
                && map
                    .keys()
                    .all(|k| k == "value" || ENVELOPE_MEMBERS.contains(&k.as_str())) =>
        {
            render_lone(ctx, map)
        }
        Value::Object(_) => render_object(ctx, value),
        Value::Array(_) => render_list(ctx, value),
        other => {
            let mut map = Map::new();
            map.insert("value".to_owned(), other.clone());
            render_lone(ctx, &map)
        }
    }
}

fn render_lone(ctx: &RenderContext<'_>, map: &Map<String, Value>) -> String {
    let mut out = title(ctx.title);
    match map.get("value").unwrap_or(&Value::Null) {
        Value::String(s) if sanitize(s).contains('\n') => out.push_str(&fenced(s, "text")),
        // The value opens its own paragraph, where `#`, `>`, `-`… start blocks.
        Value::String(s) => push_line(&mut out, &list_item_value(s)),
        Value::Null => push_line(&mut out, "No value."),
        v @ (Value::Array(_) | Value::Object(_)) => out.push_str(&json_block(v, true)),
        v => push_line(&mut out, &v.to_string()),
    }
    envelope(&mut out, map, &["value"]);
    finish(out)
}

/// Renders an object: title, one `- field: value` line per field (identity
/// and status first, unset values omitted at every depth, small maps as
/// `key=value` pairs, maps of maps as
/// `parent.child` lines, short nested values as compact JSON), then a fenced
/// section per multi-line text, a table per list of flat objects and a compact
/// JSON block per longer nested value (`docs/output-format.md#objects`).
///
/// ```
/// use arcane_markdown::{render_object, RenderContext};
/// let ctx = RenderContext { title: "Volume data", ..Default::default() };
/// let v = serde_json::json!({"driver": "local", "name": "data", "size": 1500000000, "note": null});
/// assert_eq!(
///     render_object(&ctx, &v),
///     "# Volume data\n\n- name: data\n- driver: local\n- size: 1500000000 (1.5 GB)\n"
/// );
/// ```
pub fn render_object(ctx: &RenderContext<'_>, value: &Value) -> String {
    match value.as_object() {
        Some(map) => object_text(ctx, map),
        None => render_value(ctx, value),
    }
}
