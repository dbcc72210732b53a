//! What the fuzz targets check in a Markdown text: which elements it forms and whether it
//! holds a GFM autolink literal. Shared by `escape` and `error_text`.
// Each target uses part of this module.
#![allow(dead_code)]

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub fn events(md: &str) -> Vec<Event<'_>> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    Parser::new_ext(md, opts).collect()
}

/// Text and code-span content; panics on any element a value could create.
pub fn text_of(md: &str, allowed: &[&str]) -> String {
    let mut out = String::new();
    for ev in events(md) {
        match &ev {
            Event::Text(t) | Event::Code(t) => out.push_str(t),
            Event::Start(tag) => {
                assert!(allowed.contains(&tag_name(tag)), "{tag:?} in {md:?}");
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
pub fn no_autolinks(md: &str) {
    let mut in_code = false;
    for (ev, range) in
        Parser::new_ext(md, Options::ENABLE_GFM | Options::ENABLE_TABLES).into_offset_iter()
    {
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
                    let start = i == 0
                        || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'*' | b'_' | b'~' | b'(');
                    let next = b.get(i + 4).is_some_and(u8::is_ascii_alphanumeric);
                    assert!(!(start && next), "www autolink in {md:?}");
                }
                for (i, _) in src.match_indices('@') {
                    let local =
                        i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"._+-".contains(&b[i - 1]));
                    let domain: Vec<u8> = b[i + 1..]
                        .iter()
                        .copied()
                        .take_while(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
                        .collect();
                    let dotted = domain
                        .windows(2)
                        .any(|w| w[0] == b'.' && w[1].is_ascii_alphanumeric());
                    assert!(!(local && dotted), "email autolink in {md:?}");
                }
            }
            _ => {}
        }
    }
}

/// Like [`text_of`] for whole texts of ours, where line breaks are fine.
pub fn structure_free(md: &str, allowed: &[&str]) {
    for ev in events(md) {
        match &ev {
            Event::Text(_)
            | Event::Code(_)
            | Event::End(_)
            | Event::SoftBreak
            | Event::HardBreak => {}
            Event::Start(tag) => {
                assert!(allowed.contains(&tag_name(tag)), "{tag:?} in {md:?}");
            }
            other => panic!("{other:?} in {md:?}"),
        }
    }
}

/// The short name of a block a check allows (`""` for any other tag, which no check allows).
fn tag_name(tag: &Tag) -> &'static str {
    match tag {
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
    }
}
