//! The escaper against a corpus of hostile values, in every slot the
//! renderer writes values into, checked by parsing the result as GFM.

use crate::support;

use arcane_markdown::{
    Slot, code_span, escape, fenced, heading_text, inline, inline_strict, list_item_key,
    list_item_value, sanitize, table_cell, table_cell_strict,
};
use std::borrow::Cow;
use support::*;

fn assert_clean(md: &str) {
    let events = parse(md);
    let bad = forbidden(&events);
    assert!(bad.is_empty(), "structure from a value in {md:?}: {bad:?}");
}

/// A value written as a code span must be wholly inside it.
fn assert_code_spans(t: &InlineText, whole: &[String], md: &str) {
    for span in &t.code_spans {
        assert!(whole.contains(span), "partial code span {span:?} in {md:?}");
    }
}

#[test]
fn sanitize_removes_terminal_sequences_and_invisibles() {
    let cases: &[(&str, &str)] = &[
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[2J\x1b[1;1Hcleared\x1b[K", "cleared"),
        ("\x1b[?25lhidden\x1b[?25h", "hidden"),
        ("\x1b]0;title\x07name", "name"),
        ("\x1b]2;title\x1b\\name", "name"),
        ("\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"),
        ("\x1b]8;;http://evil\x07link\x1b]8;;\x07", "link"),
        ("\x1bPdcs\x1b\\x", "x"),
        ("\x1b(Bcharset", "charset"),
        ("\x1b7saved\x1b8", "saved"),
        ("\x1b", ""),
        ("a\x1b", "a"),
        ("\x1b]0;unterminated\nnext", "\nnext"),
        ("\x1b[31", ""),
        ("\u{9b}31mc1csi", "c1csi"),
        ("\u{9d}0;t\u{9c}osc", "osc"),
        ("a\x00b\x01c\x07d\x08e\x0bf\x0cg\x7fh", "abcdefgh"),
        ("c1\u{85}\u{80}\u{8f}x", "c1x"),
        ("\u{9f}apc\u{9c}x", "x"),
        ("\u{202e}gnp.exe", "gnp.exe"),
        ("\u{202a}\u{202b}\u{202c}\u{202d}ltr", "ltr"),
        ("\u{2066}iso\u{2067}\u{2068}late\u{2069}", "isolate"),
        ("\u{200e}\u{200f}\u{061c}marks", "marks"),
        (
            "zero\u{200b}width\u{200c}non\u{200d}joiner\u{2060}wj",
            "zerowidthnonjoinerwj",
        ),
        ("\u{feff}bom", "bom"),
        ("line1\rline2", "line1\nline2"),
        ("crlf\r\nnext", "crlf\r\nnext"),
        ("\r\r\n", "\n\r\n"),
        ("sep\u{2028}para\u{2029}end", "sep\npara\nend"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("émoji 🐳 ok", "émoji 🐳 ok"),
    ];
    for (input, want) in cases {
        assert_eq!(sanitize(input), *want, "sanitize({input:?})");
        assert_eq!(sanitize(want), *want, "idempotent on {want:?}");
    }
}

#[test]
fn sanitize_borrows_clean_text() {
    for v in ORDINARY
        .iter()
        .chain(["a\r\nb", "tab\there", "multi\nline"].iter())
    {
        assert!(matches!(sanitize(v), Cow::Borrowed(_)), "{v:?}");
    }
}

#[test]
fn ordinary_values_come_through_untouched() {
    for v in ORDINARY {
        for (name, out) in [
            ("inline", inline(v)),
            ("table_cell", table_cell(v)),
            ("heading_text", heading_text(v)),
            ("list_item_value", list_item_value(v)),
        ] {
            assert_eq!(out, *v, "{name}({v:?})");
            assert!(matches!(out, Cow::Borrowed(_)), "{name}({v:?}) allocated");
        }
    }
    // Strict slots leave plain identifiers alone too.
    for v in [
        "my_container",
        "web-1",
        "created_at",
        "repoTags",
        "nginx:1.25",
    ] {
        assert_eq!(inline_strict(v), v);
        assert_eq!(list_item_key(v), v);
        assert_eq!(table_cell_strict(v), v);
    }
}

#[test]
fn escaping_examples() {
    let cases: &[(&str, &str)] = &[
        ("<none>:<none>", "`<none>:<none>`"),
        ("<script>alert(1)</script>", "`<script>alert(1)</script>`"),
        ("say <b>hi</b> now", "say \\<b>hi\\</b> now"),
        ("a <!-- c --> b", "a \\<!-- c --> b"),
        ("go <http://x> now", "go \\<http\\://x> now"),
        ("mail <a@b.c> me", "mail \\<a\\@b.c> me"),
        // GFM autolink literals: the character that makes each one is escaped.
        (
            "see https://evil.example/x now",
            "see https\\://evil.example/x now",
        ),
        ("go to www.evil.example now", "go to www\\.evil.example now"),
        ("mail bob@evil.example now", "mail bob\\@evil.example now"),
        ("https://evil.example", "`https://evil.example`"),
        ("user@example.com", "`user@example.com`"),
        ("nginx@sha256:0a1b", "nginx@sha256:0a1b"),
        ("a www.b", "a www\\.b"),
        ("awww.b c", "awww.b c"),
        (
            "click [here](http://evil) now",
            "click \\[here](http\\://evil) now",
        ),
        ("ref [a][b] x", "ref \\[a][b] x"),
        ("plain [brackets] stay", "plain [brackets] stay"),
        ("some *emph* text", "some \\*emph\\* text"),
        ("strong **b** text", "strong \\*\\*b\\*\\* text"),
        ("under _score_ here", "under \\_score\\_ here"),
        ("snake_case and more_words", "snake_case and more_words"),
        ("struck ~~out~~ here", "struck \\~\\~out\\~\\~ here"),
        ("tick `code` here", "tick \\`code\\` here"),
        ("lone ` tick", "lone ` tick"),
        ("a &amp; b", "a \\&amp; b"),
        ("a & b", "a & b"),
        ("C:\\dir\\*x y", "C:\\dir\\\\*x y"),
        ("*a*", "`*a*`"),
        ("_a_", "`_a_`"),
        ("`", "`"),
        ("a`b`c", "``a`b`c``"),
        ("``x``", "``` ``x`` ```"),
        (" lead", "` lead`"),
        ("both  ", "`both  `"),
        (" x ", "`  x  `"),
        ("   ", "`   `"),
        ("", ""),
        ("a\nb", "a b"),
        ("\x1b[1mbold\x1b[0m", "bold"),
    ];
    for (input, want) in cases {
        assert_eq!(inline(input), *want, "inline({input:?})");
    }
    assert_eq!(table_cell("a | b"), "a \\| b");
    assert_eq!(table_cell("a|b"), "`a\\|b`");
    assert_eq!(table_cell("x\ny"), "x y");
    assert_eq!(heading_text("Project C #"), "Project C \\#");
    assert_eq!(heading_text("Project C#"), "Project C#");
    assert_eq!(heading_text("###"), "`###`");
    assert_eq!(list_item_value("# h"), "\\# h");
    assert_eq!(list_item_value("> q"), "\\> q");
    assert_eq!(list_item_value("- x"), "\\- x");
    assert_eq!(list_item_value("+ x"), "\\+ x");
    assert_eq!(list_item_value("* x"), "\\* x");
    assert_eq!(list_item_value("1. x"), "1\\. x");
    assert_eq!(list_item_value("1) x"), "1\\) x");
    assert_eq!(list_item_value("- - -"), "\\- - -");
    assert_eq!(list_item_value("---"), "`---`");
    assert_eq!(list_item_value("``` rust"), "\\`\\`\\` rust");
    assert_eq!(list_item_value("~~~ x"), "\\~\\~\\~ x");
    assert_eq!(list_item_value("[ ] box"), "\\[ ] box");
    assert_eq!(list_item_value("[x]: http://d"), "\\[x]: http\\://d");
    assert_eq!(list_item_value("<div class=x"), "\\<div class=x");
    assert_eq!(list_item_value("1.5 GB"), "1.5 GB");
    assert_eq!(list_item_value("-1"), "-1");
    assert_eq!(inline_strict("app_"), "`app_`");
    assert_eq!(inline_strict("a * b"), "a * b");
    assert_eq!(inline_strict("*x"), "`*x`");
    assert_eq!(inline_strict("x [y"), "x \\[y");
    assert_eq!(inline_strict("x `y"), "x \\`y");
    assert_eq!(inline_strict("end\\"), "`end\\`");
    assert_eq!(code_span(""), "");
    assert_eq!(code_span("a"), "`a`");
    assert_eq!(code_span("``"), "``` `` ```");
    let slot = Slot {
        strict: true,
        table: true,
        block_start: false,
        heading: false,
        ticks: false,
    };
    assert_eq!(escape("x|y", slot), table_cell_strict("x|y"));
}

#[test]
fn fenced_blocks_are_literal() {
    assert_eq!(fenced("a\nb", "text"), "```text\na\nb\n```\n");
    assert_eq!(fenced("a\n", ""), "```\na\n```\n");
    assert_eq!(fenced("", "json"), "```json\n```\n");
    assert_eq!(fenced("x", "a`b\nc"), "```abc\nx\n```\n");
    assert_eq!(fenced("````\nx", ""), "`````\n````\nx\n`````\n");
    for v in hostile_corpus() {
        for info in ["", "text", "json"] {
            let md = fenced(&v, info);
            let events = parse(&md);
            assert_clean(&md);
            let b = blocks(&events);
            assert_eq!(b.code_blocks, 1, "{md:?}");
            assert_eq!(b.paragraphs + b.headings + b.lists + b.tables, 0, "{md:?}");
            let mut want = sanitize(&v).replace("\r\n", "\n");
            if !want.is_empty() && !want.ends_with('\n') {
                want.push('\n');
            }
            assert_eq!(
                code_blocks(&events)[0].replace("\r\n", "\n"),
                want,
                "{md:?}"
            );
        }
    }
}

#[test]
fn corpus_in_running_text() {
    for v in hostile_corpus() {
        let e = expected_inline(&v);
        let md = format!("v: {}", inline(&v));
        let events = parse(&md);
        assert_clean(&md);
        let b = blocks(&events);
        assert_eq!(
            b,
            Blocks {
                paragraphs: 1,
                ..Blocks::default()
            },
            "{md:?}"
        );
        let p = &paragraph_texts(&events)[0];
        let want = if e.is_empty() {
            "v:".to_owned()
        } else {
            format!("v: {e}")
        };
        assert_eq!(p.text, want, "{md:?}");
        assert_code_spans(p, std::slice::from_ref(&e), &md);

        let md = format!("v: {}", code_span(&v));
        let events = parse(&md);
        assert_clean(&md);
        assert_eq!(paragraph_texts(&events)[0].text, want, "{md:?}");
    }
}

#[test]
fn corpus_pairs_in_strict_slots() {
    let corpus: Vec<String> = hostile_corpus()
        .into_iter()
        .filter(|v| !expected_inline(v).is_empty())
        .collect();
    for x in &corpus {
        let ex = expected_inline(x);
        for y in &corpus {
            let ey = expected_inline(y);
            // A short list: `v: x, y, x`.
            let md = format!(
                "v: {}, {}, {}",
                inline_strict(x),
                inline_strict(y),
                inline_strict(x)
            );
            let events = parse(&md);
            assert_clean(&md);
            assert_eq!(
                blocks(&events),
                Blocks {
                    paragraphs: 1,
                    ..Blocks::default()
                },
                "{md:?}"
            );
            let p = &paragraph_texts(&events)[0];
            assert_eq!(p.text, format!("v: {ex}, {ey}, {ex}"), "{md:?}");
            assert_code_spans(p, &[ex.clone(), ey.clone()], &md);

            // An object line: `- key: value`.
            let md = format!(
                "- {}: {}\n- {}: {}",
                list_item_key(x),
                inline(y),
                list_item_key(y),
                inline(x)
            );
            let events = parse(&md);
            assert_clean(&md);
            assert_eq!(
                blocks(&events),
                Blocks {
                    lists: 1,
                    items: 2,
                    ..Blocks::default()
                },
                "{md:?}"
            );
            let items = item_texts(&events);
            assert_eq!(items[0].text, format!("{ex}: {ey}"), "{md:?}");
            assert_eq!(items[1].text, format!("{ey}: {ex}"), "{md:?}");
            assert_code_spans(&items[0], &[ex.clone(), ey.clone()], &md);

            // A bold key followed by its value.
            let md = format!("**{}**: {}", inline_strict(x), inline(y));
            let events = parse(&md);
            let strong = events
                .iter()
                .filter(|e| matches!(e, pulldown_cmark::Event::Start(pulldown_cmark::Tag::Strong)))
                .count();
            assert_eq!(strong, 1, "{md:?}");
            let p = &paragraph_texts(&events)[0];
            assert_eq!(p.text, format!("{ex}: {ey}"), "{md:?}");
        }
    }
}

#[test]
fn corpus_in_tables_headings_and_list_items() {
    let corpus = hostile_corpus();
    let mut md = String::from("| h1 | h2 | h3 |\n|---|---|---|\n");
    for (i, x) in corpus.iter().enumerate() {
        let y = &corpus[(i + 1) % corpus.len()];
        md.push_str(&format!(
            "| {} | {}, {} | {} |\n",
            table_cell(x),
            table_cell_strict(x),
            table_cell_strict(y),
            table_cell(y)
        ));
    }
    let events = parse(&md);
    assert_clean(&md);
    assert_eq!(
        blocks(&events),
        Blocks {
            tables: 1,
            ..Blocks::default()
        }
    );
    let tables = table_cells(&events);
    assert_eq!(tables[0].len(), corpus.len() + 1);
    for (i, x) in corpus.iter().enumerate() {
        let y = &corpus[(i + 1) % corpus.len()];
        let row = &tables[0][i + 1];
        assert_eq!(row.len(), 3, "row of {x:?}");
        let (ex, ey) = (expected_inline(x), expected_inline(y));
        // GFM trims cells; only an empty value has nothing to protect.
        assert_eq!(row[0].text, ex, "cell of {x:?}");
        assert_eq!(
            row[1].text.trim(),
            format!("{ex}, {ey}").trim(),
            "list cell of {x:?}, {y:?}"
        );
        assert_eq!(row[2].text, ey, "cell of {y:?}");
        assert_code_spans(&row[0], std::slice::from_ref(&ex), &md);
        assert_code_spans(&row[1], &[ex.clone(), ey.clone()], &md);
    }

    for x in &corpus {
        let e = expected_inline(x);

        let md = format!("# {}", heading_text(x));
        let events = parse(&md);
        assert_clean(&md);
        assert_eq!(
            blocks(&events),
            Blocks {
                headings: 1,
                ..Blocks::default()
            },
            "{md:?}"
        );
        assert_eq!(heading_texts(&events)[0].text, e, "{md:?}");

        let md = format!("- {}\n- {}", list_item_value(x), list_item_value(x));
        let events = parse(&md);
        assert_clean(&md);
        assert_eq!(blocks(&events).lists, 1, "{md:?}");
        assert_eq!(blocks(&events).items, 2, "{md:?}");
        assert_eq!(
            blocks(&events).headings + blocks(&events).code_blocks,
            0,
            "{md:?}"
        );
        for it in item_texts(&events) {
            assert_eq!(it.text, e, "{md:?}");
        }
    }
}

/// Inputs the fuzz target `escape` once broke (tests/fixtures/fuzz-regressions/escape/): each
/// value, escaped for a list item after our `- ` bullet, stays one item of plain text.
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/fuzz-regressions/escape"
    );
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("the regression inputs") {
        let bytes = std::fs::read(entry.expect("an entry").path()).expect("an input");
        let s = String::from_utf8_lossy(&bytes);
        // The target's halves of the input.
        let mid = s
            .char_indices()
            .nth(s.chars().count() / 2)
            .map_or(s.len(), |(i, _)| i);
        // An error's excerpt, then a list item of another: no table across the two lines.
        let two = format!(
            "x.y failed: Arcane answered 500 — {}\n- {}",
            arcane_markdown::excerpt(&s[..mid], 300),
            arcane_markdown::excerpt(&s[mid..], 300)
        );
        assert!(
            !support::parse(&two).iter().any(|e| matches!(
                e,
                pulldown_cmark::Event::Start(pulldown_cmark::Tag::Table(_))
            )),
            "{two:?} is a table"
        );
        for v in [&s[..mid], &s[mid..], &s[..]] {
            for md in [
                format!("- {}", list_item_value(v)),
                format!("- {}", arcane_markdown::excerpt(v, 300)),
            ] {
                let events = support::parse(&md);
                assert!(support::forbidden(&events).is_empty(), "{md:?}");
                assert!(
                    !events
                        .iter()
                        .any(|e| matches!(e, pulldown_cmark::Event::Rule)),
                    "{md:?} is a rule"
                );
            }
        }
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {dir}");
    for v in ["--", "- -", "-\t-", "---"] {
        let md = format!("- {}", list_item_value(v));
        assert!(
            !support::parse(&md)
                .iter()
                .any(|e| matches!(e, pulldown_cmark::Event::Rule)),
            "{md:?}"
        );
    }
}
