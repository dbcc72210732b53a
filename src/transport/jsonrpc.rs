//! The JSON-RPC layer both transports share, for what rmcp's own decoding drops: stdio
//! ([`Lines`], the server's own line transport) and Streamable HTTP (`serve_http`'s gate,
//! which holds every request body before rmcp reads it).
//!
//! rmcp drops a stdio line that is not valid JSON without a word (to avoid answering a peer
//! that echoes), and answers such an HTTP body with a plain-text 415. A lone UTF-16 surrogate
//! (`"\ud800"`) is such a text: the JSON grammar allows the escape, but it is no character,
//! so no JSON parser that builds strings can read it. Either way the client waited for an
//! answer that never came. Here an undecodable request gets a JSON-RPC error (-32700) that
//! says what is wrong and what to send, with the request's `id` when it can still be read
//! (the lone surrogates taken out), else `id: null` as JSON-RPC 2.0 says; a notification
//! (no `id`) gets none. See docs/security.md ("Undecodable requests").
//!
//! rmcp's `tools/call` type also drops the 2025-11-25 `task` field of a task-augmented call:
//! [`augmented`] reads it from the text, and the transport hands it on with the request
//! (`crate::mcp::core_tasks::Augmented`, docs/tasks.md).

use std::pin::Pin;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::mcp::core_tasks::Augmented;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// JSON-RPC 2.0's parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's invalid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0's invalid params.
pub const INVALID_PARAMS: i64 = -32602;

/// The longest stdio line read (as rmcp's own line transport): a longer one is skipped whole,
/// with a JSON-RPC error, so memory stays bounded.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The first lone UTF-16 surrogate escape of a JSON text: its byte offset and its escape as
/// written (`\ud800`). A surrogate pair (`\ud83d\ude00`) is a character, not a lone one; an
/// escaped backslash (`\\ud800`) is no escape. Linear in the text.
pub fn lone_surrogate(text: &[u8]) -> Option<(usize, String)> {
    all_lone_surrogates(text).into_iter().next()
}

fn all_lone_surrogates(text: &[u8]) -> Vec<(usize, String)> {
    let hex = |at: usize| -> Option<u16> {
        let h = text.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u16> {
        (text.get(at) == Some(&b'\\') && text.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(escape_at(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    found.push((i, String::from_utf8_lossy(&text[i..i + 6]).into_owned()));
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                found.push((i, String::from_utf8_lossy(&text[i..i + 6]).into_owned()));
                i += 6;
            }
            Some(_) => i += 6,
            // Any other escape (`\\`, `\"`, `\n`…): skip the escaped byte.
            None => i += 2,
        }
    }
    found
}

/// The JSON-RPC error response to `text` when it cannot be decoded as JSON (a lone surrogate,
/// broken syntax); `None` when it decodes (rmcp reads it and answers what it means) or when it
/// is a notification, which JSON-RPC never answers.
pub fn undecodable(text: &[u8]) -> Option<Value> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    // JSON text is UTF-8 (RFC 8259). The shape probe below skips the strings it does not read
    // without checking them, and rmcp drops a line that is not UTF-8 without a word: the
    // client would wait for an answer that never comes (found by the jsonrpc fuzz target).
    if let Err(bad) = std::str::from_utf8(text) {
        let id = id_in(String::from_utf8_lossy(text).as_bytes());
        let message = format!(
            "Parse error: the message is not valid UTF-8 (byte {} is not); nothing was run. \
             Send one JSON-RPC 2.0 request as valid JSON text (UTF-8).",
            bad.valid_up_to()
        );
        return Some(error(id, PARSE_ERROR, message, Value::Null));
    }
    let lone = all_lone_surrogates(text);
    if lone.is_empty() {
        // Only syntax is judged here (and the two shapes rmcp would answer with a plain-text
        // 415 over HTTP): a JSON text of another wrong shape is rmcp's to answer.
        let err = match serde_json::from_slice::<Shape>(text) {
            Ok(shape) => return beyond_rmcp(text, shape),
            Err(err) => err,
        };
        if !matches!(
            err.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        ) {
            return None;
        }
        let message = format!(
            "Parse error: the message is not valid JSON ({err}); nothing was run. Send one \
             JSON-RPC 2.0 request as valid JSON text (UTF-8)."
        );
        return Some(error(Value::Null, PARSE_ERROR, message, Value::Null));
    }
    // The same text with each lone surrogate replaced by U+FFFD (an escape of the same
    // length), read only to recover the request's id and method.
    let mut repaired = text.to_vec();
    for (at, _) in &lone {
        repaired[*at..*at + 6].copy_from_slice(br"\ufffd");
    }
    let read = serde_json::from_slice::<Value>(&repaired).ok();
    let id = match read.as_ref() {
        Some(Value::Object(m)) => match m.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            // A notification: never answered, not even with an error.
            None if m.contains_key("method") => return None,
            _ => Value::Null,
        },
        _ => Value::Null,
    };
    let method = read
        .as_ref()
        .and_then(|v| v.get("method"))
        .and_then(Value::as_str)
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    let (at, escape) = &lone[0];
    let more = match lone.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let message = format!(
        "Parse error: the request{method} holds a lone UTF-16 surrogate \"{escape}\" at byte \
         {at} of its JSON text{more}, which is no character, so it cannot be read; nothing was \
         run. Send valid UTF-16 surrogate pairs (a high \\ud800-\\udbff escape followed by a low \
         \\udc00-\\udfff one, e.g. \\ud83d\\ude00) or the characters themselves as UTF-8."
    );
    let data = json!({"offset": at, "escape": escape});
    Some(error(id, PARSE_ERROR, message, data))
}

/// Valid JSON that rmcp cannot take or answers without a reason: nested deeper than a JSON
/// parser reads (128 levels), a batch (an array), which no protocol version this server speaks
/// allows, or a `tools/call` whose `arguments` is no object (rmcp answers "method not found").
/// Every request passes here before rmcp reads it, so `shape` was found without building the
/// text's values, and the depth is a byte scan; only a refused call is read whole (for its id).
fn beyond_rmcp(text: &[u8], shape: Shape) -> Option<Value> {
    if nests_deeper_than(text, MAX_DEPTH) {
        return Some(error(
            Value::Null,
            PARSE_ERROR,
            "Parse error: the message nests deeper than 128 levels, more than it can be read; \
             nothing was run. Send one JSON-RPC 2.0 request with flatter arguments."
                .to_string(),
            Value::Null,
        ));
    }
    if shape.batch {
        return Some(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a batch (a JSON array of requests) is not supported; nothing was \
             run. Send each request as its own message."
                .to_string(),
            Value::Null,
        ));
    }
    if !(shape.tools_call && shape.arguments_not_object) {
        return None;
    }
    let id = id_in(text);
    Some(error(
        id,
        INVALID_PARAMS,
        "Invalid params: tools/call's `arguments` must be a JSON object of the tool's \
         parameters (e.g. {\"action\": \"container.list\", \"params\": {}}), not a \
         string or another value; nothing was run."
            .to_string(),
        Value::Null,
    ))
}

/// The deepest nesting serde_json builds values of (its recursion limit: 128 levels are
/// refused, 127 read).
const MAX_DEPTH: usize = 127;

/// Whether the arrays and objects of a valid JSON text nest deeper than `max` (brackets inside
/// strings not counted). Linear, no allocation.
fn nests_deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// What a first read of a JSON text finds of the shapes [`beyond_rmcp`] answers: whether it
/// is an array (a batch), and whether it is a `tools/call` whose `params.arguments` is present
/// and neither an object nor null. Everything else is skipped unread (serde's `IgnoredAny`),
/// so the read allocates nothing whatever the arguments hold; a key given twice counts as its
/// last value does, as for the JSON-RPC layer that reads the text next.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Shape {
    batch: bool,
    tools_call: bool,
    arguments_not_object: bool,
}

/// Which value a [`Probe`] reads: the message, its `method`, its `params`, or `params.arguments`.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Message,
    Method,
    Params,
    Arguments,
}

struct Probe(Role);

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(Probe(Role::Message), d)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Probe {
    type Value = Shape;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Shape, D::Error> {
        d.deserialize_any(self)
    }
}

/// A key of the message or of its `params`, told apart without allocating.
enum Key {
    Method,
    Params,
    Arguments,
    Other,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "arguments" => Key::Arguments,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

impl Probe {
    /// A value other than an object, an array or a string: only `arguments` cares.
    fn scalar(self, null: bool) -> Shape {
        Shape {
            arguments_not_object: self.0 == Role::Arguments && !null,
            ..Shape::default()
        }
    }
}

impl<'de> serde::de::Visitor<'de> for Probe {
    type Value = Shape;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(self.scalar(false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(self.scalar(false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(self.scalar(false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(self.scalar(false))
    }
    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(self.scalar(true))
    }
    fn visit_str<E>(self, v: &str) -> Result<Shape, E> {
        Ok(Shape {
            tools_call: self.0 == Role::Method && v == "tools/call",
            ..self.scalar(false)
        })
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Shape {
            batch: self.0 == Role::Message,
            ..self.scalar(false)
        })
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut shape = Shape::default();
        while let Some(key) = map.next_key::<Key>()? {
            match (self.0, key) {
                (Role::Message, Key::Method) => {
                    shape.tools_call = map.next_value_seed(Probe(Role::Method))?.tools_call;
                }
                (Role::Message, Key::Params) => {
                    shape.arguments_not_object = map
                        .next_value_seed(Probe(Role::Params))?
                        .arguments_not_object;
                }
                (Role::Params, Key::Arguments) => {
                    shape.arguments_not_object = map
                        .next_value_seed(Probe(Role::Arguments))?
                        .arguments_not_object;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(shape)
    }
}

/// What [`augmented`] reads of a message: its `method` and its `params.task`, everything else
/// skipped unread.
#[derive(serde::Deserialize)]
struct TaskProbe<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    params: Option<TaskParams>,
}

#[derive(serde::Deserialize)]
struct TaskParams {
    #[serde(default)]
    task: Value,
}

/// The 2025-11-25 `task` field (`{"ttl": milliseconds}`) of a `tools/call` in `text`, when it
/// has one (`null` is none). One that is no such object is marked malformed: the session
/// decides whether the field means anything (`crate::mcp::core_tasks::CoreForm`).
pub fn augmented(text: &[u8]) -> Option<Augmented> {
    let probe = serde_json::from_slice::<TaskProbe>(text).ok()?;
    if probe.method.as_deref() != Some("tools/call") {
        return None;
    }
    let task = probe.params.map(|p| p.task).filter(|t| !t.is_null())?;
    let ttl = match task.as_object().map(|t| t.get("ttl")) {
        Some(None | Some(Value::Null)) => Ok(None),
        Some(Some(ttl)) => ttl.as_u64().map(Some).ok_or(()),
        None => Err(()),
    };
    Some(match ttl {
        Ok(ttl_ms) => Augmented {
            ttl_ms,
            malformed: false,
        },
        Err(()) => Augmented {
            ttl_ms: None,
            malformed: true,
        },
    })
}

fn error(id: Value, code: i64, message: String, data: Value) -> Value {
    let mut error = json!({"code": code, "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// The server's stdio transport: one JSON-RPC message per line, as rmcp's, except that a line
/// that cannot be decoded is answered ([`undecodable`]) instead of dropped.
pub struct Lines<R, W> {
    read: BufReader<R>,
    /// The line being read: `receive` may be dropped mid-line (rmcp polls it in a `select!`),
    /// so its bytes stay here until the line ends.
    line: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`], skipped to its end.
    skipping: bool,
    /// An answer to an undecodable line not yet written, and how much of it was.
    pending: Option<(Vec<u8>, usize)>,
    write: Arc<tokio::sync::Mutex<Pin<Box<W>>>>,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Send + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: false,
            pending: None,
            write: Arc::new(tokio::sync::Mutex::new(Box::pin(write))),
        }
    }

    /// Writes the pending answer; `false` when the output is gone. Cancel-safe: a write that
    /// did not complete wrote nothing, and the rest stays pending.
    async fn flush_pending(&mut self) -> bool {
        let Some((bytes, mut done)) = self.pending.take() else {
            return true;
        };
        let mut w = self.write.lock().await;
        while done < bytes.len() {
            self.pending = Some((bytes.clone(), done));
            match w.as_mut().write(&bytes[done..]).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => done += n,
            }
        }
        self.pending = None;
        w.as_mut().flush().await.is_ok()
    }

    fn answer(&mut self, reply: Value) {
        let mut bytes = masked_line(serde_json::to_vec(&reply).expect("a JSON value serializes"));
        bytes.push(b'\n');
        self.pending = Some((bytes, 0));
    }

    /// Reads to the end of the next line into `self.line`; `false` at the end of the input or
    /// on a read error. `Some(true)` when the line was too long (its bytes dropped).
    async fn read_line(&mut self) -> Option<bool> {
        loop {
            let available = self.read.fill_buf().await.ok()?;
            if available.is_empty() {
                return None;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut over = false;
            if !self.skipping {
                if self.line.len() + take > MAX_LINE {
                    self.line.clear();
                    self.skipping = true;
                } else {
                    self.line.extend_from_slice(&available[..take]);
                }
            }
            self.read.consume(take);
            if newline.is_some() {
                if self.skipping {
                    self.skipping = false;
                    over = true;
                }
                return Some(over);
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            let mut bytes = masked_line(bytes);
            bytes.push(b'\n');
            let mut w = write.lock().await;
            w.as_mut().write_all(&bytes).await?;
            w.as_mut().flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.flush_pending().await {
                return None;
            }
            let too_long = self.read_line().await?;
            if too_long {
                tracing::warn!(
                    max = MAX_LINE,
                    "a stdio message longer than the limit was skipped"
                );
                let message = format!(
                    "Parse error: the message is longer than {MAX_LINE} bytes, so it was skipped \
                     unread; nothing was run. Send a smaller request."
                );
                self.answer(error(Value::Null, PARSE_ERROR, message, Value::Null));
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(mut message) => {
                    if let rmcp::model::JsonRpcMessage::Request(r) = &mut message
                        && let rmcp::model::ClientRequest::CallToolRequest(call) = &mut r.request
                        && let Some(task) = augmented(text)
                    {
                        call.extensions.insert(task);
                    }
                    return Some(message);
                }
                Err(e) => {
                    if let Some(reply) = undecodable(text) {
                        tracing::debug!("answered an undecodable stdio message: {e}");
                        self.answer(reply);
                    } else if let Some(reply) = invalid_request(text, &e) {
                        self.answer(reply);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        w.as_mut().shutdown().await
    }
}

/// A message line with the server's held credentials masked (`arcane_redact::mask_known`):
/// rmcp writes some errors itself — "method not found" echoes the method name, whatever the
/// client put in it — so no handler's masking sees them (found by the fuzz target `jsonrpc`).
/// The mask is plain ASCII, so the line stays the same JSON with the credential's text replaced.
fn masked_line(bytes: Vec<u8>) -> Vec<u8> {
    match std::str::from_utf8(&bytes).map(arcane_redact::mask_known) {
        Ok(std::borrow::Cow::Owned(masked)) => masked.into_bytes(),
        _ => bytes,
    }
}

/// The id to answer a request's text with: its own when it is one JSON-RPC allows (a string or
/// a number), else null.
fn id_in(text: &[u8]) -> Value {
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(m)) => match m.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// The answer to valid JSON that is no JSON-RPC message the server reads: an Invalid Request
/// error with the request's id; nothing for a notification or a response (neither is
/// answered), nor for a non-standard notification rmcp would ignore.
fn invalid_request(text: &[u8], e: &serde_json::Error) -> Option<Value> {
    let value = serde_json::from_slice::<Value>(text).ok()?;
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ if value.get("method").is_some() => return None,
        _ if value.get("result").is_some() || value.get("error").is_some() => return None,
        _ => Value::Null,
    };
    tracing::debug!("answered a message that is no JSON-RPC request: {e}");
    Some(error(
        id,
        INVALID_REQUEST,
        format!(
            "Invalid Request: the message is JSON but no JSON-RPC 2.0 request this server reads \
             ({e}); nothing was run. Send {{\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…,\"params\":…}}."
        ),
        Value::Null,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_task_field_is_read_and_a_malformed_one_marked() {
        let call = |task: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"x":[1,{{"y":2}}]}}{task}}}}}"#
            )
        };
        let read = |text: String| augmented(text.as_bytes());
        assert_eq!(read(call("")), None);
        assert_eq!(read(call(r#","task":null"#)), None);
        let ok = |ttl_ms| {
            Some(Augmented {
                ttl_ms,
                malformed: false,
            })
        };
        assert_eq!(read(call(r#","task":{}"#)), ok(None));
        assert_eq!(read(call(r#","task":{"ttl":60000}"#)), ok(Some(60000)));
        let bad = Some(Augmented {
            ttl_ms: None,
            malformed: true,
        });
        assert_eq!(read(call(r#","task":5"#)), bad);
        assert_eq!(read(call(r#","task":{"ttl":-1}"#)), bad);
        assert_eq!(read(call(r#","task":{"ttl":"1s"}"#)), bad);
        // Only a tools/call has one.
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task":{}}}"#;
        assert_eq!(augmented(other.as_bytes()), None);
    }

    /// tests/fixtures/fuzz-regressions/jsonrpc/not-utf8-in-a-string (the fuzz target's input without
    /// its surface byte): bytes that are not UTF-8 inside a string rmcp would have dropped.
    #[test]
    fn a_line_that_is_not_utf8_is_answered_with_a_parse_error() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fuzz-regressions/jsonrpc/not-utf8-in-a-string"
        );
        let line = std::fs::read(path).unwrap();
        assert!(std::str::from_utf8(&line).is_err());
        let reply = undecodable(line.trim_ascii_end()).expect("answered");
        assert_eq!(reply["id"], 5, "{reply}");
        assert_eq!(reply["error"]["code"], PARSE_ERROR, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not valid UTF-8")
        );
        // Valid UTF-8 is still judged as before.
        assert_eq!(
            undecodable(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
    }

    /// The input of tests/fixtures/fuzz-regressions/jsonrpc/: a method named with the server's
    /// credential inside, which rmcp's "method not found" echoes. Every line written is masked.
    #[tokio::test]
    async fn a_held_credential_in_an_echoed_method_name_is_masked() {
        let input =
            include_str!("../../tests/fixtures/fuzz-regressions/jsonrpc/method-echoes-the-key");
        let key = "fuzzKey-7f3a9c21d4e8b6";
        assert!(input.contains(key));
        let _held = arcane_redact::hold_secret(key);
        let first: Value = serde_json::from_str(input.lines().next().unwrap()).unwrap();
        let method = first["method"].as_str().unwrap().to_string();
        let (ours, theirs) = tokio::io::duplex(4096);
        let (r, w) = tokio::io::split(ours);
        let mut lines = Lines::new(r, w);
        let reply: TxJsonRpcMessage<RoleServer> = serde_json::from_value(json!({
            "jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": method}
        }))
        .unwrap();
        lines.send(reply).await.unwrap();
        let mut read = BufReader::new(theirs);
        let mut line = String::new();
        read.read_line(&mut line).await.unwrap();
        assert!(!line.contains(key), "{line}");
        let back: Value = serde_json::from_str(&line).expect("still JSON");
        assert!(
            back["error"]["message"]
                .as_str()
                .unwrap()
                .contains("********"),
            "{line}"
        );
    }

    #[test]
    fn deep_nesting_and_batches_are_answered_not_left_to_a_plain_415() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let r = undecodable(deep.as_bytes()).expect("answered");
        assert_eq!(r["error"]["code"], PARSE_ERROR);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("128 levels")
        );
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        let r = undecodable(batch).expect("answered");
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
        assert!(r["error"]["message"].as_str().unwrap().contains("batch"));
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":"{}"}}"#;
        let r = undecodable(call).expect("answered");
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (json!(3), json!(INVALID_PARAMS))
        );
        // A request of an ordinary shape is rmcp's.
        assert_eq!(
            undecodable(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
    }

    #[test]
    fn the_depth_scan_agrees_with_the_json_parser() {
        for depth in 120..=135 {
            for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                let parsed = serde_json::from_slice::<Value>(text.as_bytes()).is_ok();
                assert_eq!(
                    nests_deeper_than(text.as_bytes(), MAX_DEPTH),
                    !parsed,
                    "depth {depth} of {open}"
                );
            }
        }
        // Brackets inside strings (escaped quotes too) are text, not nesting.
        let text = format!(r#"{{"a":"{}\"{}"}}"#, "[".repeat(300), "{".repeat(300));
        assert!(!nests_deeper_than(text.as_bytes(), MAX_DEPTH));
    }

    #[test]
    fn the_shape_read_finds_batches_and_wrong_arguments_and_nothing_else() {
        let shape = |t: &str| serde_json::from_str::<Shape>(t).unwrap();
        assert!(shape(r#"[{"method":"ping"}]"#).batch);
        for args in [r#""{}""#, "1", "[]", "true"] {
            let t = format!(r#"{{"method":"tools/call","params":{{"arguments":{args}}}}}"#);
            assert!(
                shape(&t).tools_call && shape(&t).arguments_not_object,
                "{t}"
            );
        }
        for t in [
            r#"{"method":"tools/call","params":{"arguments":{"a":[1,{"b":null}]}}}"#,
            r#"{"method":"tools/call","params":{"arguments":null}}"#,
            r#"{"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"method":"ping","params":{"x":{"arguments":"no"}}}"#,
            r#""text""#,
        ] {
            assert!(!shape(t).arguments_not_object && !shape(t).batch, "{t}");
        }
        // Keys given twice count as the last one, as the JSON-RPC layer reads them.
        let t = r#"{"method":"tools/call","method":"ping","params":{"arguments":"x"}}"#;
        assert!(!shape(t).tools_call);
        let t = r#"{"method":"tools\/call","params":{"arguments":"x"}}"#;
        assert!(shape(t).tools_call, "an escaped slash is still tools/call");
    }

    #[test]
    fn finds_lone_surrogates_but_not_pairs_or_escaped_backslashes() {
        assert_eq!(
            lone_surrogate(br#"{"a":"x\ud800y"}"#),
            Some((7, r"\ud800".into()))
        );
        assert_eq!(lone_surrogate(br#"{"a":"\ud83d\ude00"}"#), None);
        assert_eq!(lone_surrogate(br#"{"a":"\\ud800"}"#), None);
        assert_eq!(
            lone_surrogate(br#"{"a":"\uDC00"}"#),
            Some((6, r"\uDC00".into()))
        );
        assert_eq!(
            lone_surrogate(br#"{"a":"\ud83d\u0041"}"#),
            Some((6, r"\ud83d".into()))
        );
    }

    #[test]
    fn answers_with_the_id_and_says_what_to_send() {
        let req = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":"\ud800"}}}"#;
        let r = undecodable(req).unwrap();
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], PARSE_ERROR);
        let m = r["error"]["message"].as_str().unwrap();
        assert!(
            m.contains(r"\ud800") && m.contains("surrogate pairs"),
            "{m}"
        );
        // A notification gets no answer; broken JSON gets one with id null.
        let note = br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\ud800"}}"#;
        assert_eq!(undecodable(note), None);
        assert_eq!(undecodable(b"{\"id\":1,").unwrap()["id"], Value::Null);
        assert_eq!(
            undecodable(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
    }
}
