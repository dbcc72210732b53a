//! Fuzzes the escaper over every text path: whatever the input, no slot may
//! gain Markdown structure and the value's text must come back exactly; error
//! texts (`excerpt`, `quoted_name`, `error_detail`), handler output in its
//! fence and values rendered in lists and objects form no structure and no
//! GFM autolink literal.
#![no_main]

use arcane_mcp::exec::errors::error_detail;
use arcane_mcp::exec::websocket::{ExecOutput, LogOutput};
use arcane_mcp::render::escape::{
    excerpt, fenced, heading_text, inline, inline_strict, list_item_key, list_item_value,
    quoted_name, sanitize, table_cell, table_cell_strict,
};
use arcane_mcp::render::markdown::{RenderContext, render_value};
use libfuzzer_sys::fuzz_target;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn events(md: &str) -> Vec<Event<'_>> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    Parser::new_ext(md, opts).collect()
}

/// Text and code-span content; panics on any element a value could create.
fn text_of(md: &str, allowed: &[&str]) -> String {
    let mut out = String::new();
    for ev in events(md) {
        match &ev {
            Event::Text(t) | Event::Code(t) => out.push_str(t),
            Event::Start(tag) => {
                let name = match tag {
                    Tag::Paragraph => "p",
                    Tag::Heading { .. } => "h",
                    Tag::List(_) => "list",
                    Tag::Item => "item",
                    Tag::Table(_) => "table",
                    Tag::TableHead => "thead",
                    Tag::TableRow => "tr",
                    Tag::TableCell => "td",
                    Tag::CodeBlock(_) => "code",
                    _ => "",
                };
                assert!(allowed.contains(&name), "{tag:?} in {md:?}");
            }
            Event::End(_) => {}
            other => panic!("{other:?} in {md:?}"),
        }
    }
    out
}

/// Panics on a GFM autolink literal (`http://`, `https://`, `ftp://`, `www.`
/// at a word start, `a@b.c`) in the source of a text node outside code:
/// GFM renderers link these without any syntax, and a backslash in the source
/// is what breaks them.
fn no_autolinks(md: &str) {
    let mut in_code = false;
    for (ev, range) in Parser::new_ext(md, Options::ENABLE_GFM | Options::ENABLE_TABLES).into_offset_iter() {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(_) if !in_code => {
                let src = md[range].to_ascii_lowercase();
                for scheme in ["http://", "https://", "ftp://"] {
                    assert!(!src.contains(scheme), "autolink in {md:?}");
                }
                let b = src.as_bytes();
                for (i, _) in src.match_indices("www.") {
                    let start = i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'*' | b'_' | b'~' | b'(');
                    let next = b.get(i + 4).is_some_and(u8::is_ascii_alphanumeric);
                    assert!(!(start && next), "www autolink in {md:?}");
                }
                for (i, _) in src.match_indices('@') {
                    let local = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"._+-".contains(&b[i - 1]));
                    let domain: Vec<u8> = b[i + 1..]
                        .iter()
                        .copied()
                        .take_while(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
                        .collect();
                    let dotted = domain.windows(2).any(|w| w[0] == b'.' && w[1].is_ascii_alphanumeric());
                    assert!(!(local && dotted), "email autolink in {md:?}");
                }
            }
            _ => {}
        }
    }
}

/// Like [`text_of`] for whole texts of ours, where line breaks are fine.
fn structure_free(md: &str, allowed: &[&str]) {
    for ev in events(md) {
        match &ev {
            Event::Text(_) | Event::Code(_) | Event::End(_) | Event::SoftBreak | Event::HardBreak => {}
            Event::Start(tag) => {
                let name = match tag {
                    Tag::Paragraph => "p",
                    Tag::Heading { .. } => "h",
                    Tag::List(_) => "list",
                    Tag::Item => "item",
                    Tag::Table(_) => "table",
                    Tag::TableHead => "thead",
                    Tag::TableRow => "tr",
                    Tag::TableCell => "td",
                    Tag::CodeBlock(_) => "code",
                    _ => "",
                };
                assert!(allowed.contains(&name), "{tag:?} in {md:?}");
            }
            other => panic!("{other:?} in {md:?}"),
        }
    }
}

fn one_line(s: &str) -> String {
    sanitize(s).replace("\r\n", " ").replace('\n', " ")
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (a, b) = s.split_at(s.char_indices().nth(s.chars().count() / 2).map_or(s.len(), |(i, _)| i));
    let (ea, eb) = (one_line(a), one_line(b));

    let clean = sanitize(&s);
    assert_eq!(sanitize(&clean), clean);

    let got = text_of(&format!("v: {}", inline(a)), &["p"]);
    let want = if ea.is_empty() { "v:".to_owned() } else { format!("v: {ea}") };
    assert_eq!(got, want);

    if !ea.is_empty() && !eb.is_empty() {
        let md = format!("- {}: {}, {}", list_item_key(a), inline_strict(b), inline(a));
        assert_eq!(text_of(&md, &["list", "item"]), format!("{ea}: {eb}, {ea}"));
    }

    let md = format!(
        "| x | y |\n|---|---|\n| {} | {}, {} |\n",
        table_cell(a),
        table_cell_strict(a),
        table_cell_strict(b)
    );
    let mut cells = 0;
    for ev in events(&md) {
        if matches!(ev, Event::End(TagEnd::TableCell)) {
            cells += 1;
        }
    }
    assert_eq!(cells, 4, "{md:?}");
    text_of(&md, &["table", "thead", "tr", "td"]);

    assert_eq!(text_of(&format!("# {}", heading_text(a)), &["h"]), ea);
    assert_eq!(text_of(&format!("- {}", list_item_value(a)), &["list", "item"]), ea);

    let md = format!("{}after", fenced(a, b));
    let text = text_of(&md, &["code", "p"]);
    assert!(text.ends_with("after"), "{md:?}");

    // Error texts: Arcane's words, the client's names.
    let md = format!(
        "x.y failed: Arcane answered 500 — {}\n- {}\n\nUnknown action {}.",
        excerpt(a, 300),
        excerpt(b, 300),
        quoted_name(&s, 100)
    );
    structure_free(&md, &["p", "list", "item"]);
    no_autolinks(&md);
    for ct in ["application/json", "text/html", ""] {
        let e = error_detail(502, ct, data);
        let md = format!("x failed: {}", e.shown());
        structure_free(&md, &["p"]);
        no_autolinks(&md);
    }

    // Handler output: one heading (ours), the output inside its fence.
    let logs = LogOutput {
        lines: s.lines().map(str::to_string).collect(),
        truncated: Some(b.to_string()),
    };
    let exec = ExecOutput {
        output: s.to_string(),
        exit_code: Some(0),
        truncated: Some(a.to_string()),
    };
    for out in [
        arcane_mcp::present::text::log_text(&logs),
        arcane_mcp::present::text::exec_text(&exec),
    ] {
        let md = format!("# Title\n\n{out}");
        let headings = events(&md)
            .iter()
            .filter(|e| matches!(e, Event::Start(Tag::Heading { .. })))
            .count();
        assert_eq!(headings, 1, "{md:?}");
        structure_free(&md, &["h", "p", "code"]);
        no_autolinks(&md);
    }

    // Values in lists and objects.
    let list = serde_json::json!({"data": [{"name": a, "status": b}, {"name": b, "status": a}]});
    let object = serde_json::json!({"name": a, "labels": {(b.to_string()): a}, "note": s});
    for v in [list, object] {
        let md = render_value(&RenderContext { title: "T", ..Default::default() }, &v);
        structure_free(&md, &["h", "p", "list", "item", "table", "thead", "tr", "td", "code"]);
        no_autolinks(&md);
    }
});
