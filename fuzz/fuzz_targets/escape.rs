//! Fuzzes the escaper: whatever the input, no slot may gain Markdown
//! structure and the value's text must come back exactly.
#![no_main]

use arcane_mcp::render::escape::{
    fenced, heading_text, inline, inline_strict, list_item_key, list_item_value, sanitize,
    table_cell, table_cell_strict,
};
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
});
