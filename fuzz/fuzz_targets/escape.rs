//! Fuzzes the escaper over every text path: whatever the input, no slot may
//! gain Markdown structure and the value's text must come back exactly; error
//! texts (`excerpt`, `quoted_name`) and values rendered in lists and objects
//! form no structure and no GFM autolink literal. Needs only `arcane-markdown`.
#![no_main]

mod markdown_checks;

use arcane_markdown::{
    RenderContext, excerpt, fenced, heading_text, inline, inline_strict, list_item_key,
    list_item_value, quoted_name, render_value, sanitize, table_cell, table_cell_strict,
};
use libfuzzer_sys::fuzz_target;
use markdown_checks::{events, no_autolinks, structure_free, text_of};
use pulldown_cmark::{Event, TagEnd};

fn one_line(s: &str) -> String {
    sanitize(s).replace("\r\n", " ").replace('\n', " ")
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (a, b) = s.split_at(
        s.char_indices()
            .nth(s.chars().count() / 2)
            .map_or(s.len(), |(i, _)| i),
    );
    let (ea, eb) = (one_line(a), one_line(b));

    let clean = sanitize(&s);
    assert_eq!(sanitize(&clean), clean);

    let got = text_of(&format!("v: {}", inline(a)), &["p"]);
    let want = if ea.is_empty() {
        "v:".to_owned()
    } else {
        format!("v: {ea}")
    };
    assert_eq!(got, want);

    if !ea.is_empty() && !eb.is_empty() {
        let md = format!(
            "- {}: {}, {}",
            list_item_key(a),
            inline_strict(b),
            inline(a)
        );
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
    assert_eq!(
        text_of(&format!("- {}", list_item_value(a)), &["list", "item"]),
        ea
    );

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

    // Values in lists and objects.
    let list = serde_json::json!({"data": [{"name": a, "status": b}, {"name": b, "status": a}]});
    let object = serde_json::json!({"name": a, "labels": {(b.to_string()): a}, "note": s});
    for v in [list, object] {
        let md = render_value(
            &RenderContext {
                title: "T",
                ..Default::default()
            },
            &v,
        );
        structure_free(
            &md,
            &[
                "h", "p", "list", "item", "table", "thead", "tr", "td", "code",
            ],
        );
        no_autolinks(&md);
    }
});
