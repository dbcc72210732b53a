//! Fuzzes the error-body reader and the server's texts around Arcane's words: an error detail
//! read from any body under any status and content type (`error_detail`, the one reader of
//! error answers) is sanitized, its shown excerpts are bounded, and with handler output (logs,
//! exec) it forms no structure and no GFM autolink literal; handler output stays inside its
//! fence under our one heading.
#![no_main]

mod markdown_checks;

use arcane_engine::error_detail;
use arcane_engine::{ExecOutput, LogOutput};
use libfuzzer_sys::fuzz_target;
use markdown_checks::{events, no_autolinks, structure_free};
use pulldown_cmark::{Event, Tag};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (a, b) = s.split_at(
        s.char_indices()
            .nth(s.chars().count() / 2)
            .map_or(s.len(), |(i, _)| i),
    );

    let status = 400 + u16::from(data.first().copied().unwrap_or(0)) % 200;
    for ct in [
        "application/json",
        "application/problem+json",
        "text/html",
        "text/plain",
        "",
    ] {
        let e = error_detail(status, ct, data);
        assert_eq!(e.status, status);
        assert!(!e.message.trim().is_empty());
        for t in std::iter::once(&e.message).chain(&e.details) {
            assert!(
                !t.chars().any(|c| c.is_control() && !"\t\n\r".contains(c)),
                "{t:?}"
            );
        }
        assert!(e.details.len() <= 20, "{} details", e.details.len());
        let shown = e.shown();
        assert!(
            shown.chars().count() <= 700,
            "{} chars shown",
            shown.chars().count()
        );
        let md = format!("x failed: {shown}");
        structure_free(&md, &["p"]);
        no_autolinks(&md);
        for d in e.shown_details() {
            assert!(
                d.chars().count() <= 700,
                "{} chars shown",
                d.chars().count()
            );
            let md = format!("x failed:\n\n- {d}");
            structure_free(&md, &["p", "list", "item"]);
            no_autolinks(&md);
        }
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
});
