//! Fuzzes the JSON-lines stream reader (`arcane_engine::read_stream_within`, Arcane's image
//! pull/build and project up/redeploy streams) and the text of its summary
//! (`present::text::stream_text`).
//!
//! The first byte says how the body is cut into chunks (and whether the body then breaks with
//! a read error); the rest is the body. Invariants: no panic; the outcome does not depend on
//! how the body was cut; progress counts 1, 2, 3… and each message stays within its bound;
//! the summary keeps at most its bounded number of lines, items and samples, all sanitized;
//! the summary's text and the error's text form no Markdown beyond our paragraphs and fences.
#![no_main]

mod markdown_checks;

use arcane_engine::{MAX_MESSAGE, Progress, StreamSummary, read_stream_within};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use markdown_checks::{no_autolinks, structure_free};
use tokio_util::sync::CancellationToken;

type Outcome = Result<StreamSummary, (arcane_engine::StreamErrorKind, String, StreamSummary)>;

fn read(chunks: Vec<Result<Bytes, String>>) -> (Outcome, Vec<Progress>, Option<String>) {
    let mut seen = Vec::new();
    let cancel = CancellationToken::new();
    let body = futures::stream::iter(chunks);
    let got =
        futures::executor::block_on(read_stream_within(body, |p| seen.push(p), &cancel, None));
    let shown = got.as_ref().err().map(ToString::to_string);
    let outcome = got.map_err(|e| (e.kind, e.message, *e.summary));
    (outcome, seen, shown)
}

fn clean(s: &str) -> bool {
    !s.chars().any(|c| c.is_control() && c != '\t')
}

fuzz_target!(|data: &[u8]| {
    let Some((&how, body)) = data.split_first() else {
        return;
    };
    // Chunk sizes cycle through 1..=step; the top bit breaks the body after its last chunk.
    let step = usize::from(how & 0x3f) + 1;
    let mut chunks: Vec<Result<Bytes, String>> = Vec::new();
    let (mut at, mut n) = (0, 1);
    while at < body.len() {
        let end = (at + n).min(body.len());
        chunks.push(Ok(Bytes::copy_from_slice(&body[at..end])));
        at = end;
        n = n % step + 1;
    }
    let breaks = how & 0x80 != 0;
    if breaks {
        chunks.push(Err("connection reset".to_string()));
    }
    let (outcome, progress, shown) = read(chunks);

    if !breaks {
        let (whole, whole_progress, _) = read(vec![Ok(Bytes::copy_from_slice(body))]);
        assert_eq!(outcome, whole, "the outcome depends on the chunks");
        assert_eq!(progress, whole_progress);
    }

    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p.progress, i as u64 + 1);
        if let Some(m) = &p.message {
            assert!(
                m.chars().count() <= MAX_MESSAGE + 10,
                "progress message of {} chars",
                m.chars().count()
            );
            // A log line may hold several lines (sanitized CRLF): fine in a progress message.
            assert!(
                !m.chars().any(|c| c.is_control() && !"\t\r\n".contains(c)),
                "{m:?}"
            );
        }
    }

    let summary = match &outcome {
        Ok(s) => s,
        Err((_, _, s)) => s,
    };
    assert!(summary.last_lines.len() <= 20);
    assert!(summary.items.len() <= 200);
    assert!(
        summary.malformed_samples.len() <= 3
            && summary.malformed_samples.len() <= summary.malformed
    );
    for l in &summary.last_lines {
        assert!(clean(l) && l.chars().count() <= 500, "{l:?}");
    }
    for o in &summary.items {
        assert!(clean(&o.item) && clean(&o.status), "{o:?}");
    }
    // A lone CR inside a line is sanitized into a line break: fine inside the fenced sample.
    for s in summary.malformed_samples.iter().chain(&summary.activity_id) {
        assert!(
            !s.chars().any(|c| c.is_control() && !"\t\n\r".contains(c)),
            "{s:?}"
        );
    }

    let md = arcane_mcp::present::text::stream_text(summary);
    structure_free(&md, &["p", "code"]);
    no_autolinks(&md);
    if let Some(shown) = shown {
        structure_free(&shown, &["p"]);
        no_autolinks(&shown);
    }
});
