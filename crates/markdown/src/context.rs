//! What every renderer shares: the render context a surface passes in, the heading of a result,
//! and how a text is put together and finished (one trailing newline, `sanitize` once more over
//! the whole, whoever wrote its parts).

use crate::escape::{heading_text, sanitize, table_cell_strict};

/// Most rows a table shows; the rest of a page is reported, not shown.
pub const MAX_ROWS: usize = 50;

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

pub(crate) fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push_str("\n\n");
}

/// The finished text ends with a single newline and passes `sanitize` once
/// more, whoever wrote its parts.
pub(crate) fn finish(mut out: String) -> String {
    while out.ends_with("\n\n") {
        out.pop();
    }
    match sanitize(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(s) => s,
    }
}

/// The header row and delimiter row of a table; column names escaped for a cell.
pub(crate) fn table_header(out: &mut String, columns: &[String]) {
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
