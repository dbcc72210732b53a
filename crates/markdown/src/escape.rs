//! Escaping of untrusted values for the Markdown text of a result (docs/escaping.md).
//!
//! Every value that comes from Arcane is treated as hostile text. Two goals:
//! nothing in a value can change the structure of the surrounding Markdown,
//! and an identifier reaches the model exactly as it is (models read the raw
//! Markdown and copy values into their next call, so escaping must be rare
//! and readable).
//!
//! The pipeline for a value written inline is:
//!
//! 1. [`sanitize`]: terminal sequences, control and invisible characters go.
//! 2. Line breaks become spaces: an inline slot (a table cell, a `- field:
//!    value` line, a heading) is a single line. Multi-line text belongs in a
//!    [`fenced`] block, which the renderer uses for it.
//! 3. The text is scanned for everything CommonMark/GFM would turn into
//!    structure in that slot. Nothing found: the text is written as is.
//!    Something found in a single token (no whitespace): the token becomes a
//!    [`code_span`]. Something found in text with spaces: a backslash goes in
//!    front of exactly those characters. Text with leading or trailing
//!    whitespace (which Markdown would trim) is also written as a code span.
//!
//! See `docs/escaping.md` for the full list of rules.

use std::borrow::Cow;

/// Removes terminal escape sequences and invisible or control characters,
/// and normalizes line separators.
///
/// Removed: ANSI CSI sequences (colours, cursor moves), OSC/DCS/SOS/PM/APC
/// strings (terminal titles, OSC 8 hyperlinks) up to their BEL or ST
/// terminator (an unterminated one ends at the next ESC or line break), other
/// two-character ESC sequences, C0 and C1 control characters except `\n` and
/// `\t`, DEL, the bidi controls U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069 and the zero-width characters U+200B, U+200C, U+200D,
/// U+2060, U+FEFF. A CR directly before LF is kept; any other CR, and U+2028
/// and U+2029, become `\n`.
///
/// Idempotent; borrows when nothing changes.
///
/// ```
/// use arcane_markdown::sanitize;
/// assert_eq!(sanitize("\x1b[31mred\x1b[0m"), "red");
/// assert_eq!(sanitize("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"), "link");
/// assert_eq!(sanitize("a\r\nb\rc\u{2028}d"), "a\r\nb\nc\nd");
/// assert_eq!(sanitize("we\u{200b}b\u{202e}-1"), "web-1");
/// assert!(matches!(sanitize("my_container"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !needs_sanitize(s) {
        return Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\x1b' => i = skip_after_esc(&chars, i),
            '\u{9b}' => i = skip_csi(&chars, i),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => i = skip_string(&chars, i),
            '\r' => out.push(if chars.get(i) == Some(&'\n') {
                '\r'
            } else {
                '\n'
            }),
            '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\n' | '\t' => out.push(c),
            c if is_removed(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_sanitize(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Printable ASCII, LF and tab are kept as they are, and most text is only those: one
        // comparison per byte; other characters are decoded and asked about.
        if matches!(bytes[i], b' '..=b'~' | b'\n' | b'\t') {
            i += 1;
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        match c {
            '\r' if bytes.get(i + 1) != Some(&b'\n') => return true,
            '\r' => {}
            '\u{2028}' | '\u{2029}' => return true,
            c if is_removed(c) => return true,
            _ => {}
        }
        i += c.len_utf8();
    }
    false
}

/// Whether `sanitize` would remove or rewrite this character (CR aside,
/// which it keeps before LF).
pub(crate) fn is_unsafe_char(c: char) -> bool {
    is_removed(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every character [`sanitize`] would drop or rewrite (C0 and C1 controls, DEL,
/// bidi and zero-width characters, U+2028/U+2029) written as a JSON-style `\uXXXX` escape;
/// with `breaks`, line breaks and tabs too (a one-line echo). Borrows when nothing changes.
///
/// ```
/// use arcane_markdown::visible;
/// assert_eq!(visible("id\0"), "id\\u0000");
/// assert_eq!(visible("web-1"), "web-1");
/// ```
pub fn visible(text: &str) -> Cow<'_, str> {
    escape_unsafe(text, true)
}

/// [`visible`]; without `breaks`, `\n` and `\t` stay (JSON text's own layout).
pub(crate) fn escape_unsafe(text: &str, breaks: bool) -> Cow<'_, str> {
    let shown = |c: char| is_unsafe_char(c) || (breaks && matches!(c, '\n' | '\r' | '\t'));
    escape_chars(text, shown, Notation::Json).0
}

/// How an escaped character is written.
#[derive(Clone, Copy)]
enum Notation {
    /// `\u001b`, as JSON writes it (astral characters as their surrogate pair), so that an
    /// echo of what a client sent is what it can send again.
    Json,
    /// `\u{202E}`, as Rust writes it: one escape per character, astral ones included.
    Braced,
}

/// The one escaping loop: every character `shown` says is written in `notation`, and how
/// many there were; a CR directly before LF stays when `shown` would take it (a line ending
/// is not hidden). Borrows when nothing changes.
fn escape_chars(
    text: &str,
    shown: impl Fn(char) -> bool,
    notation: Notation,
) -> (Cow<'_, str>, usize) {
    if !text.chars().any(&shown) {
        return (Cow::Borrowed(text), 0);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut count = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !shown(c)
            || (matches!(notation, Notation::Braced) && c == '\r' && chars.peek() == Some(&'\n'))
        {
            out.push(c);
            continue;
        }
        count += 1;
        match notation {
            Notation::Braced => out.push_str(&format!("\\u{{{:X}}}", c as u32)),
            Notation::Json => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    (Cow::Owned(out), count)
}

/// Characters dropped wherever they appear (CR and the line separators are
/// handled before this is asked).
fn is_removed(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}'
        | '\u{ad}' | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
        && c != '\n'
        && c != '\t'
}

/// Whether a character is invisible, or changes how the text around it reads, when shown:
/// controls (but `\n` and `\t`), the line separators, every format character (Unicode
/// category Cf: the bidi controls, zero-width characters, U+FEFF, the tag characters
/// U+E0000–U+E007F), the variation selectors and the Hangul fillers. [`sanitize`] drops most
/// of them from a result; a value a person approves shows them instead ([`reveal`]).
pub fn is_hidden_char(c: char) -> bool {
    if c == '\n' || c == '\t' {
        return false;
    }
    matches!(c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{2028}' | '\u{2029}'
        // Cf, Unicode 15.1.
        | '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}'
        | '\u{890}'..='\u{891}' | '\u{8e2}' | '\u{180e}' | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{110bd}' | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}' | '\u{e0020}'..='\u{e007f}'
        // Invisible although not Cf: the combining grapheme joiner, the Hangul fillers, the
        // variation selectors (which can carry data after any character).
        | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}'
        | '\u{180b}'..='\u{180d}' | '\u{180f}' | '\u{fe00}'..='\u{fe0f}'
        | '\u{e0100}'..='\u{e01ef}')
}

/// Text a person approves, with every hidden character ([`is_hidden_char`]) written as a
/// visible `\u{…}` escape, and how many there were: what the person reads is what is sent, where
/// [`sanitize`] would silently drop them. A CR directly before LF stays (a line ending). The
/// result holds no hidden character, so the escaping that follows leaves it as it is.
///
/// ```
/// use arcane_markdown::reveal;
/// assert_eq!(reveal("web-1\u{202e}txt.exe"), ("web-1\\u{202E}txt.exe".into(), 1));
/// assert_eq!(reveal("a\r\nb\tc"), ("a\r\nb\tc".into(), 0));
/// ```
pub fn reveal(text: &str) -> (Cow<'_, str>, usize) {
    escape_chars(text, is_hidden_char, Notation::Braced)
}

/// `i` points just after an ESC.
fn skip_after_esc(chars: &[char], i: usize) -> usize {
    match chars.get(i) {
        Some('[') => skip_csi(chars, i + 1),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars, i + 1),
        Some(&c) if ('\x20'..='\x2f').contains(&c) => {
            // nF sequences: intermediates then one final byte.
            let mut j = i;
            while chars.get(j).is_some_and(|c| ('\x20'..='\x2f').contains(c)) {
                j += 1;
            }
            if chars.get(j).is_some_and(|c| ('\x30'..='\x7e').contains(c)) {
                j += 1;
            }
            j
        }
        Some(&c) if ('\x30'..='\x7e').contains(&c) => i + 1,
        // A lone ESC (or ESC before something no terminal would take as a
        // sequence) is dropped by itself; what follows stays.
        _ => i,
    }
}

/// `i` points just after the CSI introducer (`ESC [` or U+009B).
fn skip_csi(chars: &[char], i: usize) -> usize {
    let mut j = i;
    while chars.get(j).is_some_and(|c| ('\x20'..='\x3f').contains(c)) {
        j += 1;
    }
    if chars.get(j).is_some_and(|c| ('\x40'..='\x7e').contains(c)) {
        j += 1;
    }
    j
}

/// `i` points just after an OSC/DCS/SOS/PM/APC introducer. The string runs
/// to BEL or ST; when unterminated it stops before the next ESC or line
/// break, so a broken sequence cannot swallow the rest of a log.
fn skip_string(chars: &[char], i: usize) -> usize {
    let mut j = i;
    while let Some(&c) = chars.get(j) {
        match c {
            '\x07' | '\u{9c}' => return j + 1,
            '\x1b' if chars.get(j + 1) == Some(&'\\') => return j + 2,
            '\x1b' | '\n' | '\r' => return j,
            _ => j += 1,
        }
    }
    j
}

/// Where an escaped value is going to be written. The convenience functions
/// ([`inline`], [`inline_strict`], [`table_cell`], …) cover the usual slots;
/// this is for combinations they do not name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// The text shares its paragraph with other values or with Markdown
    /// written around it (`**key**`, a comma-separated list): a delimiter
    /// with no partner inside the value may find one outside, so every
    /// delimiter that could open or close is escaped.
    pub strict: bool,
    /// A GFM table cell: `|` is escaped too.
    pub table: bool,
    /// The text begins a list item (`- {text}`), where `#`, `>`, `-`, `1.`,
    /// fences, rules, task boxes and HTML blocks would start a block.
    pub block_start: bool,
    /// ATX heading content: a trailing run of `#` would be dropped.
    pub heading: bool,
    /// Every backtick is escaped, paired or not: the text shares its paragraph with code
    /// spans of ours (an error's excerpt, then an activity ID), and a lone backtick would pair
    /// with one of theirs and turn the text between into code and the code into text.
    pub ticks: bool,
}

/// Escapes a value for running text, where it is the only untrusted value of
/// its paragraph and is surrounded by whitespace or line ends (e.g. the
/// value in `- field: value`).
///
/// ```
/// use arcane_markdown::inline;
/// assert_eq!(inline("my_container"), "my_container");
/// assert_eq!(inline("*/5 * * * *"), "*/5 * * * *");
/// assert_eq!(inline("C:\\data"), "C:\\data");
/// assert_eq!(inline("<none>:<none>"), "`<none>:<none>`");
/// assert_eq!(inline("see [x](http://evil) now"), "see \\[x](http\\://evil) now");
/// assert_eq!(inline("mail ops@example.com or www.example.com"), "mail ops\\@example.com or www\\.example.com");
/// assert_eq!(inline("an *important* note"), "an \\*important\\* note");
/// ```
pub fn inline(text: &str) -> Cow<'_, str> {
    escape(text, Slot::default())
}

/// Escapes a field name, a bold key or one value of a short list: like
/// [`inline`], but a `*`, `_`, `~`, `` ` ``, `[` or `<` is escaped even
/// without a partner inside the value, since the partner may sit in the next
/// value of the same paragraph. A trailing backslash is escaped too.
///
/// ```
/// use arcane_markdown::inline_strict;
/// assert_eq!(inline_strict("created_at"), "created_at");
/// assert_eq!(inline_strict("app_"), "`app_`");
/// assert_eq!(inline_strict("a `b"), "a \\`b");
/// ```
pub fn inline_strict(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            strict: true,
            ..Slot::default()
        },
    )
}

/// Escapes a GFM table cell: [`inline`] plus `|`, so a value never adds a
/// column; line breaks become spaces.
///
/// ```
/// use arcane_markdown::table_cell;
/// assert_eq!(table_cell("web-1"), "web-1");
/// assert_eq!(table_cell("a | b"), "a \\| b");
/// assert_eq!(table_cell("a|b"), "`a\\|b`");
/// ```
pub fn table_cell(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            table: true,
            ..Slot::default()
        },
    )
}

/// Escapes one value of a list written inside a table cell (`a, b, c`):
/// [`table_cell`] with the strictness of [`inline_strict`].
///
/// ```
/// use arcane_markdown::table_cell_strict;
/// assert_eq!(table_cell_strict("/web-1"), "/web-1");
/// assert_eq!(table_cell_strict("*x"), "`*x`");
/// ```
pub fn table_cell_strict(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            strict: true,
            table: true,
            ..Slot::default()
        },
    )
}

/// Escapes the text of an ATX heading (written after `# `): [`inline`] plus
/// a trailing run of `#`, which Markdown would take as a closing sequence.
///
/// ```
/// use arcane_markdown::heading_text;
/// assert_eq!(heading_text("Container web-1"), "Container web-1");
/// assert_eq!(heading_text("Project C #"), "Project C \\#");
/// ```
pub fn heading_text(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            heading: true,
            ..Slot::default()
        },
    )
}

/// Escapes a value written as a list item of its own (`- {value}`): a value
/// that would start a block (heading, quote, nested list, rule, fence, task
/// box, HTML block, link definition) stays literal.
///
/// ```
/// use arcane_markdown::list_item_value;
/// assert_eq!(list_item_value("web-1"), "web-1");
/// assert_eq!(list_item_value("# not a heading"), "\\# not a heading");
/// assert_eq!(list_item_value("1. not a list"), "1\\. not a list");
/// assert_eq!(list_item_value("- [ ] not a task"), "\\- [ ] not a task");
/// ```
pub fn list_item_value(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            block_start: true,
            ..Slot::default()
        },
    )
}

/// Escapes the field name that opens a `- field: value` line: strict (the
/// value follows in the same paragraph) and at the start of a list item.
///
/// ```
/// use arcane_markdown::list_item_key;
/// assert_eq!(list_item_key("status"), "status");
/// assert_eq!(list_item_key("> quote"), "\\> quote");
/// assert_eq!(list_item_key("*"), "`*`");
/// ```
pub fn list_item_key(text: &str) -> Cow<'_, str> {
    escape(
        text,
        Slot {
            strict: true,
            block_start: true,
            ..Slot::default()
        },
    )
}

/// Writes text as a code span, whose content Markdown shows literally. The
/// fence is one backtick longer than the longest backtick run inside, and
/// the content is padded with a space on each side when Markdown would
/// otherwise eat its edge (a leading/trailing backtick, or a space at both
/// ends). The text is sanitized and line breaks become spaces. Empty text
/// gives an empty string (an empty code span cannot be written).
///
/// ```
/// use arcane_markdown::code_span;
/// assert_eq!(code_span("<none>:<none>"), "`<none>:<none>`");
/// assert_eq!(code_span("a`b"), "``a`b``");
/// assert_eq!(code_span("`x`"), "`` `x` ``");
/// assert_eq!(code_span(" x "), "`  x  `");
/// ```
pub fn code_span(text: &str) -> String {
    let text = one_line(sanitize(text));
    code_span_raw(&text, false)
}

/// Writes text as a fenced code block, literal to the last byte: the fence
/// is longer than any backtick run in the text (at least three), so no line
/// of the text can close it early. The text is sanitized; a final line break
/// is added when missing. The info string loses backticks and line breaks
/// (they would break the opening fence).
///
/// ```
/// use arcane_markdown::fenced;
/// assert_eq!(fenced("a\nb", "text"), "```text\na\nb\n```\n");
/// assert_eq!(fenced("```\nx\n```", ""), "````\n```\nx\n```\n````\n");
/// ```
pub fn fenced(text: &str, info: &str) -> String {
    let text = sanitize(text);
    let info: String = sanitize(info)
        .chars()
        .filter(|&c| c != '`' && c != '\n' && c != '\r')
        .collect();
    let fence = "`".repeat(longest_backtick_run(&text).max(2) + 1);
    let mut out = String::with_capacity(text.len() + 2 * fence.len() + info.len() + 3);
    out.push_str(&fence);
    out.push_str(info.trim());
    out.push('\n');
    out.push_str(&text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// Cuts text after `max_chars` characters, marking the cut with `…`. Borrows when short.
///
/// ```
/// use arcane_markdown::clip;
/// assert_eq!(clip("abcdef", 3), "abc…");
/// assert_eq!(clip("abc", 3), "abc");
/// ```
pub fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// Untrusted text quoted inside a message of ours (Arcane's error detail, a log line in a
/// note, a validation problem that repeats a value): sanitized, on one line, cut after
/// `max_chars` characters, and escaped like a value that may begin a list item, so it can
/// stand anywhere in running text or after `- `.
///
/// ```
/// use arcane_markdown::excerpt;
/// assert_eq!(excerpt("no such container: web-1", 100), "no such container: web-1");
/// assert_eq!(excerpt("# Next steps\n[x](http://evil)", 100), "\\# Next steps \\[x](http\\://evil)");
/// assert_eq!(excerpt("abcdef", 3), "abc…");
/// assert_eq!(excerpt(" \n", 3), "(empty)");
/// ```
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let line = one_line(sanitize(text));
    let cut = clip(line.trim(), max_chars);
    if cut.is_empty() {
        // Nothing at all would leave `- ` alone on a line: a heading underline.
        return "(empty)".into();
    }
    // `|` escaped as in a table cell: an excerpt's line with a pipe, followed by a line that
    // reads as a delimiter row (`- --- |`, the next item of a list of excerpts), made a table;
    // every backtick escaped: a stream's "Failed: {excerpt} … Activity: `id`" paired a lone one
    // with the ID's (both found by fuzzing, `tests/fixtures/fuzz-regressions/`).
    escape(
        &cut,
        Slot {
            block_start: true,
            table: true,
            ticks: true,
            ..Slot::default()
        },
    )
    .into_owned()
}

/// An untrusted name or value echoed in a message of ours (an unknown action or tool, a
/// parameter name, an argument's value that cannot be used): a code span, cut after
/// `max_chars` characters. Byte-exact when short, so the model can see exactly what it sent;
/// the characters [`sanitize`] would drop or rewrite, line breaks and tabs are shown as
/// `\uXXXX` escapes ([`visible`]).
///
/// ```
/// use arcane_markdown::quoted_name;
/// assert_eq!(quoted_name("container.lst", 80), "`container.lst`");
/// assert_eq!(quoted_name("", 80), "(empty)");
/// assert_eq!(quoted_name("\0", 80), "`\\u0000`");
/// assert_eq!(quoted_name("a\u{200b}\x1b[31mb\n", 80), "`a\\u200b\\u001b[31mb\\u000a`");
/// ```
pub fn quoted_name(text: &str, max_chars: usize) -> String {
    // Shown, not dropped: a NUL or a zero-width space the model sent is what is wrong with
    // its value, so the message must let it see them.
    let line = visible(text);
    let cut = clip(&line, max_chars);
    if cut.is_empty() {
        return "(empty)".into();
    }
    code_span_raw(&cut, false)
}

fn longest_backtick_run(s: &str) -> usize {
    let mut best = 0;
    let mut cur = 0;
    for b in s.bytes() {
        if b == b'`' {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// Inline slots are single lines; a CRLF or LF becomes one space.
fn one_line(s: Cow<'_, str>) -> Cow<'_, str> {
    if !s.contains('\n') {
        return s;
    }
    Cow::Owned(s.replace("\r\n", " ").replace('\n', " "))
}

/// `table` escapes `|` inside the span: GFM splits cells before it finds
/// code spans, and removes the backslash of `\|` again inside them.
fn code_span_raw(text: &str, table: bool) -> String {
    if text.is_empty() {
        return String::new();
    }
    let fence = "`".repeat(longest_backtick_run(text) + 1);
    let all_spaces = text.bytes().all(|b| b == b' ');
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (!all_spaces && text.starts_with(' ') && text.ends_with(' '));
    let mut out = String::with_capacity(text.len() + 2 * fence.len() + 2);
    out.push_str(&fence);
    if pad {
        out.push(' ');
    }
    if table {
        out.push_str(&text.replace('|', "\\|"));
    } else {
        out.push_str(text);
    }
    if pad {
        out.push(' ');
    }
    out.push_str(&fence);
    out
}

/// Escapes `text` for `slot`; the general form of [`inline`] and its
/// siblings.
///
/// ```
/// use arcane_markdown::{escape, Slot};
/// let slot = Slot { strict: true, table: true, ..Slot::default() };
/// assert_eq!(escape("a|b", slot), "`a\\|b`");
/// ```
pub fn escape(text: &str, slot: Slot) -> Cow<'_, str> {
    let s = one_line(sanitize(text));
    if s.is_empty() {
        return s;
    }
    let outer_ws = s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace);
    if outer_ws {
        return Cow::Owned(code_span_raw(&s, slot.table));
    }
    if is_plain(&s, slot) {
        return s;
    }
    let chars: Vec<char> = s.chars().collect();
    let marks = marks(&chars, slot);
    if !marks.iter().any(|&m| m) {
        return s;
    }
    if !chars.iter().any(|c| c.is_whitespace()) {
        return Cow::Owned(code_span_raw(&s, slot.table));
    }
    let extra = marks.iter().filter(|&&m| m).count();
    let mut out = String::with_capacity(s.len() + extra);
    for (&c, &m) in chars.iter().zip(&marks) {
        if m {
            out.push('\\');
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// A cheap test that no rule of [`marks`] can fire: none of the characters
/// they look at occurs where they look. Most values (names, IDs, states)
/// take this path and are returned without allocating.
fn is_plain(s: &str, slot: Slot) -> bool {
    let inner = |b: u8| {
        matches!(
            b,
            b'\\' | b'`' | b'*' | b'_' | b'~' | b'[' | b'<' | b'&' | b'|'
        )
    };
    if s.bytes().any(inner) || might_autolink(s) {
        return false;
    }
    if slot.heading && s.ends_with('#') {
        return false;
    }
    if slot.block_start
        && s.bytes()
            .next()
            .is_some_and(|b| matches!(b, b'#' | b'>' | b'-' | b'+' | b'0'..=b'9'))
    {
        return false;
    }
    true
}

/// Whether GFM's autolink literal extension could find a link in `s`: `www.`, a `scheme://`
/// or an email address. A cheap over-approximation for the fast path; [`marks`] decides.
fn might_autolink(s: &str) -> bool {
    s.contains("://")
        || s.contains('@')
        || s.as_bytes()
            .windows(4)
            .any(|w| w.eq_ignore_ascii_case(b"www."))
}

/// GFM autolink literals (`www.example.com`, `https://…`, `user@example.com`) become links
/// in GitHub-style renderers without any Markdown syntax. A backslash before the character that
/// makes them (the `:` of `://`, the `.` of `www.`, the `@` of an address) keeps them text:
/// the escape splits the text where the extension looks for them.
fn mark_autolinks(c: &[char], m: &mut [bool]) {
    let n = c.len();
    let email_local = |x: char| x.is_ascii_alphanumeric() || matches!(x, '.' | '+' | '-' | '_');
    let domain_char = |x: char| x.is_ascii_alphanumeric() || matches!(x, '-' | '_' | '.');
    for i in 0..n {
        match c[i] {
            ':' if i > 0
                && c[i - 1].is_ascii_alphabetic()
                && c.get(i + 1) == Some(&'/')
                && c.get(i + 2) == Some(&'/') =>
            {
                m[i] = true
            }
            '.' if i >= 3
                && c[i - 3..i].iter().all(|x| x.eq_ignore_ascii_case(&'w'))
                && (i == 3 || !c[i - 4].is_alphanumeric()) =>
            {
                m[i] = true
            }
            '@' if i > 0 && email_local(c[i - 1]) => {
                let domain = c[i + 1..].iter().take_while(|&&x| domain_char(x));
                let mut dot_then_alnum = false;
                let mut prev_dot = false;
                for &x in domain {
                    if prev_dot && x.is_ascii_alphanumeric() {
                        dot_then_alnum = true;
                    }
                    prev_dot = x == '.';
                }
                m[i] |= dot_then_alnum;
            }
            _ => {}
        }
    }
}

/// Character classes of the CommonMark flanking rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    Punct,
    Other,
}

/// The classes a neighbour may have. ASCII is known exactly; for other
/// characters the Unicode tables of the parser and ours could disagree, so
/// every plausible class is assumed (escaping a little more, never less).
fn classes(c: Option<char>, edge: &'static [Class]) -> &'static [Class] {
    match c {
        None => edge,
        Some(c) if c.is_ascii() => {
            if c.is_ascii_whitespace() {
                &[Class::Space]
            } else if c.is_ascii_punctuation() {
                &[Class::Punct]
            } else {
                &[Class::Other]
            }
        }
        Some(c) if c.is_whitespace() => &[Class::Space, Class::Punct, Class::Other],
        Some(_) => &[Class::Punct, Class::Other],
    }
}

/// Whether a delimiter run could open or close emphasis/strikethrough, for
/// every combination of neighbour classes. Two rule sets are united: the
/// CommonMark flanking rules, and pulldown-cmark's (which let `~~` open and
/// close inside words). A run either set would use is escaped.
fn flanking(ch: char, run_len: usize, prev: &[Class], next: &[Class]) -> (bool, bool) {
    let mut open = false;
    let mut close = false;
    for &p in prev {
        for &n in next {
            let left =
                n != Class::Space && (n != Class::Punct || p == Class::Space || p == Class::Punct);
            let right =
                p != Class::Space && (p != Class::Punct || n == Class::Space || n == Class::Punct);
            if ch == '_' {
                open |= left && (!right || p == Class::Punct);
                close |= right && (!left || n == Class::Punct);
            } else {
                open |= left;
                close |= right;
            }
            // pulldown-cmark 0.13, `delim_run_can_open`/`delim_run_can_close`.
            let intraword = ch == '*' || (ch == '~' && run_len > 1);
            open |= n != Class::Space
                && ((ch == '*' && n != Class::Punct)
                    || (ch == '~' && run_len > 1)
                    || p == Class::Space
                    || p == Class::Punct);
            close |= p != Class::Space
                && ((intraword && p != Class::Punct) || n == Class::Space || n == Class::Punct);
        }
    }
    (open, close)
}

/// Decides, per character, whether it needs a backslash in `slot`.
fn marks(c: &[char], slot: Slot) -> Vec<bool> {
    let n = c.len();
    let mut m = vec![false; n];
    // Renderer text around a strict value is whitespace or punctuation
    // (`: `, `, `, `**`); around a non-strict one, whitespace or a line end.
    let edge: &'static [Class] = if slot.strict {
        &[Class::Space, Class::Punct]
    } else {
        &[Class::Space]
    };

    // Suffix facts, so that each check below is O(1).
    let mut link_close_after = vec![false; n + 1]; // `](` or `][` at or after i
    let mut gt_after = vec![false; n + 1];
    let mut close_bracket_after = vec![false; n + 1];
    let mut next_gt = vec![usize::MAX; n + 1];
    let mut next_ws = vec![usize::MAX; n + 1];
    for i in (0..n).rev() {
        link_close_after[i] =
            link_close_after[i + 1] || (c[i] == ']' && matches!(c.get(i + 1), Some('(' | '[')));
        gt_after[i] = gt_after[i + 1] || c[i] == '>';
        close_bracket_after[i] = close_bracket_after[i + 1] || c[i] == ']';
        next_gt[i] = if c[i] == '>' { i } else { next_gt[i + 1] };
        next_ws[i] = if c[i].is_whitespace() {
            i
        } else {
            next_ws[i + 1]
        };
    }

    // Delimiter runs of `*`, `_`, `~` and runs of backticks.
    let mut delim_runs: Vec<(char, usize, usize, bool, bool)> = Vec::new();
    let mut tick_runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < n {
        let ch = c[i];
        if matches!(ch, '*' | '_' | '~' | '`') {
            let start = i;
            while i < n && c[i] == ch {
                i += 1;
            }
            if ch == '`' {
                tick_runs.push((start, i));
            } else {
                let prev = classes(start.checked_sub(1).map(|p| c[p]), edge);
                let next = classes(c.get(i).copied(), edge);
                let (open, close) = flanking(ch, i - start, prev, next);
                delim_runs.push((ch, start, i, open, close));
            }
            continue;
        }
        i += 1;
    }

    for ch in ['*', '_', '~'] {
        let runs = delim_runs.iter().filter(|r| r.0 == ch);
        let active = if slot.strict {
            true
        } else {
            // A pair needs an opener strictly before a closer.
            let mut opener_seen = false;
            let mut pair = false;
            for r in runs.clone() {
                if r.4 && opener_seen {
                    pair = true;
                    break;
                }
                opener_seen |= r.3;
            }
            pair
        };
        if active {
            for &(_, start, end, open, close) in runs {
                if open || close {
                    m[start..end].iter_mut().for_each(|x| *x = true);
                }
            }
        }
    }

    if slot.strict || slot.ticks {
        for &(start, end) in &tick_runs {
            m[start..end].iter_mut().for_each(|x| *x = true);
        }
    } else {
        // When two runs pair up, every backtick is escaped: backslash escapes
        // do not work inside code spans, so an unescaped run could still be
        // closed by an escaped one (`` `a\` `` is a code span).
        let mut lengths = std::collections::HashSet::new();
        let pair = tick_runs
            .iter()
            .any(|&(start, end)| !lengths.insert(end - start));
        if pair {
            for &(start, end) in &tick_runs {
                m[start..end].iter_mut().for_each(|x| *x = true);
            }
        }
    }

    for i in 0..n {
        match c[i] {
            '\\' => {
                m[i] = match c.get(i + 1) {
                    Some(next) => next.is_ascii_punctuation(),
                    None => slot.strict,
                }
            }
            '[' => m[i] |= slot.strict || link_close_after[i + 1],
            '<' => {
                m[i] |= slot.strict
                    || match c.get(i + 1) {
                        Some(&d) if d.is_ascii_alphabetic() || matches!(d, '/' | '!' | '?') => {
                            gt_after[i + 1]
                        }
                        // An email autolink: `<local@domain>` with no spaces.
                        Some(&d) if !d.is_whitespace() => {
                            let gt = next_gt[i + 1];
                            gt != usize::MAX && next_ws[i + 1] > gt && c[i + 1..gt].contains(&'@')
                        }
                        _ => false,
                    }
            }
            '&' => m[i] |= entity_at(&c[i + 1..]),
            '|' => m[i] |= slot.table,
            _ => {}
        }
    }

    mark_autolinks(c, &mut m);

    if slot.heading {
        let run = c.iter().rev().take_while(|&&x| x == '#').count();
        if run > 0 && (run == n || matches!(c[n - run - 1], ' ' | '\t')) {
            m[n - run] = true;
        }
    }

    if slot.block_start {
        mark_block_start(c, &mut m, &close_bracket_after);
    }
    m
}

/// `rest` follows an `&`: would it be read as a character reference?
fn entity_at(rest: &[char]) -> bool {
    let digits_then_semi = |s: &[char], max: usize, ok: fn(&char) -> bool| {
        let k = s.iter().take_while(|c| ok(c)).count();
        (1..=max).contains(&k) && s.get(k) == Some(&';')
    };
    match rest.first() {
        Some('#') => match rest.get(1) {
            Some('x' | 'X') => digits_then_semi(&rest[2..], 6, char::is_ascii_hexdigit),
            _ => digits_then_semi(&rest[1..], 7, char::is_ascii_digit),
        },
        Some(c) if c.is_ascii_alphabetic() => {
            let k = rest
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            rest.get(k) == Some(&';')
        }
        _ => false,
    }
}

/// Keeps the start of a list item literal.
fn mark_block_start(c: &[char], m: &mut [bool], close_bracket_after: &[bool]) {
    let first = c[0];
    let ws_or_end = |i: usize| c.get(i).is_none_or(|&x| x == ' ' || x == '\t');
    match first {
        '#' => {
            let run = c.iter().take_while(|&&x| x == '#').count();
            if ws_or_end(run) {
                m[0] = true;
            }
        }
        '>' => m[0] = true,
        '-' | '+' | '*' if ws_or_end(1) => m[0] = true,
        '0'..='9' => {
            let k = c.iter().take_while(|x| x.is_ascii_digit()).count();
            if k <= 9 && matches!(c.get(k), Some('.' | ')')) && ws_or_end(k + 1) {
                m[k] = true;
            }
        }
        '`' | '~' => {
            let run = c.iter().take_while(|&&x| x == first).count();
            if run >= 3 {
                m[..run].iter_mut().for_each(|x| *x = true);
            }
        }
        '[' => m[0] |= close_bracket_after[1],
        '<' => m[0] = true,
        _ => {}
    }
    // Thematic breaks: `---`, `* * *`, `___`… A list item's value follows our `- ` bullet,
    // whose dash counts too: `- --` is a rule (found by the fuzz target `escape`).
    if matches!(first, '-' | '*' | '_') {
        let only = c.iter().all(|&x| x == first || x == ' ' || x == '\t');
        let needed = if first == '-' { 2 } else { 3 };
        if only && c.iter().filter(|&&x| x == first).count() >= needed {
            m[0] = true;
        }
    }
}

#[cfg(test)]
mod tests {

    /// The soft hyphen is invisible where text is shown: a key split by one must not pass for
    /// another string (an outside attack hid the server's key from masking with one).
    #[test]
    fn the_soft_hyphen_is_dropped_like_other_invisible_characters() {
        assert_eq!(sanitize("arc_ab\u{ad}12"), "arc_ab12");
        assert_eq!(sanitize("arc_ab\u{200b}12"), "arc_ab12");
    }

    /// What `sanitize` would drop or rewrite, `reveal` shows: no character can vanish from
    /// text a person approves; and the revealed text has nothing left to sanitize.
    #[test]
    fn reveal_shows_every_character_sanitize_drops() {
        for c in (0u32..=0x10ffff).filter_map(char::from_u32) {
            let s = format!("a{c}b");
            if sanitize(&s) != s && c != '\r' {
                assert!(
                    is_hidden_char(c),
                    "U+{:04X} dropped but not revealed",
                    c as u32
                );
            }
            let (shown, n) = reveal(&s);
            assert_eq!(n, usize::from(is_hidden_char(c)), "U+{:04X}", c as u32);
            assert_eq!(sanitize(&shown), shown, "U+{:04X}", c as u32);
        }
    }

    use super::*;
    use proptest::prelude::*;

    /// No flag set: the other slots each set what they test.
    const PLAIN: Slot = Slot {
        strict: false,
        table: false,
        block_start: false,
        heading: false,
        ticks: false,
    };
    const SLOTS: [Slot; 5] = [
        PLAIN,
        Slot {
            strict: true,
            ..PLAIN
        },
        Slot {
            table: true,
            ..PLAIN
        },
        Slot {
            strict: true,
            block_start: true,
            ..PLAIN
        },
        Slot {
            heading: true,
            ..PLAIN
        },
    ];

    proptest! {
        /// The fast path may only skip values the full scan would leave alone.
        #[test]
        fn fast_path_agrees_with_the_full_scan(s in "[a-z0-9 #>+.)=:/@!-]{1,12}[-a-z0-9 `*_~\\[\\]()<>&|#\\\\!.:]{0,12}") {
            let s = s.trim();
            prop_assume!(!s.is_empty());
            let chars: Vec<char> = s.chars().collect();
            for slot in SLOTS {
                if is_plain(s, slot) {
                    prop_assert!(!marks(&chars, slot).contains(&true), "{:?} {:?}", s, slot);
                }
            }
        }
    }

    /// The full scan of `sanitize`: what `needs_sanitize` must agree with.
    fn needs_sanitize_by_chars(s: &str) -> bool {
        let bytes = s.as_bytes();
        s.char_indices().any(|(i, c)| match c {
            '\r' => bytes.get(i + 1) != Some(&b'\n'),
            '\u{2028}' | '\u{2029}' => true,
            c => is_removed(c),
        })
    }

    proptest! {
        #[test]
        fn the_byte_scan_of_needs_sanitize_agrees_with_the_characters(
            s in "[a-z \t\r\n\x00-\x1f\x7f\u{80}-\u{a0}\u{2028}\u{200b}\u{feff}é—]{0,16}"
        ) {
            prop_assert_eq!(needs_sanitize(&s), needs_sanitize_by_chars(&s), "{:?}", s);
        }
    }

    #[test]
    fn crlf_tabs_and_non_ascii_text_are_kept_as_they_are() {
        for s in ["a\r\nb", "tab\tand\nLF", "7 item(s) — 7 total", "é\r\n", ""] {
            assert!(matches!(sanitize(s), Cow::Borrowed(_)), "{s:?}");
        }
        for (s, clean) in [
            ("a\rb", "a\nb"),
            ("é\u{2028}", "é\n"),
            ("x\x1b[31my", "xy"),
            ("—\u{200b}", "—"),
        ] {
            assert_eq!(sanitize(s), clean, "{s:?}");
        }
    }

    #[test]
    fn character_references() {
        let refs = ["amp;", "#65;", "#x41;", "#X41;", "nbsp;", "#1234567;"];
        for r in refs {
            assert!(entity_at(&r.chars().collect::<Vec<_>>()), "{r}");
        }
        let not_refs = ["", " amp;", "amp", "#;", "#x;", "#12345678;", "#xg;", "1a;"];
        for r in not_refs {
            assert!(!entity_at(&r.chars().collect::<Vec<_>>()), "{r}");
        }
    }

    #[test]
    fn flanking_follows_both_rule_sets() {
        use Class::*;
        // `a~~.~~`: CommonMark would not open here, pulldown-cmark does.
        assert_eq!(flanking('~', 2, &[Other], &[Punct]), (true, true));
        // Intraword `_` neither opens nor closes under either rule set.
        assert_eq!(flanking('_', 1, &[Other], &[Other]), (false, false));
        // A `*` between spaces is literal.
        assert_eq!(flanking('*', 1, &[Space], &[Space]), (false, false));
    }
}
