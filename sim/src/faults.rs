//! Fault injection (`POST /__sim/faults`).

use anyhow::{Result, bail};
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
    }
}
