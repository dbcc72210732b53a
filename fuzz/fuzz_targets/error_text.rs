//! Fuzzes the server's texts around Arcane's words: an error detail read from any body
//! (`error_detail`) and handler output (logs, exec) form no structure and no GFM autolink
//! literal, and handler output stays inside its fence under our one heading.
#![no_main]

mod markdown_checks;

use arcane_mcp::exec::errors::error_detail;
use arcane_mcp::exec::websocket::{ExecOutput, LogOutput};
use libfuzzer_sys::fuzz_target;
use markdown_checks::{events, no_autolinks, structure_free};
use pulldown_cmark::{Event, Tag};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (a, b) = s.split_at(s.char_indices().nth(s.chars().count() / 2).map_or(s.len(), |(i, _)| i));

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
});
