//! The Markdown text of a successful result (docs/output-format.md): a rendering of the
//! already-unwrapped `structuredContent` sized for a model, which says what
//! it leaves out instead of repeating the JSON.
//!
//! Everything here is a pure function of its inputs. Every value from Arcane
//! goes through [`crate::escape`]; the finished text goes once more through
//! [`sanitize`].

use serde_json::{Map, Value};

use crate::escape::{
    code_span, fenced, heading_text, inline, inline_strict, list_item_key, list_item_value,
    sanitize, table_cell, table_cell_strict,
};
use crate::units::{human_bytes, is_byte_field};

/// Most rows a table shows; the rest of a page is reported, not shown.
pub const MAX_ROWS: usize = 50;
/// Most columns chosen by name when the action declares none.
pub const MAX_COLUMNS: usize = 6;
/// Longest table cell, in characters, before it is trimmed with `…` (IDs and
/// names are never trimmed).
pub const MAX_CELL_CHARS: usize = 60;
/// Short lists of scalars (`names`, `repoTags`) stay on the field's line up
/// to this many elements; longer ones get a JSON block.
const MAX_SHORT_LIST: usize = 10;
/// Longest nested value, in characters, written on its field's line (compact JSON or a
/// `key=value` map); longer ones get a JSON block.
const MAX_INLINE_JSON: usize = 240;
/// Most entries of a map of scalars written on one line.
const MAX_LINE_MAP: usize = 12;
/// Envelope members that may stand beside a lone `value`.
const ENVELOPE_MEMBERS: [&str; 4] = ["pagination", "counts", "warnings", "failedEnvironments"];

/// How to read the rows of a page that a table did not show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestHint<'a> {
    /// The list action pages with `start` and `limit`.
    #[default]
    StartLimit,
    /// The list action does not page; the text names what narrows it,
    /// already formatted (e.g. "set `search` or `label`").
    Filters(&'a str),
}

/// What the calling surface knows about the result being rendered. Strings
/// here are written by the server, not by Arcane: they are not escaped
/// (only sanitized with the finished text).
#[derive(Clone, Copy, Debug, Default)]
pub struct RenderContext<'a> {
    /// Heading of the text: "Containers", "Container web-1"… (escaped as
    /// heading text, since it may embed a value).
    pub title: &'a str,
    /// Columns declared by the action for a list: top-level field names, or
    /// dotted paths (`a.b`) into nested objects.
    pub columns: Option<&'a [String]>,
    /// The action returning a full item, as the surface writes it:
    /// "`container.get`" or "`arcane_container` (action `get`)".
    pub full_item_action: Option<&'a str>,
    /// What to say for an empty list instead of "No items.".
    pub empty_hint: Option<&'a str>,
    /// How to read rows cut from a page.
    pub rest_hint: RestHint<'a>,
    /// Fields an object's text leaves out, as dotted paths (into each element of a list); the
    /// text names those it found. Identity and state fields are shown whatever this says.
    pub omit: &'a [String],
    /// The `start` the call used, when the list action pages with `start` and `limit` (0 when
    /// the call gave none); `None` when it does not page. The count line then says how to
    /// read the next page, and the note on cut rows where they begin.
    pub page_start: Option<u64>,
    /// A sentence written by the server that opens the text, after the title (a destructive
    /// call that did nothing says so here). Already Markdown.
    pub notice: Option<&'a str>,
}

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

/// Field names in order of first appearance across the items.
fn field_union(objects: &[&Map<String, Value>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut fields = Vec::new();
    for obj in objects {
        for k in obj.keys() {
            if seen.insert(k.as_str()) {
                fields.push(k.clone());
            }
        }
    }
    fields
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

/// Identity fields first, in this order.
const IDENTITY: [&str; 13] = [
    "id",
    "name",
    "names",
    "repotags",
    "repo",
    "repository",
    "displayname",
    "title",
    "hostname",
    "username",
    "email",
    "key",
    "slug",
];
/// Then state.
const STATUS: [&str; 5] = ["state", "status", "health", "enabled", "running"];
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

/// Fields a later call needs whole: IDs, names, tags and digests.
fn is_identifier_field(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let l = last.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "id" | "name"
            | "names"
            | "repotags"
            | "repodigests"
            | "digest"
            | "tag"
            | "tags"
            | "uuid"
            | "hostname"
            | "username"
            | "key"
            | "slug"
            | "ref"
    ) || last.ends_with("Id")
        || last.ends_with("ID")
        || last.ends_with("_id")
        || last.ends_with("Name")
        || last.ends_with("Names")
        || last.ends_with("_name")
        || last.ends_with("Digest")
}

fn trim_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    }
}

/// A number as Arcane sent it, with human units appended for byte counts
/// (some encoders send whole byte counts as floats: `1.5e9`).
fn number_text(field: &str, n: &serde_json::Number) -> String {
    format!("{n}{}", number_units(field, n).unwrap_or_default())
}

/// ` (1.5 GB)` when `n` is a whole byte count of at least 1000 in a byte-count field.
fn number_units(field: &str, n: &serde_json::Number) -> Option<String> {
    let b = n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    })?;
    (b >= 1000 && is_byte_field(field) && !is_identifier_field(field))
        .then(|| format!(" ({})", human_bytes(b)))
}

/// The human units of a byte count Arcane sent as decimal text: compose-go writes compose
/// byte sizes (`mem_limit`, `shm_size`…) as quoted strings (docs/arcane-wire.md#compose-byte-sizes).
/// `None` unless the field is a byte count, not an identifier, and the text is all digits.
fn byte_text_units(field: &str, s: &str) -> Option<String> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let b: u64 = s.parse().ok()?;
    (b >= 1000 && is_byte_field(field) && !is_identifier_field(field))
        .then(|| format!(" ({})", human_bytes(b)))
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

fn is_scalar(v: &Value) -> bool {
    !(v.is_array() || v.is_object())
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
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
    let Some(map) = value.as_object() else {
        return render_value(ctx, value);
    };
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

/// At most [`MAX_SHORT_LIST`] one-line scalars: a list that fits on a line or in a cell.
fn is_short_list(a: &[Value]) -> bool {
    a.len() <= MAX_SHORT_LIST && a.iter().all(is_one_line_scalar)
}

/// A scalar whose text stays on one line once sanitized.
fn is_one_line_scalar(x: &Value) -> bool {
    is_scalar(x) && !sanitize(&scalar_text(x)).contains('\n')
}

/// A short list's elements, comma-separated, each escaped for running text or, with `table`,
/// for a table cell.
fn joined(a: &[Value], table: bool) -> String {
    a.iter()
        .map(|x| list_element(&scalar_text(x), table))
        .collect::<Vec<_>>()
        .join(", ")
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

/// A nested value as compact JSON in a code span on the field's line, when it is short
/// (a port mapping, a small list of objects); `None` when it is longer than
/// [`MAX_INLINE_JSON`] characters.
fn short_json(v: &Value) -> Option<String> {
    let text = json_text(v, false);
    (text.chars().count() <= MAX_INLINE_JSON).then(|| code_span(&text))
}

/// One value of a comma-separated short list; an empty one is shown as `""`
/// so that the list keeps its shape.
fn list_element(text: &str, table: bool) -> String {
    if sanitize(text).is_empty() {
        "\"\"".to_owned()
    } else if table {
        table_cell_strict(text).into_owned()
    } else {
        inline_strict(text).into_owned()
    }
}

/// A field name inside running text; an empty name is shown as `""` so
/// that the list keeps its shape.
fn field_label(name: &str) -> String {
    if sanitize(name).is_empty() {
        "\"\"".to_owned()
    } else {
        inline_strict(name).into_owned()
    }
}

fn section(sections: &mut String, key: &str, block: &str) {
    sections.push_str("## ");
    sections.push_str(&heading_text(key));
    sections.push_str("\n\n");
    sections.push_str(block);
    sections.push('\n');
}

/// JSON in a fenced block: pretty for a lone value, compact inside an object's
/// text (indentation costs a model tokens and carries nothing). Characters that
/// `sanitize` would drop or turn into line breaks can only sit inside JSON
/// strings; they are written as `\uXXXX` escapes (as serde_json already does
/// for C0 controls), so the block stays valid JSON that parses back to
/// Arcane's exact value.
fn json_block(v: &Value, pretty: bool) -> String {
    fenced(&json_text(v, pretty), "json")
}

/// JSON text of a value (pretty or compact) in which every character `sanitize` would drop or
/// rewrite is a `\uXXXX` escape, so the text survives [`finish`] unchanged.
fn json_text(v: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    } else {
        v.to_string()
    };
    crate::escape::escape_unsafe(&text, false).into_owned()
}

/// Summarizes envelope members other than `skip` (`counts`, `warnings`,
/// `failedEnvironments`…), one short paragraph each.
fn envelope(out: &mut String, map: &Map<String, Value>, skip: &[&str]) {
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

/// Renders a text download: file name, size and type, then the text in a
/// fenced block.
///
/// ```
/// use arcane_markdown::render_text_download;
/// assert_eq!(
///     render_text_download("compose.yaml", 12, "application/yaml", "services: {}"),
///     "# compose.yaml\n\n- size: 12 bytes\n- type: application/yaml\n\n```yaml\nservices: {}\n```\n"
/// );
/// ```
pub fn render_text_download(file_name: &str, size: u64, content_type: &str, text: &str) -> String {
    let mut out = download_meta(file_name, size, content_type);
    out.push_str(&fenced(text, info_for(file_name, content_type)));
    finish(out)
}

/// Renders the metadata of a binary download; the file itself travels as a
/// separate embedded resource for the user.
///
/// ```
/// use arcane_markdown::render_binary_download_meta;
/// let text = render_binary_download_meta("backup.tar.gz", 1_500_000, "application/gzip");
/// assert!(text.starts_with("# backup.tar.gz\n\n- size: 1500000 bytes (1.5 MB)\n"));
/// ```
pub fn render_binary_download_meta(file_name: &str, size: u64, content_type: &str) -> String {
    let mut out = download_meta(file_name, size, content_type);
    push_line(
        &mut out,
        "The file is attached as a separate embedded resource for the user; its content is not shown here.",
    );
    finish(out)
}

fn download_meta(file_name: &str, size: u64, content_type: &str) -> String {
    let mut out = title(file_name);
    out.push_str(&format!("- size: {size} bytes"));
    if size >= 1000 {
        out.push_str(&format!(" ({})", human_bytes(size)));
    }
    out.push('\n');
    if !content_type.is_empty() {
        out.push_str("- type: ");
        out.push_str(&inline(content_type));
        out.push('\n');
    }
    out.push('\n');
    out
}

fn info_for(file_name: &str, content_type: &str) -> &'static str {
    let name = file_name.to_ascii_lowercase();
    let ct = content_type.to_ascii_lowercase();
    if name.ends_with(".yml") || name.ends_with(".yaml") || ct.contains("yaml") {
        "yaml"
    } else if name.ends_with(".json") || ct.contains("json") {
        "json"
    } else {
        "text"
    }
}

/// The heading of a result: `# {title}` and a blank line, the title escaped and on one line
/// (an action's title comes from Arcane's spec or an overlay; a line break in it would end the
/// heading and start whatever follows). Empty for an empty title. Every result heading is
/// written here.
pub fn title(t: &str) -> String {
    let one_line = sanitize(t).split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return String::new();
    }
    let mut out = String::from("# ");
    out.push_str(&heading_text(&one_line));
    out.push_str("\n\n");
    out
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push_str("\n\n");
}

/// The finished text ends with a single newline and passes `sanitize` once
/// more, whoever wrote its parts.
fn finish(mut out: String) -> String {
    while out.ends_with("\n\n") {
        out.pop();
    }
    match sanitize(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(s) => s,
    }
}

/// The header row and delimiter row of a table; column names escaped for a cell.
fn table_header(out: &mut String, columns: &[String]) {
    out.push('|');
    for col in columns {
        out.push(' ');
        out.push_str(&table_cell_strict(col));
        out.push_str(" |");
    }
    out.push_str("\n|");
    out.push_str(&"---|".repeat(columns.len()));
    out.push('\n');
}
