//! End to end: the text block of each result kind on each surface (golden files), and
//! hostile values placed in the simulator's state proven harmless by parsing the text.
//!
//! Golden files live in `tests/golden/`; `UPDATE_GOLDEN=1 cargo test --test integration server_rendering`
//! rewrites them (review the diff before committing).

use crate::{golden_support, server_support};

use pulldown_cmark::{Event, Options, Parser, Tag};
use serde_json::{Value, json};
use server_support::*;

/// Compares with (or, with UPDATE_GOLDEN=1, writes) a golden file; returns a mismatch message.
fn check_golden(name: &str, actual: &str) -> Option<String> {
    golden_support::check(&format!("{name}.md"), actual)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_result_kind_on_each_surface_matches_its_golden_text() {
    let sim = Sim::start().await;
    let cases: &[(&str, &str, Value)] = &[
        ("list", "container.list", json!({})),
        ("object", "container.get", json!({"containerId": "web-1"})),
        (
            "empty-list",
            "volume.list",
            json!({"search": "no-such-volume"}),
        ),
        ("text-download", "mtls.ca", json!({})),
        (
            "binary-download",
            "image.export",
            json!({"name": "nginx:1.27-alpine"}),
        ),
        (
            "handler-output",
            "container.logs",
            json!({"containerId": "web-1", "tail": 3}),
        ),
    ];
    let mut mismatches = Vec::new();
    for surface in ["dynamic", "meta", "individual"] {
        sim.reset().await;
        let client = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", surface]).await;
        for (kind, id, params) in cases {
            let (tool, args) = shape(surface, id, params.clone(), false);
            let r = call(&client, &tool, args).await;
            ok(&r);
            if let Some(m) = check_golden(&format!("{surface}-{kind}"), &text(&r)) {
                mismatches.push(m);
            }
        }
        client.cancel().await.unwrap();
    }
    sim.sim.shutdown().await;
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}

/// Hostile values: each must come through without creating Markdown structure.
pub(crate) const HOSTILE: &[&str] = &[
    "\u{1b}[31mred\u{1b}[0m",
    "\u{1b}]8;;http://evil\u{7}click\u{1b}]8;;\u{7}",
    "\u{202e}evil\u{2066}x\u{2069}",
    "zero\u{200b}width\u{feff}",
    "<script>alert(1)</script>",
    "<!-- hidden -->",
    "<http://x>",
    "[x](http://evil)",
    "![i](u)",
    "[a][b]",
    "*a*",
    "**a**",
    "_a_",
    "`code`",
    "```fence```",
    "a|b",
    "title ##",
    "# heading",
    "> quote",
    "- item",
    "+ item",
    "1. item",
    "---",
    "- [ ] task",
    "line\r\nbreak",
    "lone\rcr",
    "u2028\u{2028}sep",
];

fn structure(text: &str) -> Vec<String> {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    let mut found = Vec::new();
    for ev in Parser::new_ext(text, opts) {
        match ev {
            Event::Start(Tag::Link { dest_url, .. }) => found.push(format!("link {dest_url}")),
            Event::Start(Tag::Image { dest_url, .. }) => found.push(format!("image {dest_url}")),
            Event::Html(h) | Event::InlineHtml(h) => found.push(format!("html {h}")),
            Event::Start(Tag::Emphasis) => found.push("emphasis".into()),
            Event::Start(Tag::BlockQuote(_)) => found.push("quote".into()),
            Event::Start(Tag::Strikethrough) => found.push("strikethrough".into()),
            Event::TaskListMarker(_) => found.push("task".into()),
            Event::Rule => found.push("rule".into()),
            _ => {}
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_values_in_arcane_never_form_markdown() {
    let sim = Sim::start().await;
    let mut state = sim.state().await;
    // Hostile container names, labels and images; hostile project and volume names.
    let containers = state["containers"].as_array_mut().unwrap();
    let template = containers[0].clone();
    for (i, h) in HOSTILE.iter().enumerate() {
        let mut c = template.clone();
        c["id"] = json!(format!("{:064x}", 0xabc000 + i));
        c["name"] = json!(format!("h{i}-{h}"));
        c["image"] = json!(h);
        c["labels"] = json!({"note": h, (*h): "key"});
        containers.push(c);
    }
    for key in ["projects", "volumes"] {
        if let Some(list) = state[key].as_array_mut() {
            let template = list[0].clone();
            for (i, h) in HOSTILE.iter().enumerate() {
                let mut item = template.clone();
                item["name"] = json!(format!("h{i}-{h}"));
                if item.get("id").is_some() {
                    item["id"] = json!(format!("hostile-{key}-{i}"));
                }
                list.push(item);
            }
        }
    }
    sim.set_state(state).await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let mut problems = Vec::new();
    let mut calls = vec![
        ("container.list", json!({"limit": 100})),
        ("project.list", json!({"limit": 100})),
        ("volume.list", json!({"limit": 100})),
    ];
    for i in 0..HOSTILE.len() {
        calls.push((
            "container.get",
            json!({"containerId": format!("{:064x}", 0xabc000 + i)}),
        ));
    }
    for (id, params) in calls {
        let r = call(
            &client,
            "arcane_execute_action",
            json!({"action": id, "params": params}),
        )
        .await;
        let t = text(&r);
        assert!(!is_error(&r), "{id}: {t}");
        for s in structure(&t) {
            problems.push(format!("{id}: {s}"));
        }
        for bad in [
            '\u{1b}', '\u{202e}', '\u{200b}', '\u{feff}', '\u{2028}', '\u{7}',
        ] {
            if t.contains(bad) {
                problems.push(format!("{id}: contains U+{:04X}", bad as u32));
            }
        }
        // structuredContent is untouched: the hostile values are there byte for byte.
        let sc = r.structured_content.unwrap().to_string();
        if id == "container.list" {
            assert!(
                sc.contains("\\u001b[31mred") || sc.contains("\u{1b}[31mred"),
                "structuredContent must keep Arcane's bytes"
            );
        }
    }
    // Names that a later call needs come through whole (after the documented removals).
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {"limit": 100}}),
    )
    .await;
    let t = text(&r);
    for name in [
        "h4-<script>alert(1)</script>",
        "h7-[x](http://evil)",
        "h10-*a*",
    ] {
        let plain: String = Parser::new_ext(&t, Options::ENABLE_TABLES)
            .filter_map(|e| match e {
                Event::Text(s) | Event::Code(s) => Some(s.into_string()),
                _ => None,
            })
            .collect();
        assert!(
            plain.contains(name),
            "{name} not recovered from the text:\n{t}"
        );
    }
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
    assert!(
        problems.is_empty(),
        "values created Markdown structure:\n{}",
        problems.join("\n")
    );
}
