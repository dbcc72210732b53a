//! JSON-lines progress streams (`application/x-json-stream`, docs/arcane-wire.md#streams): image pull/build and
//! project up/redeploy/pull/build.
//!
//! A stream is an activity line `{"type":"activity","activityId":…}`, zero or more
//! `{"log": "<docker CLI text>"}` lines, then `{"done":true}` or `{"error": …}` (no done line).
//! [`read_stream_within`] reads one to the end, calls a progress callback per line, honours a
//! cancellation token and returns a [`StreamSummary`] (the presentation, `present/text.rs`, writes its text).
//!
//! Decisions: a line that is not JSON, or JSON with none of the known keys, is **tolerated**:
//! counted in [`StreamSummary::malformed`] and quoted (first few) in the summary. An `{"error"}`
//! line ends the read with [`StreamErrorKind::Arcane`]; the end of the body without done or
//! error is [`StreamErrorKind::CutShort`].

use std::collections::VecDeque;
use std::fmt;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use arcane_markdown::{code_span, excerpt, sanitize};

/// How many of the last log lines a summary keeps.
pub const LAST_LINES: usize = 20;
/// How many per-item outcomes a summary keeps (layers, containers, networks…).
pub const MAX_ITEMS: usize = 200;
/// How many malformed lines a summary quotes.
pub const MALFORMED_SAMPLES: usize = 3;
/// Longest line kept in memory; longer input without a line break is dropped as malformed.
const MAX_LINE: usize = 1 << 20;
/// Longest progress message (characters).
pub const MAX_MESSAGE: usize = 200;

/// One progress report, sent once per line read (suitable for MCP `notifications/progress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Lines read so far: strictly increasing from 1.
    pub progress: u64,
    /// Unknown for Arcane's streams (they do not announce a length).
    pub total: Option<u64>,
    /// The line in words: the (sanitized, shortened) log text, or what the control line meant.
    pub message: Option<String>,
}

/// The final status of one item the stream talked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemOutcome {
    /// `layer 1a2b3c4d5e6f`, `Container webshop-web-1`, `Network webshop_default`, `nginx:1.27`.
    pub item: String,
    /// The last status seen for it: `Pull complete`, `Started`, `Created`…
    pub status: String,
}

/// What a stream said, in short.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamSummary {
    /// The Arcane activity that records the operation, when announced.
    pub activity_id: Option<String>,
    /// Number of `{"log"}` lines.
    pub lines: usize,
    /// The last `LAST_LINES` log lines, sanitized.
    pub last_lines: Vec<String>,
    /// Per-item final status in first-seen order (pull layers `<id>: <status>`, compose
    /// `Container x  Started`), at most `MAX_ITEMS`.
    pub items: Vec<ItemOutcome>,
    /// The last `Status: …` line of a pull (`Status: Downloaded newer image for …`).
    pub final_status: Option<String>,
    /// Lines that were not JSON or had no known key.
    pub malformed: usize,
    /// The first `MALFORMED_SAMPLES` of them (sanitized, shortened).
    pub malformed_samples: Vec<String>,
    /// `{"done":true}` was seen.
    pub done: bool,
    /// The `{"error"}` text, when the stream failed.
    pub error: Option<String>,
}

/// Why a stream did not finish with done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamErrorKind {
    /// Arcane sent `{"error": …}`.
    Arcane,
    /// The body ended (or broke) before done or error.
    CutShort,
    /// The caller cancelled; the HTTP request was aborted.
    Cancelled,
    /// Our own time cap of streams passed before the stream ended; reading stopped.
    TimeCap,
}

/// A stream that did not end with done, with what was read up to then.
#[derive(Debug, Clone)]
pub struct StreamError {
    pub kind: StreamErrorKind,
    /// The cause in words (Arcane's error text, the read error…).
    pub message: String,
    /// Everything read before the failure.
    pub summary: Box<StreamSummary>,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let activity = self
            .summary
            .activity_id
            .as_deref()
            .map(|a| format!(" (activity {})", code_span(a)))
            .unwrap_or_default();
        // Arcane's words and read errors are escaped here.
        let message = excerpt(&self.message, 300);
        match self.kind {
            StreamErrorKind::Arcane => write!(
                f,
                "Arcane reported an error{activity}: {message}. Nothing after the failing step was applied; fix the cause (image name, registry credentials, compose file) and run it again.",
            ),
            StreamErrorKind::CutShort => write!(
                f,
                "the stream was cut short after {} log line(s){activity}, before Arcane reported done or error ({message}). The operation may be incomplete: check the result (e.g. project.get or image.list) before retrying.",
                self.summary.lines
            ),
            StreamErrorKind::Cancelled => write!(
                f,
                "cancelled after {} log line(s){activity}; the request was aborted. Arcane may have completed part of the operation: check its state before retrying.",
                self.summary.lines
            ),
            StreamErrorKind::TimeCap => write!(
                f,
                "stopped after {}: the stream was longer than the time limit of streams ({} log line(s) read{activity}). The operation may still be running in Arcane: check its state (e.g. project.get or image.list) before retrying; for longer operations raise ARCANE_MCP_TIMEOUT (streams may run 20 times as long)",
                self.message, self.summary.lines
            ),
        }
    }
}

impl std::error::Error for StreamError {}

/// Reads a successful streaming answer to the end (the caller has checked the status: an
/// error answer is read by `errors::error_detail`). Dropping the response on cancellation
/// aborts the HTTP request.
pub async fn read_response<F>(
    resp: reqwest::Response,
    on_progress: F,
    cancel: &CancellationToken,
) -> Result<StreamSummary, StreamError>
where
    F: FnMut(Progress),
{
    read_response_within(resp, on_progress, cancel, None).await
}

/// [`read_response`] with a time cap: when `time_cap` passes before the stream ends, reading
/// stops with [`StreamErrorKind::TimeCap`], which says so (rather than a read error).
pub async fn read_response_within<F>(
    resp: reqwest::Response,
    on_progress: F,
    cancel: &CancellationToken,
    time_cap: Option<std::time::Duration>,
) -> Result<StreamSummary, StreamError>
where
    F: FnMut(Progress),
{
    read_stream_within(
        crate::http::body_stream(resp),
        on_progress,
        cancel,
        time_cap,
    )
    .await
}

/// Reads a JSON-lines body (any byte stream) to the end; see the module docs. `on_progress` is
/// called once per non-empty line. When `cancel` fires, the stream is dropped (for a reqwest
/// body this aborts the request) and [`StreamErrorKind::Cancelled`] is returned; `time_cap`
/// bounds the whole read (see `read_response_within`). Memory stays bounded however
/// long the stream runs: only the last `LAST_LINES` lines and one line of at most 1 MiB are
/// held.
pub async fn read_stream_within<S, E, F>(
    body: S,
    mut on_progress: F,
    cancel: &CancellationToken,
    time_cap: Option<std::time::Duration>,
) -> Result<StreamSummary, StreamError>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: fmt::Display,
    F: FnMut(Progress),
{
    let mut body = std::pin::pin!(body);
    let mut st = State::default();
    let mut lines = Lines::new(MAX_LINE);
    let mut received: u64 = 0;
    let cap = async {
        match time_cap {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let mut cap = std::pin::pin!(cap);
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return Err(st.fail(StreamErrorKind::Cancelled, "cancelled".into()));
            }
            _ = &mut cap => {
                let secs = time_cap.map(|d| d.as_secs_f64()).unwrap_or_default();
                return Err(st.fail(
                    StreamErrorKind::TimeCap,
                    format!("{secs:.0} s and {}", arcane_markdown::human_bytes(received)),
                ));
            }
            c = body.next() => c,
        };
        if let Some(Ok(bytes)) = &chunk {
            received += bytes.len() as u64;
        }
        match chunk {
            None => break,
            Some(Err(e)) => {
                let (tail, skipping) = lines.rest();
                if let Some(err) = st.finish_line(&tail, &mut on_progress, skipping) {
                    return Err(err);
                }
                if st.summary.done {
                    return Ok(st.summary);
                }
                return Err(st.fail(StreamErrorKind::CutShort, format!("read error: {e}")));
            }
            Some(Ok(bytes)) => {
                let mut failed = None;
                let overlong = lines.push(&bytes, |line, skipping| {
                    if failed.is_none() {
                        failed = st.finish_line(line, &mut on_progress, skipping);
                    }
                });
                if let Some(err) = failed {
                    return Err(err);
                }
                if overlong {
                    st.malformed(format!("a line longer than {MAX_LINE} bytes"));
                }
            }
        }
    }
    let (tail, skipping) = lines.rest();
    if let Some(err) = st.finish_line(&tail, &mut on_progress, skipping) {
        return Err(err);
    }
    if st.summary.done {
        Ok(st.summary)
    } else {
        Err(st.fail(
            StreamErrorKind::CutShort,
            "the body ended without a done line".into(),
        ))
    }
}

/// Splits a body into lines of at most `max` bytes, holding one partial line: the one line
/// splitter of Arcane's JSON-lines bodies (progress streams here, the client stream's feed in
/// `feed.rs`). A longer line is dropped as it arrives, its tail passed on marked as skipped.
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// Inside an over-long line.
    skipping: bool,
    max: usize,
}

impl Lines {
    pub(crate) fn new(max: usize) -> Lines {
        Lines {
            buf: Vec::new(),
            skipping: false,
            max,
        }
    }

    /// Passes each complete line of `bytes` to `line`, with whether it is the tail of an
    /// over-long line (already reported); returns whether an over-long line began.
    /// A line over `max` that ends within one chunk is dropped too (passed on as an empty
    /// skipped tail), not only one that spans chunks.
    pub(crate) fn push(&mut self, mut rest: &[u8], mut line: impl FnMut(&[u8], bool)) -> bool {
        let mut began = false;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            if self.buf.len() + pos > self.max {
                began |= !self.skipping;
                self.buf.clear();
                line(&[], true);
            } else {
                self.buf.extend_from_slice(&rest[..pos]);
                let l = std::mem::take(&mut self.buf);
                line(&l, self.skipping);
            }
            rest = &rest[pos + 1..];
            self.skipping = false;
        }
        if self.buf.len() + rest.len() > self.max {
            began |= !self.skipping;
            self.skipping = true;
            self.buf.clear();
        } else {
            self.buf.extend_from_slice(rest);
        }
        began
    }

    /// The unterminated last line, and whether it is the tail of an over-long line.
    pub(crate) fn rest(&mut self) -> (Vec<u8>, bool) {
        (std::mem::take(&mut self.buf), self.skipping)
    }
}

#[derive(Default)]
struct State {
    summary: StreamSummary,
    seen: u64,
    last: VecDeque<String>,
}

impl State {
    fn fail(mut self, kind: StreamErrorKind, message: String) -> StreamError {
        self.flush();
        StreamError {
            kind,
            message,
            summary: Box::new(self.summary),
        }
    }

    fn flush(&mut self) {
        self.summary.last_lines = self.last.iter().cloned().collect();
    }

    fn malformed(&mut self, sample: String) {
        self.summary.malformed += 1;
        if self.summary.malformed_samples.len() < MALFORMED_SAMPLES {
            self.summary.malformed_samples.push(sample);
        }
    }

    /// Handles one complete line; returns the error that ends the stream, if it is one.
    fn finish_line<F: FnMut(Progress)>(
        &mut self,
        raw: &[u8],
        on_progress: &mut F,
        skipped_tail: bool,
    ) -> Option<StreamError> {
        if skipped_tail {
            return None; // the tail of an over-long line, already counted
        }
        let text = String::from_utf8_lossy(raw);
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        self.seen += 1;
        let mut message = None;
        let mut error = None;
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => {
                if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
                    let e = e
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| e.to_string());
                    let e = sanitize(&e).into_owned();
                    message = Some(format!("error: {}", shorten(&e, MAX_MESSAGE)));
                    error = Some(e);
                } else if let Some(l) = o.get("log") {
                    let l = l
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| l.to_string());
                    let l = sanitize(&l).trim_end_matches(['\r', '\n']).to_string();
                    self.log_line(&l);
                    message = Some(shorten(l.trim(), MAX_MESSAGE));
                } else if o.get("done").and_then(Value::as_bool) == Some(true) {
                    self.summary.done = true;
                    message = Some("done".into());
                } else if o.get("type").and_then(Value::as_str) == Some("activity") {
                    let id = o
                        .get("activityId")
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .unwrap_or_default();
                    let id = sanitize(&id).into_owned();
                    // Arcane's ID, whatever its length: the progress message stays within its
                    // bound (found by fuzzing).
                    message = Some(format!("activity {}", shorten(&id, MAX_MESSAGE)));
                    self.summary.activity_id = Some(id);
                } else {
                    self.malformed(shorten(&sanitize(text), MAX_MESSAGE));
                }
            }
            _ => self.malformed(shorten(&sanitize(text), MAX_MESSAGE)),
        }
        on_progress(Progress {
            progress: self.seen,
            total: None,
            message,
        });
        if let Some(e) = error {
            self.summary.error = Some(e.clone());
            self.flush();
            return Some(StreamError {
                kind: StreamErrorKind::Arcane,
                message: e,
                summary: Box::new(std::mem::take(&mut self.summary)),
            });
        }
        None
    }

    fn log_line(&mut self, line: &str) {
        self.summary.lines += 1;
        // A log line may hold several lines (lone CRs became line breaks); each counts for items.
        for l in line.split('\n') {
            let l = l.trim_end_matches('\r');
            self.item(l);
            if self.last.len() == LAST_LINES {
                self.last.pop_front();
            }
            self.last.push_back(shorten(l, 500));
        }
        self.flush();
    }

    /// Recognizes per-item status lines and records the latest status of each item.
    fn item(&mut self, line: &str) {
        let t = line.trim();
        if let Some(s) = t.strip_prefix("Status: ") {
            self.summary.final_status = Some(format!("Status: {s}"));
            return;
        }
        let Some((item, status)) = parse_item(line) else {
            return;
        };
        if let Some(o) = self.summary.items.iter_mut().find(|o| o.item == item) {
            o.status = status;
        } else if self.summary.items.len() < MAX_ITEMS {
            self.summary.items.push(ItemOutcome { item, status });
        }
    }
}

/// Per-item lines: a pull's `<12-hex layer id>: <status>` (also indented inside compose
/// output), and compose's indented `Container|Network|Volume|Image|Service <name>  <status>` or
/// ` <image> Pulling|Pulled`.
fn parse_item(line: &str) -> Option<(String, String)> {
    let t = line.trim();
    if let Some((id, status)) = t.split_once(": ")
        && id.len() == 12
        && id.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Some((format!("layer {id}"), status.trim().to_string()));
    }
    if !line.starts_with(char::is_whitespace) {
        return None;
    }
    let mut words = t.split_whitespace();
    let first = words.next()?;
    let (item, rest) = if matches!(
        first,
        "Container" | "Network" | "Volume" | "Image" | "Service"
    ) {
        let name = words.next()?;
        (
            format!("{first} {name}"),
            words.collect::<Vec<_>>().join(" "),
        )
    } else {
        (first.to_string(), words.collect::<Vec<_>>().join(" "))
    };
    if rest.is_empty() || item.ends_with(':') {
        return None;
    }
    Some((item, rest))
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items() {
        assert_eq!(
            parse_item("a1b2c3d4e5f6: Pull complete"),
            Some(("layer a1b2c3d4e5f6".into(), "Pull complete".into()))
        );
        assert_eq!(
            parse_item(" Container webshop-web-1  Started"),
            Some(("Container webshop-web-1".into(), "Started".into()))
        );
        assert_eq!(
            parse_item(" nginx:1.27-alpine Pulled"),
            Some(("nginx:1.27-alpine".into(), "Pulled".into()))
        );
        assert_eq!(parse_item(" Digest: sha256:abc"), None);
        assert_eq!(parse_item("1.27-alpine: Pulling from library/nginx"), None);
        assert_eq!(parse_item("#1 DONE 0.0s"), None);
    }

    #[test]
    fn an_over_long_line_is_dropped_whether_or_not_it_ends_in_its_chunk() {
        let max = 16;
        let long = vec![b'x'; 40];
        for chunks in [
            // Whole within one chunk, a short line after it.
            vec![[long.as_slice(), b"\nok\n"].concat()],
            // Across chunks.
            vec![
                long[..20].to_vec(),
                [&long[20..], b"\nok\n".as_slice()].concat(),
            ],
            // Its end in the next chunk, the short line in a third.
            vec![long.clone(), b"\n".to_vec(), b"ok\n".to_vec()],
        ] {
            let mut lines = Lines::new(max);
            let (mut kept, mut overlong) = (Vec::new(), 0);
            for c in &chunks {
                overlong += usize::from(lines.push(c, |l, skipped| {
                    if !skipped {
                        kept.push(String::from_utf8_lossy(l).into_owned());
                    }
                }));
                assert!(
                    lines.buf.len() <= max,
                    "at most one short partial line is held"
                );
            }
            assert_eq!((kept, overlong), (vec!["ok".to_string()], 1), "{chunks:?}");
        }
    }

    #[tokio::test]
    async fn split_lines_malformed_and_done() {
        let chunks: Vec<Result<Bytes, String>> = vec![
            Ok(Bytes::from_static(
                b"{\"type\":\"activity\",\"activityId\":\"a1\"}\n{\"log\":\"abc",
            )),
            Ok(Bytes::from_static(
                b"def012345: Pull complete\"}\nnot json\n\n",
            )),
            Ok(Bytes::from_static(b"{\"done\":true}")),
        ];
        let mut seen = Vec::new();
        let s = read_stream_within(
            futures::stream::iter(chunks),
            |p| seen.push(p.progress),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(seen, vec![1, 2, 3, 4]);
        assert_eq!(s.activity_id.as_deref(), Some("a1"));
        assert_eq!(s.items[0].item, "layer abcdef012345");
        assert_eq!(s.malformed, 1);
        assert_eq!(s.malformed_samples, vec!["not json".to_string()]);
        assert!(s.done);
        assert_eq!(s.final_status, None);
        assert_eq!(s.items[0].status, "Pull complete");
    }

    /// A long activity ID's progress message is cut to its bound (found by fuzzing the
    /// jsonlines target; input in tests/fixtures/fuzz-regressions/jsonlines).
    #[tokio::test]
    async fn a_long_activity_id_keeps_the_progress_message_short() {
        let line = format!(
            "{{\"type\":\"activity\",\"activityId\":\"{}\"}}\n",
            "A".repeat(500)
        );
        let mut messages = Vec::new();
        read_stream_within(
            futures::stream::iter(vec![Ok::<_, String>(Bytes::from(line))]),
            |p| messages.extend(p.message),
            &CancellationToken::new(),
            None,
        )
        .await
        .ok();
        assert!(!messages.is_empty());
        assert!(
            messages
                .iter()
                .all(|m| m.chars().count() <= MAX_MESSAGE + 10),
            "{messages:?}"
        );
    }
}
