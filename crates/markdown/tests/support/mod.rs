//! Shared helpers of the rendering tests (`escape`, `render`, `props`): parse rendered Markdown the way a
//! GFM reader would and report what structure it found.
#![allow(dead_code)]

use arcane_markdown::sanitize;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub fn opts() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

pub fn parse(md: &str) -> Vec<Event<'_>> {
    Parser::new_ext(md, opts()).collect()
}

/// What an inline slot should show for `x`: the documented removals of
/// `sanitize`, and line breaks turned into spaces.
pub fn expected_inline(x: &str) -> String {
    sanitize(x).replace("\r\n", " ").replace('\n', " ")
}

/// Elements no value may create anywhere in the text.
pub fn forbidden(events: &[Event<'_>]) -> Vec<String> {
    let mut bad = Vec::new();
    for ev in events {
        let hit = match ev {
            Event::Start(tag) => matches!(
                tag,
                Tag::Link { .. }
                    | Tag::Image { .. }
                    | Tag::HtmlBlock
                    | Tag::Emphasis
                    | Tag::Strong
                    | Tag::Strikethrough
                    | Tag::BlockQuote(_)
                    | Tag::FootnoteDefinition(_)
                    | Tag::DefinitionList
                    | Tag::Superscript
                    | Tag::Subscript
            ),
            Event::Html(_)
            | Event::InlineHtml(_)
            | Event::TaskListMarker(_)
            | Event::Rule
            | Event::HardBreak
            | Event::SoftBreak
            | Event::FootnoteReference(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_) => true,
            _ => false,
        };
        if hit {
            bad.push(format!("{ev:?}"));
        }
    }
    bad
}

/// Counts of block-level elements: headings, lists, items, code blocks,
/// tables, paragraphs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Blocks {
    pub headings: usize,
    pub lists: usize,
    pub items: usize,
    pub code_blocks: usize,
    pub tables: usize,
    pub paragraphs: usize,
}

pub fn blocks(events: &[Event<'_>]) -> Blocks {
    let mut b = Blocks::default();
    for ev in events {
        if let Event::Start(tag) = ev {
            match tag {
                Tag::Heading { .. } => b.headings += 1,
                Tag::List(_) => b.lists += 1,
                Tag::Item => b.items += 1,
                Tag::CodeBlock(_) => b.code_blocks += 1,
                Tag::Table(_) => b.tables += 1,
                Tag::Paragraph => b.paragraphs += 1,
                _ => {}
            }
        }
    }
    b
}

/// Text of a run of inline events: text and code-span content, plus how
/// many code spans there were.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InlineText {
    pub text: String,
    pub code_spans: Vec<String>,
}

fn push_inline(acc: &mut InlineText, ev: &Event<'_>) {
    match ev {
        Event::Text(t) => acc.text.push_str(t),
        Event::Code(c) => {
            acc.text.push_str(c);
            acc.code_spans.push(c.to_string());
        }
        _ => {}
    }
}

/// Cells of every table: `tables[t][row][cell]`, the header row first.
pub fn table_cells(events: &[Event<'_>]) -> Vec<Vec<Vec<InlineText>>> {
    let mut tables = Vec::new();
    let mut cell: Option<InlineText> = None;
    for ev in events {
        match ev {
            Event::Start(Tag::Table(_)) => tables.push(Vec::new()),
            Event::Start(Tag::TableHead) | Event::Start(Tag::TableRow) => {
                if let Some(t) = tables.last_mut() {
                    t.push(Vec::new());
                }
            }
            Event::Start(Tag::TableCell) => cell = Some(InlineText::default()),
            Event::End(TagEnd::TableCell) => {
                if let (Some(c), Some(t)) = (cell.take(), tables.last_mut())
                    && let Some(row) = t.last_mut()
                {
                    row.push(c);
                }
            }
            other => {
                if let Some(c) = cell.as_mut() {
                    push_inline(c, other);
                }
            }
        }
    }
    tables
}

/// Text of every list item (top-level content, nested lists included).
pub fn item_texts(events: &[Event<'_>]) -> Vec<InlineText> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    for ev in events {
        match ev {
            Event::Start(Tag::Item) => {
                if depth == 0 {
                    items.push(InlineText::default());
                }
                depth += 1;
            }
            Event::End(TagEnd::Item) => depth -= 1,
            other if depth > 0 => {
                if let Some(it) = items.last_mut() {
                    push_inline(it, other);
                }
            }
            _ => {}
        }
    }
    items
}

/// Text of every heading.
pub fn heading_texts(events: &[Event<'_>]) -> Vec<InlineText> {
    let mut out = Vec::new();
    let mut inside = false;
    for ev in events {
        match ev {
            Event::Start(Tag::Heading { .. }) => {
                inside = true;
                out.push(InlineText::default());
            }
            Event::End(TagEnd::Heading(_)) => inside = false,
            other if inside => {
                if let Some(h) = out.last_mut() {
                    push_inline(h, other);
                }
            }
            _ => {}
        }
    }
    out
}

/// Contents of every fenced/indented code block.
pub fn code_blocks(events: &[Event<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for ev in events {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => {
                inside = true;
                out.push(String::new());
            }
            Event::End(TagEnd::CodeBlock) => inside = false,
            Event::Text(t) if inside => {
                if let Some(c) = out.last_mut() {
                    c.push_str(t);
                }
            }
            _ => {}
        }
    }
    out
}

/// Text of every paragraph outside lists and tables.
pub fn paragraph_texts(events: &[Event<'_>]) -> Vec<InlineText> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut list_depth = 0usize;
    for ev in events {
        match ev {
            Event::Start(Tag::List(_)) => list_depth += 1,
            Event::End(TagEnd::List(_)) => list_depth -= 1,
            Event::Start(Tag::Paragraph) if list_depth == 0 => {
                inside = true;
                out.push(InlineText::default());
            }
            Event::End(TagEnd::Paragraph) => inside = false,
            other if inside => {
                if let Some(p) = out.last_mut() {
                    push_inline(p, other);
                }
            }
            _ => {}
        }
    }
    out
}

/// Values of every kind of trouble, used as names, tags, labels, keys.
pub fn hostile_corpus() -> Vec<String> {
    let mut v: Vec<String> = [
        "\x1b[31mred\x1b[0m",
        "\x1b[2J\x1b[1;1Hcleared\x1b[K",
        "\x1b]0;pwned title\x07web-1",
        "\x1b]8;;http://evil.example\x1b\\click me\x1b]8;;\x1b\\",
        "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07",
        "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x7fh",
        "c1\u{85}\u{90}x\u{9b}31m\u{9c}\u{9f}y",
        "\u{202e}gnp.exe",
        "\u{202a}\u{202b}\u{202c}\u{202d}ltr",
        "\u{2066}iso\u{2067}\u{2068}late\u{2069}",
        "\u{200e}\u{200f}\u{061c}marks",
        "zero\u{200b}width\u{200c}non\u{200d}joiner\u{2060}wj",
        "\u{feff}bom-volume",
        "line1\rline2",
        "crlf\r\nnext",
        "sep\u{2028}para\u{2029}end",
        "<script>alert(1)</script>",
        "<script>",
        "<!-- comment -->",
        "<!--",
        "<http://x>",
        "<mailto:a@b.c>",
        "<a@b.c>",
        "x <a@b.c> y",
        "<img src=x onerror=alert(1)>",
        "<div",
        "</div>",
        "<?php ?>",
        "<![CDATA[x]]>",
        "[x](http://evil)",
        "![i](u)",
        "[a][b]",
        "[a][]",
        "[x]: http://definition",
        "click [here](http://evil) now",
        "see ![img](http://evil/x.png) there",
        "*a*",
        "**a**",
        "***a***",
        "_a_",
        "__a__",
        "~a~",
        "~~a~~",
        "some *emph* text",
        "under _score_ here",
        "strong **bold** word",
        "struck ~~out~~ word",
        "a*b*c",
        "tick `code` here",
        "a`b`c",
        "x ``` y ``` z",
        "|",
        "a|b",
        "a | b | c",
        "`a|b`",
        "a\\|b",
        "title #",
        "title ##",
        "#",
        "###",
        "# heading",
        "## heading",
        "> quote",
        ">",
        "- item",
        "-",
        "+ item",
        "* item",
        "1. item",
        "1) item",
        "123456789. item",
        "---",
        "***",
        "___",
        "- - -",
        "```",
        "```rust",
        "~~~",
        "- [ ] task",
        "[ ] box",
        "[x] done",
        "a &amp; b",
        "&#65;",
        "&#x41;&nbsp;",
        "\\*not\\*",
        "C:\\",
        "trailing\\",
        "\\",
        " lead",
        "trail ",
        " both ",
        "   ",
        "\t",
        "tab\tinside",
        "",
        "=",
        "===",
        "a\nb",
        "multi\nline\n# heading\n```\nfence",
        "<none>:<none>",
        "<none>",
        "@sha256:abc",
        "nginx@sha256:0123abcd",
        "$(rm -rf /)",
        "{{template}}",
        "${VAR}",
        "\u{a0}nbsp\u{a0}",
        "emoji 🐳 *whale*",
        "ünïcödé_name_",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in 1..=8 {
        let run = "`".repeat(n);
        v.push(run.clone());
        v.push(format!("a{run}b"));
        v.push(format!("{run}x{run}"));
        v.push(format!("x {run} y {run} z"));
        v.push(format!("{run} lead"));
        v.push(format!("trail {run}"));
    }
    v
}

/// Values that are ordinary text and must come through byte for byte.
pub const ORDINARY: &[&str] = &[
    "my_container",
    "/var/lib/docker/volumes/x/_data",
    "app_",
    "*/5 * * * *",
    "nginx@sha256:0123456789abcdef",
    "C:\\data",
    "web-1",
    "nginx:1.25-alpine",
    "ghcr.io/getarcaneapp/arcane:latest",
    "0.0.0.0:8080->80/tcp",
    "Up 3 hours (healthy)",
    "running",
    "com.docker.compose.project",
    "2024-05-01T12:00:00Z",
    "a_b_c",
    "snake_case_name",
    "3 * 4",
    "a < b",
    "x > y",
    "50%",
    "path/to/file.yml",
    "key=value",
    "Hello, world!",
];
