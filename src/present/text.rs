//! The text of what the engine read as it went: a stream's summary and a WebSocket handler's
//! output (docs/output-format.md). Arcane's text goes into fences no line can close, and its
//! words through the escaper (docs/escaping.md), so nothing in it forms Markdown.

use arcane_engine::{ExecOutput, LogOutput, MAX_MESSAGE, StreamSummary};
use arcane_markdown::{code_span, excerpt, fenced};

/// The human text of a stream's outcome: how it ended, the activity ID, the per-item outcome
/// (layers, containers…), the final pull status, the last lines, and malformed lines if any.
/// Arcane's text goes into fenced blocks, so nothing in it can form Markdown.
pub fn stream_text(s: &StreamSummary) -> String {
    let mut out = String::new();
    let outcome = match (&s.error, s.done) {
        (Some(e), _) => format!("Failed: {}", excerpt(e, MAX_MESSAGE)),
        (None, true) => "Completed.".to_string(),
        (None, false) => "Ended without a final status (incomplete).".to_string(),
    };
    out.push_str(&outcome);
    out.push_str(&format!(" {} log line(s).", s.lines));
    if let Some(a) = &s.activity_id {
        out.push_str(&format!(" Activity: {}.", code_span(a)));
    }
    out.push('\n');
    if !s.items.is_empty() {
        out.push_str(&format!("\nOutcome per item ({}):\n", s.items.len()));
        let body: Vec<String> = s
            .items
            .iter()
            .map(|o| format!("{}: {}", o.item, o.status))
            .collect();
        out.push_str(&fenced(&body.join("\n"), "text"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if let Some(f) = &s.final_status {
        out.push_str(&format!("\n{}\n", code_span(f)));
    }
    if !s.last_lines.is_empty() {
        let shown = s.last_lines.len();
        if shown < s.lines {
            out.push_str(&format!("\nLast {shown} line(s):\n"));
        } else {
            out.push_str("\nOutput:\n");
        }
        out.push_str(&fenced(&s.last_lines.join("\n"), "text"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if s.malformed > 0 {
        out.push_str(&format!(
            "\n{} line(s) were not understood (not JSON, or no known key); first:\n",
            s.malformed
        ));
        out.push_str(&fenced(&s.malformed_samples.join("\n"), "text"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

/// The handler's text: the lines, or `No log lines.`, then a note when cut short.
pub fn log_text(logs: &LogOutput) -> String {
    // The lines as the container wrote them, in a fence no line can close: a log line
    // must not become a heading, a link or a "Next steps" section of ours.
    let mut out = if logs.lines.is_empty() {
        "No log lines.\n".to_string()
    } else {
        fenced(&logs.lines.join("\n"), "text")
    };
    if let Some(t) = &logs.truncated {
        out.push_str(&format!("\n({})", excerpt(t, 300)));
    }
    out.trim_end().to_string()
}

/// The handler's text: the output (or `(no output)`), then the exit code or a note.
pub fn exec_text(exec: &ExecOutput) -> String {
    // The output as the command wrote it, in a fence no line can close.
    let mut out = if exec.output.is_empty() {
        "(no output)\n".to_string()
    } else {
        fenced(&exec.output, "text")
    };
    match exec.exit_code {
        Some(c) => out.push_str(&format!("\nExit code: {c}")),
        None => out.push_str("\nExit code: unknown"),
    }
    if let Some(t) = &exec.truncated {
        out.push_str(&format!(" ({})", excerpt(t, 300)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_logs_and_exit_codes_are_said_not_invented() {
        let none = LogOutput {
            lines: vec![],
            truncated: None,
        };
        assert_eq!(log_text(&none), "No log lines.");
        let exec = |exit_code| ExecOutput {
            output: "hello world".into(),
            exit_code,
            truncated: None,
        };
        assert!(exec_text(&exec(None)).ends_with("Exit code: unknown"));
        assert!(exec_text(&exec(Some(3))).ends_with("Exit code: 3"));
        assert!(exec_text(&exec(Some(3))).contains("hello world"));
    }

    /// A lone backtick in a stream's error does not pair with the activity ID's code span
    /// after it: the ID stays code, not a link (found by fuzzing the jsonlines target, input
    /// in tests/fixtures/fuzz-regressions/jsonlines).
    #[test]
    fn an_errors_backtick_does_not_pair_with_the_activity_id() {
        let summary = StreamSummary {
            error: Some("pull ` failed".into()),
            activity_id: Some("ftp://Created".into()),
            ..StreamSummary::default()
        };
        let text = stream_text(&summary);
        let events: Vec<_> = pulldown_cmark::Parser::new(&text).collect();
        assert!(
            events.iter().any(
                |e| matches!(e, pulldown_cmark::Event::Code(c) if c.as_ref() == "ftp://Created")
            ),
            "{text:?}: {events:?}"
        );
    }
}
