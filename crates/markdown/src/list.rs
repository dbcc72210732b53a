//! The text of a list page (docs/output-format.md#lists-and-pages): the count and paging line, a table of
//! chosen columns (or a bullet list of scalars), notes on cut rows and left-out fields.

use serde_json::{Map, Value};

use crate::context::{MAX_ROWS, RenderContext, RestHint, finish, push_line, table_header, title};
use crate::envelope::envelope;
use crate::escape::{list_item_value, sanitize, table_cell};
use crate::fields::{IDENTITY, STATUS, field_label, field_union, is_identifier_field};
use crate::value::{
    byte_text_units, is_scalar, list_element, number_text, scalar_text, trim_chars,
};

/// Most columns chosen by name when the action declares none.
const MAX_COLUMNS: usize = 6;

/// Longest table cell, in characters, before it is trimmed with `…` (IDs and
/// names are never trimmed).
const MAX_CELL_CHARS: usize = 60;

/// Renders a list page: title, count and page, a table of at most
/// [`MAX_ROWS`] rows, a note on cut rows, other envelope members, and a note
/// listing the fields the table left out.
///
/// Accepts the unwrapped envelope (`{"items": […], "pagination": {…}, …}`)
/// or a bare array.
///
/// ```
/// use arcane_markdown::{render_list, RenderContext};
/// let ctx = RenderContext { title: "Volumes", ..Default::default() };
/// let v = serde_json::json!({"items": [{"name": "data", "driver": "local"}]});
/// assert_eq!(
///     render_list(&ctx, &v),
///     "# Volumes\n\n1 item(s)\n\n| name | driver |\n|---|---|\n| data | local |\n"
/// );
/// ```
pub fn render_list(ctx: &RenderContext<'_>, value: &Value) -> String {
    let empty = Map::new();
    let (items, envelope_map): (&[Value], &Map<String, Value>) = match value {
        Value::Array(a) => (a, &empty),
        Value::Object(m) => (
            m.get("items")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
            m,
        ),
        _ => (&[][..], &empty),
    };
    let pagination = envelope_map.get("pagination").and_then(Value::as_object);

    let mut out = title(ctx.title);
    if let Some(notice) = ctx.notice {
        push_line(&mut out, notice);
    }
    let total = pagination
        .and_then(|p| p.get("totalItems"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if items.is_empty() && total == 0 {
        push_line(&mut out, ctx.empty_hint.unwrap_or("No items."));
    } else {
        push_line(
            &mut out,
            &count_line(items.len(), pagination, ctx.page_start),
        );
    }

    if items.is_empty() {
        if total > 0 {
            match ctx.page_start {
                Some(start) if start >= total => push_line(
                    &mut out,
                    &format!(
                        "No items on this page: `start` {start} is past the last of the {total} \
                         item(s). Call again with `start` 0 to read the first page."
                    ),
                ),
                _ => push_line(&mut out, "No items on this page."),
            }
        }
    } else if let Some(columns) = table_columns(ctx, items) {
        table(&mut out, ctx, items, &columns, pagination);
    } else {
        // Lists of scalars (or mixed) read best as a bullet list.
        let shown = &items[..items.len().min(MAX_ROWS)];
        for item in shown {
            out.push_str("- ");
            let text = match item {
                Value::String(s) => list_item_value(s).into_owned(),
                other => list_item_value(&other.to_string()).into_owned(),
            };
            out.push_str(&text);
            out.push('\n');
        }
        out.push('\n');
        cut_note(&mut out, ctx, items.len(), pagination);
    }

    envelope(&mut out, envelope_map, &["items", "pagination"]);
    finish(out)
}

/// `3 item(s) — 12 total (40 before filters), page 1 of 4: call again with `start` 3 and
/// `limit` 3 for page 2`. The grand total (`grandTotalItems`, the count before search and
/// filters) is named only when it is more than the total: database-backed lists always send 0
/// there (docs/arcane-wire.md#list-envelopes-and-paging), and a grand total equal to the total
/// says nothing. The next page's `start` is the call's own `start` plus the page size Arcane
/// used (`itemsPerPage`), so it holds for offsets that are not on a page boundary too.
fn count_line(len: usize, pagination: Option<&Map<String, Value>>, start: Option<u64>) -> String {
    let mut line = format!("{len} item(s)");
    let Some(p) = pagination else {
        return line;
    };
    let num = |k: &str| p.get(k).and_then(Value::as_u64);
    let mut parts = Vec::new();
    if let Some(total) = num("totalItems") {
        let mut part = format!("{total} total");
        if let Some(grand) = num("grandTotalItems").filter(|&g| g > total) {
            part.push_str(&format!(" ({grand} before search and filters)"));
        }
        parts.push(part);
    }
    if let (Some(cur), Some(pages)) = (num("currentPage"), num("totalPages").filter(|&p| p > 0)) {
        let mut part = format!("page {cur} of {pages}");
        let per = num("itemsPerPage").filter(|&n| n > 0);
        if let (Some(start), Some(per)) = (start, per)
            && cur < pages
            && len > 0
        {
            part.push_str(&format!(
                ": call again with `start` {} and `limit` {per} for page {}",
                start.saturating_add(per),
                cur + 1
            ));
        }
        parts.push(part);
    }
    if !parts.is_empty() {
        line.push_str(" — ");
        line.push_str(&parts.join(", "));
    }
    line
}

/// The columns of a table, or `None` when the items do not make one (not
/// all objects, or no field with a value).
fn table_columns(ctx: &RenderContext<'_>, items: &[Value]) -> Option<Vec<String>> {
    let objects: Vec<&Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    let columns = match ctx.columns {
        Some(cols) if !cols.is_empty() => cols.to_vec(),
        _ => choose_columns(&objects, &field_union(&objects)),
    };
    (!columns.is_empty()).then_some(columns)
}

fn table(
    out: &mut String,
    ctx: &RenderContext<'_>,
    items: &[Value],
    columns: &[String],
    pagination: Option<&Map<String, Value>>,
) {
    let objects: Vec<&Map<String, Value>> = items.iter().filter_map(Value::as_object).collect();
    let all_fields = field_union(&objects);

    table_header(out, columns);

    for obj in objects.iter().take(MAX_ROWS) {
        out.push('|');
        for col in columns {
            let cell = lookup(obj, col).map_or_else(String::new, |v| cell_text(col, v));
            if !cell.is_empty() {
                out.push(' ');
                out.push_str(&cell);
            }
            out.push_str(" |");
        }
        out.push('\n');
    }
    out.push('\n');

    cut_note(out, ctx, items.len(), pagination);

    // A column `a.b` shows part of field `a`, which still counts as shown.
    let shown_top: Vec<&str> = columns
        .iter()
        .map(|c| {
            if objects.iter().any(|o| o.contains_key(c.as_str())) {
                c.as_str()
            } else {
                c.split('.').next().unwrap_or(c)
            }
        })
        .collect();
    let others: Vec<&String> = all_fields
        .iter()
        .filter(|f| !shown_top.contains(&f.as_str()))
        .collect();
    if !others.is_empty() {
        let names: Vec<String> = others.iter().map(|f| field_label(f)).collect();
        let mut note = format!("Other fields: {}.", names.join(", "));
        if let Some(action) = ctx.full_item_action {
            note.push_str(&format!(" {action} returns a full item."));
        }
        push_line(out, &note);
    }
}

fn cut_note(
    out: &mut String,
    ctx: &RenderContext<'_>,
    len: usize,
    pagination: Option<&Map<String, Value>>,
) {
    if len <= MAX_ROWS {
        return;
    }
    let cut = len - MAX_ROWS;
    let note = match ctx.rest_hint {
        RestHint::StartLimit => {
            // The page's first row is at the call's `start`; when it is not known, at
            // (page-1)*perPage, and without pagination at 0.
            let offset = ctx
                .page_start
                .or_else(|| {
                    pagination.and_then(|p| {
                        let cur = p.get("currentPage")?.as_u64()?;
                        let per = p.get("itemsPerPage")?.as_u64()?;
                        Some(cur.saturating_sub(1).saturating_mul(per))
                    })
                })
                .unwrap_or(0);
            let next = offset.saturating_add(MAX_ROWS as u64);
            format!(
                "{cut} more row(s) of this page are not shown. To read them, call the list again with `start` {next} and `limit` {}.",
                cut.min(MAX_ROWS)
            )
        }
        RestHint::Filters(filters) => format!(
            "{cut} more row(s) of this page are not shown. To see them, narrow the list: {filters}"
        ),
    };
    push_line(out, &note);
}

/// Finds a column's value: a field name, or a dotted path into nested
/// objects and arrays. Keys may contain dots themselves
/// (`labels.com.docker.compose.project`), so every split is tried.
fn lookup<'v>(obj: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    if let Some(v) = obj.get(path) {
        return Some(v);
    }
    path.match_indices('.').find_map(|(i, _)| {
        let inner = obj.get(&path[..i])?;
        lookup_value(inner, &path[i + 1..])
    })
}

fn lookup_value<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) => lookup(m, path),
        Value::Array(a) => {
            let (head, rest) = path
                .split_once('.')
                .map_or((path, None), |(h, r)| (h, Some(r)));
            let el = a.get(head.parse::<usize>().ok()?)?;
            match rest {
                Some(rest) => lookup_value(el, rest),
                None => Some(el),
            }
        }
        _ => None,
    }
}

/// Then fields that describe an item.
const DESCRIPTIVE: [&str; 20] = [
    "image",
    "driver",
    "type",
    "kind",
    "tag",
    "version",
    "created",
    "createdat",
    "size",
    "ports",
    "scope",
    "mountpoint",
    "path",
    "apiurl",
    "url",
    "servicecount",
    "runningcount",
    "description",
    "command",
    "updatedat",
];

/// Rank of a field as a column (lower first); `None` for fields that never
/// make a good column (objects and lists of objects not named above).
fn column_rank(name: &str, sample: Option<&Value>) -> Option<usize> {
    let l = name.to_ascii_lowercase();
    if let Some(i) = IDENTITY.iter().position(|&x| x == l) {
        return Some(i);
    }
    if let Some(i) = STATUS.iter().position(|&x| x == l) {
        return Some(100 + i);
    }
    if let Some(i) = DESCRIPTIVE.iter().position(|&x| x == l) {
        return Some(200 + i);
    }
    match sample {
        Some(Value::Object(_)) => None,
        Some(Value::Array(a)) if a.iter().any(|v| v.is_object() || v.is_array()) => None,
        // References to other objects are useful but less so than the item's
        // own description.
        _ if is_identifier_field(name) => Some(300),
        _ => Some(400),
    }
}

fn choose_columns(objects: &[&Map<String, Value>], fields: &[String]) -> Vec<String> {
    let mut ranked: Vec<(usize, usize, &String)> = fields
        .iter()
        .enumerate()
        .filter_map(|(order, f)| {
            let sample = objects
                .iter()
                .filter_map(|o| o.get(f.as_str()))
                .find(|v| !v.is_null());
            sample?;
            column_rank(f, sample).map(|r| (r, order, f))
        })
        .collect();
    ranked.sort();
    ranked
        .into_iter()
        .take(MAX_COLUMNS)
        .map(|(_, _, f)| f.clone())
        .collect()
}

/// One escaped table cell.
fn cell_text(field: &str, v: &Value) -> String {
    let whole = is_identifier_field(field);
    let trimmed = |s: &str| -> String {
        let s = sanitize(s);
        let (head, cut) = if whole {
            (&*s, false)
        } else {
            trim_chars(&s, MAX_CELL_CHARS)
        };
        let mut cell = table_cell(head).into_owned();
        if cut {
            cell.push('…');
        }
        cell
    };
    match v {
        Value::Null => String::new(),
        Value::String(s) => {
            let mut cell = trimmed(s);
            if let Some(units) = byte_text_units(field, s) {
                cell.push_str(&units);
            }
            cell
        }
        Value::Number(n) => number_text(field, n),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) if a.iter().all(is_scalar) => {
            let mut cell = String::new();
            let mut used = 0;
            for (i, el) in a.iter().enumerate() {
                let text = scalar_text(el);
                let len = text.chars().count();
                if !whole && i > 0 && used + len > MAX_CELL_CHARS {
                    cell.push_str(&format!(", … (+{})", a.len() - i));
                    break;
                }
                if i > 0 {
                    cell.push_str(", ");
                }
                cell.push_str(&list_element(&text, true));
                used += len + 2;
            }
            cell
        }
        other => trimmed(&other.to_string()),
    }
}
