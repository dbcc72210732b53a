//! Fault injection (`POST /__sim/faults`), and the one fault that reshapes an answer after it
//! was built: a slow body.

use std::time::Duration;

use anyhow::{Result, bail};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Answer `status` (default 500) with `body` (default: a problem+json for that status).
    Status,
    /// Wait `delayMs`, then answer normally.
    Delay,
    /// Close the connection without answering.
    Drop,
    /// Answer `status` (default 200) with a cut-off JSON body.
    MalformedJson,
    /// Start answering normally, then cut the connection mid-body (streams: after the first
    /// log line).
    TruncatedStream,
    /// Streams: end with `{"error": …}` instead of `{"done": true}`.
    StreamError,
    /// Arcane's answer when the environment's agent is unreachable: 502 (or `status`)
    /// `{"success":false,"data":{"error":"Edge agent is not connected"}}`.
    AgentUnreachable,
    /// Answer normally, but send the body `chunkBytes` (default 64) at a time with `paceMs`
    /// (default 100) between two pieces: an upstream that answers at once and then trickles.
    SlowBody,
}

/// A fault as posted to `/__sim/faults`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultSpec {
    /// HTTP method to match (case-insensitive); absent or `*` matches any.
    #[serde(default)]
    pub method: Option<String>,
    /// Regular expression searched in the request path (with the `/api` prefix, no query).
    pub path: String,
    pub kind: FaultKind,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// How many matching requests it applies to; default 1; 0 or negative: until reset.
    #[serde(default)]
    pub times: Option<i64>,
    /// `slow_body`: bytes per piece (default 64).
    #[serde(default)]
    pub chunk_bytes: Option<usize>,
    /// `slow_body`: the pause before each piece after the first, in ms (default 100).
    #[serde(default)]
    pub pace_ms: Option<u64>,
}

/// How a `slow_body` fault sends a body: pieces of `chunk` bytes, `pace` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowBody {
    pub chunk: usize,
    pub pace: Duration,
}

impl FaultSpec {
    /// The pacing of a `slow_body` fault (`None` for any other kind).
    pub fn slow_body(&self) -> Option<SlowBody> {
        (self.kind == FaultKind::SlowBody).then(|| SlowBody {
            chunk: self.chunk_bytes.unwrap_or(64),
            pace: Duration::from_millis(self.pace_ms.unwrap_or(100)),
        })
    }
}

/// A registered fault.
#[derive(Debug, Clone)]
pub struct Fault {
    pub spec: FaultSpec,
    regex: Regex,
    remaining: Option<u64>,
}

impl Fault {
    /// Validates a fault spec.
    pub fn new(spec: FaultSpec) -> Result<Fault> {
        let regex = Regex::new(&spec.path)
            .map_err(|e| anyhow::anyhow!("invalid `path` regex {:?}: {e}", spec.path))?;
        if let Some(s) = spec.status
            && !(100..=599).contains(&s)
        {
            bail!("invalid `status` {s}: must be 100..=599");
        }
        if spec.chunk_bytes == Some(0) {
            bail!("invalid `chunkBytes` 0: must be at least 1");
        }
        let remaining = match spec.times {
            None => Some(1),
            Some(n) if n <= 0 => None,
            Some(n) => Some(n as u64),
        };
        Ok(Fault {
            spec,
            regex,
            remaining,
        })
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        let m = self
            .spec
            .method
            .as_deref()
            .is_none_or(|m| m == "*" || m.eq_ignore_ascii_case(method));
        m && self.regex.is_match(path)
    }
}

/// Takes the first fault matching `method path`, consuming one of its uses.
pub fn take(faults: &mut Vec<Fault>, method: &str, path: &str) -> Option<FaultSpec> {
    let i = faults.iter().position(|f| f.matches(method, path))?;
    let spec = faults[i].spec.clone();
    if let Some(r) = &mut faults[i].remaining {
        *r -= 1;
        if *r == 0 {
            faults.remove(i);
        }
    }
    Some(spec)
}

/// Parses the body of `POST /__sim/faults`: one fault object or an array of them.
pub fn parse(body: &[u8]) -> Result<Vec<Fault>> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| anyhow::anyhow!("body is not JSON: {e}"))?;
    let items = match v {
        Value::Array(a) => a,
        other => vec![other],
    };
    items
        .into_iter()
        .map(|i| {
            let spec: FaultSpec =
                serde_json::from_value(i).map_err(|e| anyhow::anyhow!("invalid fault: {e}"))?;
            Fault::new(spec)
        })
        .collect()
}

/// Sends `resp`'s body as `slow` says: its status and headers at once (`Content-Length`
/// kept), then the bytes piece by piece. A body that fails (a truncated stream) still fails,
/// after the pieces it had sent.
pub fn slow_body(resp: Response, slow: SlowBody) -> Response {
    let (parts, body) = resp.into_parts();
    let pieces = body.into_data_stream().flat_map(move |item| {
        let items: Vec<Result<Bytes, axum::Error>> = match item {
            Ok(mut b) => {
                let mut v = Vec::new();
                while !b.is_empty() {
                    v.push(Ok(b.split_to(slow.chunk.min(b.len()))));
                }
                v
            }
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(items)
    });
    let paced = pieces.enumerate().then(move |(i, piece)| async move {
        if i > 0 {
            tokio::time::sleep(slow.pace).await;
        }
        piece
    });
    Response::from_parts(parts, Body::from_stream(paced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_take() {
        let mut f = parse(
            br#"{"method":"post","path":"/restart$","kind":"status","status":503,"times":2}"#,
        )
        .unwrap();
        assert!(take(&mut f, "GET", "/api/x/restart").is_none());
        assert!(take(&mut f, "POST", "/api/x/restart").is_some());
        assert!(take(&mut f, "POST", "/api/x/restart").is_some());
        assert!(take(&mut f, "POST", "/api/x/restart").is_none());
        let mut f = parse(br#"[{"path":"x","kind":"drop","times":0}]"#).unwrap();
        for _ in 0..5 {
            assert!(take(&mut f, "GET", "/x").is_some());
        }
    }

    #[test]
    fn bad_specs_are_errors() {
        assert!(parse(b"nope").unwrap_err().to_string().contains("not JSON"));
        let e = parse(br#"{"path":"(","kind":"drop"}"#).unwrap_err();
        assert!(e.to_string().contains("invalid `path` regex"));
        let e = parse(br#"{"path":"x","kind":"explode"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant"), "{e}");
        let e = parse(br#"{"path":"x","kind":"status","status":999}"#).unwrap_err();
        assert!(e.to_string().contains("invalid `status`"));
        let e = parse(br#"{"path":"x","kind":"slow_body","chunkBytes":0}"#).unwrap_err();
        assert!(e.to_string().contains("invalid `chunkBytes`"), "{e}");
    }

    #[test]
    fn slow_body_pacing_defaults_and_applies_only_to_its_kind() {
        let f = parse(br#"{"path":"x","kind":"slow_body"}"#).unwrap();
        let slow = f[0].spec.slow_body().unwrap();
        assert_eq!((slow.chunk, slow.pace), (64, Duration::from_millis(100)));
        let f = parse(br#"{"path":"x","kind":"slow_body","chunkBytes":5,"paceMs":1}"#).unwrap();
        let slow = f[0].spec.slow_body().unwrap();
        assert_eq!((slow.chunk, slow.pace), (5, Duration::from_millis(1)));
        let f = parse(br#"{"path":"x","kind":"delay","chunkBytes":5}"#).unwrap();
        assert_eq!(f[0].spec.slow_body(), None);
    }

    #[tokio::test]
    async fn a_slow_body_is_the_same_body_in_pieces() {
        let text = "0123456789abcdefghij-the-whole-answer";
        let resp = Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(text))
            .unwrap();
        let slow = SlowBody {
            chunk: 8,
            pace: Duration::from_millis(1),
        };
        let resp = slow_body(resp, slow);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let mut pieces = Vec::new();
        let mut s = resp.into_body().into_data_stream();
        while let Some(p) = s.next().await {
            pieces.push(p.unwrap());
        }
        assert_eq!(pieces.len(), text.len().div_ceil(8));
        assert!(pieces.iter().all(|p| p.len() <= 8));
        assert_eq!(pieces.concat(), text.as_bytes());
    }
}
