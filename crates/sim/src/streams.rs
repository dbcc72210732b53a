//! The answers whose body is sent as a stream, and the faults that cut them: paced JSON-lines
//! streams (registered in `/__sim/streams`, their activity linked), downloads, and a complete
//! JSON answer cut in the middle (docs/arcane-wire.md#streams, #downloads).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::reply::MAX_BODY;
use crate::state::State;
use crate::world::Shared;

/// A change applied to the state when a stream completes.
pub type StateChange = Box<dyn FnOnce(&mut State) + Send>;

/// A paced JSON-lines stream (docs/arcane-wire.md#streams): an activity line, the `{"log"}` lines, then
/// `{"done":true}` (running `on_done` on the state) or `{"error"}`.
pub fn json_stream(
    ctx: &Ctx,
    logs: Vec<String>,
    outcome: Result<(), String>,
    on_done: Option<StateChange>,
) -> Response {
    let sh = ctx.sh.clone();
    let activity = sh.next_activity();
    let mut lines: Vec<Value> = vec![json!({"type": "activity", "activityId": activity})];
    lines.extend(logs.into_iter().map(|l| json!({"log": l})));
    let outcome = match &ctx.stream_error {
        Some(e) => Err(e.clone()),
        None => outcome,
    };
    let final_line = match &outcome {
        Ok(()) => json!({"done": true}),
        Err(e) => json!({"error": e}),
    };
    lines.push(final_line);
    let cut_after = if ctx.truncate { Some(2usize) } else { None };
    let stream_id = sh.stream_started(ctx.log_idx, &ctx.method, &ctx.path);
    sh.link_activity(&activity, stream_id);
    struct Guard {
        sh: Arc<Shared>,
        id: usize,
        log_idx: usize,
        done: bool,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            self.sh.stream_finished(self.id, self.log_idx, self.done);
        }
    }
    struct S {
        guard: Guard,
        lines: std::vec::IntoIter<Value>,
        sent: usize,
        cut_after: Option<usize>,
        on_done: Option<StateChange>,
        ok: bool,
    }
    let s = S {
        guard: Guard {
            sh: sh.clone(),
            id: stream_id,
            log_idx: ctx.log_idx,
            done: false,
        },
        lines: lines.into_iter(),
        sent: 0,
        cut_after,
        on_done,
        ok: outcome.is_ok(),
    };
    let stream = futures::stream::unfold(s, |mut s| async move {
        if s.cut_after.is_some_and(|n| s.sent >= n) {
            // Truncated: the connection is cut with no final line.
            s.guard.done = true;
            return Some((Err(std::io::Error::other("simulated truncated stream")), s));
        }
        let line = s.lines.next()?;
        if s.sent > 0 {
            let pace = s.guard.sh.stream_pace_ms.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(pace)).await;
        }
        let is_last = s.lines.len() == 0;
        if is_last {
            if s.ok
                && let Some(f) = s.on_done.take()
            {
                f(&mut s.guard.sh.state());
            }
            s.guard.done = true;
        }
        s.sent += 1;
        s.guard.sh.stream_line_sent(s.guard.id);
        let mut b = serde_json::to_vec(&line).unwrap_or_default();
        b.push(b'\n');
        Some((Ok::<Bytes, std::io::Error>(Bytes::from(b)), s))
    })
    .take_while_inclusive_err();
    json_lines_response(stream)
}

/// A `200` JSON-lines answer with the headers Arcane sends on its streams (progress streams
/// and the client stream alike).
pub fn json_lines_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/x-json-stream")
        .header(header::CACHE_CONTROL, "no-store, no-cache, must-revalidate")
        .header("X-Accel-Buffering", "no")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Ends a stream after its first error item.
trait TakeWhileInclusiveErr: futures::Stream<Item = Result<Bytes, std::io::Error>> + Sized {
    fn take_while_inclusive_err(
        self,
    ) -> futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>>
    where
        Self: Send + 'static,
    {
        let mut failed = false;
        self.take_while(move |item| {
            let keep = !failed;
            if item.is_err() {
                failed = true;
            }
            futures::future::ready(keep)
        })
        .boxed()
    }
}
impl<T: futures::Stream<Item = Result<Bytes, std::io::Error>> + Sized> TakeWhileInclusiveErr for T {}

/// A download (docs/arcane-wire.md#downloads). A `truncate` fault cuts it in the middle.
pub fn download(ctx: &Ctx, content_type: &str, disposition: &str, bytes: Vec<u8>) -> Response {
    // A file name from the request may hold control characters. Go's HTTP server writes a
    // header value as it is, with CR and LF turned into spaces; the simulator's HTTP stack
    // refuses every control character but tab, so all of them become spaces here (else the
    // answer would be an empty 500; docs/arcane-wire.md#checked-by-schemathesis).
    let disposition: String = disposition
        .chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect();
    let builder = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CONTENT_DISPOSITION, disposition);
    if ctx.truncate {
        let half = Bytes::from(bytes[..bytes.len() / 2].to_vec());
        let s = futures::stream::iter(vec![
            Ok::<Bytes, std::io::Error>(half),
            Err(std::io::Error::other("simulated truncated download")),
        ]);
        return builder
            .header(header::CONTENT_LENGTH, bytes.len())
            .body(Body::from_stream(s))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    builder
        .body(Body::from(bytes))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Cuts a complete JSON response in the middle (the `truncated_stream` fault on a
/// non-stream route).
pub fn truncate_response(resp: Response) -> Response {
    let (parts, body) = resp.into_parts();
    let s = futures::stream::once(async move {
        let b = axum::body::to_bytes(body, MAX_BODY)
            .await
            .unwrap_or_default();
        Ok::<Bytes, std::io::Error>(b.slice(..b.len() / 2))
    })
    .chain(futures::stream::once(async {
        Err(std::io::Error::other("simulated truncated body"))
    }));
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from_stream(s))
}
