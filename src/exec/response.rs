//! Turning Arcane's answers into results (SPEC §6): the envelope unwrapped into
//! `structuredContent`, JSON-lines streams read to the end, downloads as text or metadata.

use serde_json::{Value, json};

/// Unwraps Arcane's `{success, data, pagination, …}` envelope into `structuredContent`. One
/// implementation serves results and output schemas, so that what is declared is what is sent:
/// see [`crate::output_schema::unwrap_envelope`].
pub fn unwrap_envelope(body: Value) -> Value {
    crate::output_schema::unwrap_envelope(body)
}

/// What a JSON-lines stream (pull, build, up, redeploy) ended with.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEnd {
    /// `{"done": true}`.
    Done,
    /// An `{"error": …}` line.
    Error(String),
    /// The stream ended without a final line.
    CutShort,
}

/// A stream read to its end.
#[derive(Debug, Clone)]
pub struct StreamSummary {
    pub end: StreamEnd,
    pub activity_id: Option<String>,
    /// Every `log` line, in order.
    pub log: Vec<String>,
}

/// Most log lines kept in a stream's result (the last ones: they say how it ended).
pub const STREAM_LOG_TAIL: usize = 50;

/// Reads a JSON-lines body (WIRE.md §4).
pub fn read_stream(body: &str) -> StreamSummary {
    let mut summary = StreamSummary {
        end: StreamEnd::CutShort,
        activity_id: None,
        log: Vec::new(),
    };
    for line in body.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            // Not JSON (a proxy's text, a cut line): keep it as log text.
            summary.log.push(line.to_string());
            continue;
        };
        if let Some(e) = v.get("error") {
            summary.end = StreamEnd::Error(match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            break;
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            summary.end = StreamEnd::Done;
            break;
        }
        if let Some(id) = v.get("activityId").and_then(Value::as_str) {
            summary.activity_id = Some(id.to_string());
        }
        if let Some(l) = v.get("log") {
            summary.log.push(match l {
                Value::String(s) => s.trim_end().to_string(),
                other => other.to_string(),
            });
        }
    }
    summary
}

impl StreamSummary {
    /// The structured result of a finished stream.
    pub fn structured(&self) -> Value {
        let skip = self.log.len().saturating_sub(STREAM_LOG_TAIL);
        json!({
            "done": self.end == StreamEnd::Done,
            "activityId": self.activity_id,
            "logLines": self.log.len(),
            "log": self.log[skip..],
        })
    }
}

/// Whether a content type is text a model can read.
pub fn is_textual(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    ct.starts_with("text/")
        || [
            "json",
            "yaml",
            "yml",
            "xml",
            "pem",
            "x-sh",
            "javascript",
            "toml",
        ]
        .iter()
        .any(|w| ct.contains(w))
}

/// The file name of a `Content-Disposition` header (quoted or not).
pub fn disposition_filename(header: &str) -> Option<String> {
    header.split(';').map(str::trim).find_map(|part| {
        let v = part.strip_prefix("filename=")?;
        Some(v.trim_matches('"').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_unwrapping() {
        let list = json!({"success": true, "data": [{"id": 1}], "counts": {"total": 1},
                          "pagination": {"totalItems": 1}});
        assert_eq!(
            unwrap_envelope(list),
            json!({"items": [{"id": 1}], "counts": {"total": 1}, "pagination": {"totalItems": 1}})
        );
        let obj = json!({"$schema": "x", "success": true, "data": {"id": "a", "name": "web"}});
        assert_eq!(unwrap_envelope(obj), json!({"id": "a", "name": "web"}));
        let lone = json!({"success": true, "data": "1.2.3"});
        assert_eq!(unwrap_envelope(lone), json!({"value": "1.2.3"}));
        assert_eq!(unwrap_envelope(json!([1, 2])), json!({"items": [1, 2]}));
        assert_eq!(
            unwrap_envelope(json!({"$schema": "x", "status": "UP"})),
            json!({"status": "UP"})
        );
        assert_eq!(unwrap_envelope(json!(true)), json!({"value": true}));
    }

    #[test]
    fn streams() {
        let ok = "{\"type\":\"activity\",\"activityId\":\"a1\"}\n{\"log\":\"x: Pulling\"}\n{\"done\":true}\n";
        let s = read_stream(ok);
        assert_eq!(s.end, StreamEnd::Done);
        assert_eq!(s.activity_id.as_deref(), Some("a1"));
        assert_eq!(s.log, ["x: Pulling"]);
        let bad = "{\"log\":\"a\"}\n{\"error\":\"denied\"}\n";
        assert_eq!(read_stream(bad).end, StreamEnd::Error("denied".into()));
        assert_eq!(read_stream("{\"log\":\"a\"}\n").end, StreamEnd::CutShort);
        assert_eq!(read_stream("").end, StreamEnd::CutShort);
    }

    #[test]
    fn downloads() {
        assert_eq!(
            disposition_filename("attachment; filename=\"a_b.tar\"").as_deref(),
            Some("a_b.tar")
        );
        assert_eq!(
            disposition_filename("attachment; filename=x.tar.gz").as_deref(),
            Some("x.tar.gz")
        );
        assert!(is_textual("application/x-pem-file") && is_textual("text/plain; charset=utf-8"));
        assert!(!is_textual("application/x-tar") && !is_textual("application/zip"));
    }
}
