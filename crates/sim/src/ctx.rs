//! The context of one `/api` request — what was asked, the matched operation, the faults that
//! shape its answer — and the answers built from it: the success envelope fitted to the
//! operation's schema, problem+json errors. Every route handler takes a [`Ctx`].

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value};

use crate::reply::{json_response, problem};
use crate::world::Shared;

/// The context of one `/api` request.
pub struct Ctx {
    pub sh: Arc<Shared>,
    /// Who sent the request (`None` on a public route).
    pub caller: Option<crate::config::Caller>,
    pub method: String,
    /// Full path, with `/api`.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    pub raw_body: Bytes,
    /// Path parameters of the matched template, by name, in path order.
    pub params: Vec<(String, String)>,
    pub op: Option<usize>,
    pub log_idx: usize,
    pub host: String,
    /// Set by the `truncated_stream` fault.
    pub truncate: bool,
    /// Set by the `stream_error` fault: the error message to end the stream with.
    pub stream_error: Option<String>,
    /// Set by the `slow_body` fault: how the answer's body is trickled.
    pub slow_body: Option<crate::faults::SlowBody>,
}

impl Ctx {
    /// A decoded query parameter.
    pub fn q(&self, k: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }

    /// The path parameter `name` of the matched template (`""` when it has none by that
    /// name). Arcane names them alike in every release the simulator loads
    /// (`containerId`, `imageId`, `projectId`, `volumeName`…).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// The environment of an `/environments/{id}/…` route.
    pub fn env_id(&self) -> &str {
        self.param("id")
    }

    /// The last path parameter: the item ID of a collection's item route, whatever the
    /// collection calls it.
    pub fn last_param(&self) -> &str {
        self.params.last().map(|(_, v)| v.as_str()).unwrap_or("")
    }

    /// The body field `k` as a string.
    pub fn body_str(&self, k: &str) -> Option<&str> {
        self.body.as_ref()?.get(k)?.as_str()
    }

    /// The `$schema` URL huma puts first in bodies (docs/arcane-wire.md#json-encoding).
    pub fn schema_url(&self, name: &str) -> String {
        format!("http://{}/api/schemas/{name}.json", self.host)
    }

    /// The operation's success status and response schema.
    pub fn response_schema(&self) -> (u16, Option<&Value>, Option<String>) {
        let Some(i) = self.op else {
            return (200, None, None);
        };
        let (status, schema) = self.sh.spec.success_response(&self.sh.spec.ops[i].op);
        let name = schema
            .and_then(|s| s.get("$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .map(str::to_string);
        (status, schema, name)
    }

    /// A successful JSON answer: `{$schema, success:true, data, …members}` fitted to the
    /// operation's response schema (missing required members synthesized, unknown dropped).
    pub fn ok(&self, data: Value, members: Vec<(&str, Value)>) -> Response {
        self.envelope(data, members, true)
    }

    /// The envelope of [`Ctx::ok`] not fitted to the response schema, for answers Arcane
    /// sends short of what its document requires.
    pub fn ok_unfitted(&self, data: Value) -> Response {
        self.envelope(data, vec![], false)
    }

    fn envelope(&self, data: Value, members: Vec<(&str, Value)>, fit: bool) -> Response {
        let mut body = Map::new();
        let (status, schema, name) = self.response_schema();
        if let Some(n) = &name {
            body.insert("$schema".into(), Value::String(self.schema_url(n)));
        }
        body.insert("success".into(), Value::Bool(true));
        body.insert("data".into(), data);
        for (k, v) in members {
            body.insert(k.to_string(), v);
        }
        let mut v = Value::Object(body);
        if let Some(s) = schema.filter(|_| fit) {
            v = crate::synth::conform(&self.sh.spec, s, v, &self.path);
        }
        self.finish_json(status, v, name.as_deref())
    }

    /// Sends a complete JSON body with the operation's status and a `Link` header.
    pub fn finish_json(&self, status: u16, v: Value, schema_name: Option<&str>) -> Response {
        let mut resp = json_response(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), &v);
        if let Some(n) = schema_name
            && let Ok(h) =
                HeaderValue::from_str(&format!("<{}>; rel=\"describedBy\"", self.schema_url(n)))
        {
            resp.headers_mut().insert(header::LINK, h);
        }
        resp
    }

    /// A huma problem+json error (docs/arcane-wire.md#errors).
    pub fn problem(&self, status: u16, detail: &str) -> Response {
        problem(status, detail, None, &self.host)
    }

    /// A problem+json 422 `validation failed` with `errors[]`.
    pub fn validation(&self, status: u16, errors: Vec<Value>) -> Response {
        problem(
            status,
            "validation failed",
            Some(Value::Array(errors)),
            &self.host,
        )
    }
}
