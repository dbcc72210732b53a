//! Property tests of the escaper's invariants, checked by parsing.

use crate::support;

use arcane_markdown::{RenderContext, render_value};
use arcane_markdown::{
    code_span, fenced, heading_text, inline, inline_strict, list_item_key, list_item_value,
    sanitize, table_cell, table_cell_strict,
};
use proptest::prelude::*;
use support::*;

/// Characters that matter to Markdown, terminals or Unicode layout, mixed
/// with ordinary ones so that delimiters find partners.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "`", "``", "```", "*", "**", "_", "__", "~", "~~", "[", "]", "(", ")", "](", "][",
            "<", ">", "!", "&", "&amp;", "&#65;", "#", "|", "\\", "-", "+", ".", "1.", "1)", ":",
            "=", "@", "/", " ", "  ", "\t", "\n", "\r", "\r\n", "\x1b", "\x1b[", "\x1b]", "\x07",
            "\x1b\\", "m", "31", ";", "\u{9b}", "\u{9c}", "\u{85}", "\u{202e}", "\u{2066}",
            "\u{200b}", "\u{feff}", "\u{2028}", "\u{2029}", "\u{a0}", "é", "🐳", "<a>", "<!--",
            "-->", "http://x", "a@b", "[ ]",
        ]).prop_map(str::to_owned),
        3 => "[a-z0-9]{1,4}",
        1 => any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn hostile() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..16).prop_map(|v| v.concat())
}

fn json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        hostile().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((hostile(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn allowed_char(c: char) -> bool {
    !matches!(c,
        '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\x7f'..='\u{9f}'
        | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2028}' | '\u{2029}' | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn sanitize_is_idempotent_and_leaves_no_controls(s in hostile()) {
        let once = sanitize(&s).into_owned();
        prop_assert_eq!(sanitize(&once), once.as_str());
        prop_assert!(once.chars().all(allowed_char), "{:?}", once);
        // A CR survives only in front of a LF.
        let b = once.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'\r' {
                prop_assert_eq!(b.get(i + 1), Some(&b'\n'));
            }
        }
    }

    #[test]
    fn sanitize_on_arbitrary_strings(s in any::<String>()) {
        let once = sanitize(&s).into_owned();
        prop_assert_eq!(sanitize(&once), once.as_str());
        prop_assert!(once.chars().all(allowed_char));
    }

    #[test]
    fn inline_is_plain_text_in_a_paragraph(s in hostile()) {
        let e = expected_inline(&s);
        let md = format!("v: {}", inline(&s));
        let events = parse(&md);
        prop_assert!(forbidden(&events).is_empty(), "{:?} -> {:?}", md, forbidden(&events));
        prop_assert_eq!(blocks(&events), Blocks { paragraphs: 1, ..Blocks::default() }, "{:?}", md);
        let p = &paragraph_texts(&events)[0];
        let want = if e.is_empty() { "v:".to_owned() } else { format!("v: {e}") };
        prop_assert_eq!(&p.text, &want, "{:?}", md);
        for span in &p.code_spans {
            prop_assert_eq!(span, &e);
        }
    }

    #[test]
    fn strict_values_do_not_pair_across(a in hostile(), b in hostile()) {
        // Empty values are covered elsewhere; here both must show.
        let a = if expected_inline(&a).is_empty() { format!("x{a}") } else { a };
        let b = if expected_inline(&b).is_empty() { format!("y{b}") } else { b };
        let (ea, eb) = (expected_inline(&a), expected_inline(&b));
        let md = format!("- {}: {}, {} {}", list_item_key(&a), inline_strict(&b), inline_strict(&a), inline(&b));
        let events = parse(&md);
        prop_assert!(forbidden(&events).is_empty(), "{:?} -> {:?}", md, forbidden(&events));
        prop_assert_eq!(blocks(&events), Blocks { lists: 1, items: 1, ..Blocks::default() }, "{:?}", md);
        prop_assert_eq!(&item_texts(&events)[0].text, &format!("{ea}: {eb}, {ea} {eb}"), "{:?}", md);
    }

    #[test]
    fn table_cell_never_adds_a_column(a in hostile(), b in hostile()) {
        let md = format!(
            "| a | b | c |\n|---|---|---|\n| {} | {}, {} | end |\n",
            table_cell(&a), table_cell_strict(&a), table_cell_strict(&b)
        );
        let events = parse(&md);
        prop_assert!(forbidden(&events).is_empty(), "{:?}", md);
        prop_assert_eq!(blocks(&events), Blocks { tables: 1, ..Blocks::default() }, "{:?}", md);
        let t = &table_cells(&events)[0];
        prop_assert_eq!(t.len(), 2);
        prop_assert_eq!(t[1].len(), 3, "{:?}", md);
        prop_assert_eq!(&t[1][0].text, &expected_inline(&a), "{:?}", md);
        let joined = format!("{}, {}", expected_inline(&a), expected_inline(&b));
        prop_assert_eq!(t[1][1].text.trim(), joined.trim(), "{:?}", md);
        prop_assert_eq!(&t[1][2].text, "end");
    }

    #[test]
    fn headings_and_list_items_stay_single_blocks(s in hostile()) {
        let e = expected_inline(&s);
        let md = format!("# {}\n\n- {}\n", heading_text(&s), list_item_value(&s));
        let events = parse(&md);
        prop_assert!(forbidden(&events).is_empty(), "{:?}", md);
        let b = blocks(&events);
        prop_assert_eq!((b.headings, b.lists, b.items, b.code_blocks, b.tables), (1, 1, 1, 0, 0), "{:?}", md);
        prop_assert_eq!(&heading_texts(&events)[0].text, &e, "{:?}", md);
        prop_assert_eq!(&item_texts(&events)[0].text, &e, "{:?}", md);
    }

    #[test]
    fn fenced_never_closes_early(s in hostile(), info in hostile()) {
        let md = format!("{}after", fenced(&s, &info));
        let events = parse(&md);
        let b = blocks(&events);
        prop_assert_eq!((b.code_blocks, b.paragraphs), (1, 1), "{:?}", md);
        let mut want = sanitize(&s).replace("\r\n", "\n");
        if !want.is_empty() && !want.ends_with('\n') {
            want.push('\n');
        }
        prop_assert_eq!(code_blocks(&events)[0].replace("\r\n", "\n"), want, "{:?}", md);
        prop_assert_eq!(&paragraph_texts(&events)[0].text, "after");
    }

    #[test]
    fn code_span_is_exact(s in hostile()) {
        let e = expected_inline(&s);
        let md = format!("v: {}", code_span(&s));
        let events = parse(&md);
        prop_assert!(forbidden(&events).is_empty(), "{:?}", md);
        let want = if e.is_empty() { "v:".to_owned() } else { format!("v: {e}") };
        prop_assert_eq!(&paragraph_texts(&events)[0].text, &want, "{:?}", md);
    }

    #[test]
    fn rendering_any_value_is_safe(v in json(), title in hostile()) {
        let columns = vec!["id".to_owned(), "a.b".to_owned()];
        for ctx in [
            RenderContext { title: &title, ..Default::default() },
            RenderContext { title: &title, columns: Some(&columns), full_item_action: Some("`x.get`"), ..Default::default() },
        ] {
            let list = serde_json::json!({"items": [v.clone(), v.clone()], "counts": v.clone()});
            for value in [&v, &list] {
                let md = render_value(&ctx, value);
                prop_assert!(md.chars().all(allowed_char));
                let events = parse(&md);
                prop_assert!(forbidden(&events).is_empty(), "{:?} -> {:?}", md, forbidden(&events));
                prop_assert!(blocks(&events).tables <= 1, "{:?}", md);
            }
        }
    }
}
