//! The generic responder: a deterministic 2xx answer synthesized from the operation's
//! response schema, for every operation without a stateful route.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::lists::{DB, GENERIC_SORT, paginate};
use crate::ctx::Ctx;
use crate::streams::{download, json_stream};
use crate::synth::synth;

/// A deterministic 2xx answer synthesized from the operation's response schema.
pub fn generic(ctx: &Ctx) -> Response {
    let spec = &ctx.sh.spec;
    let Some(op_i) = ctx.op else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let op = &spec.ops[op_i];
    let (status, schema, name) = ctx.response_schema();
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if ctx.method == "HEAD" || status == 204 {
        return code.into_response();
    }
    let Some(schema) = schema else {
        // No JSON body declared: a stream, an event stream or an opaque answer.
        if op.template == "/stream" {
            return (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                ": connected\n\n",
            )
                .into_response();
        }
        if ctx.method == "POST" {
            return json_stream(ctx, vec!["Working…".into()], Ok(()), None);
        }
        return download(
            ctx,
            "application/octet-stream",
            "attachment; filename=download.bin",
            b"arcane-sim\n".to_vec(),
        );
    };
    let mut v = synth(spec, schema, "", &op.template);
    if let Value::Object(o) = &mut v {
        let mut ordered = serde_json::Map::new();
        if let Some(n) = &name {
            ordered.insert("$schema".into(), json!(ctx.schema_url(n)));
        }
        for (k, val) in std::mem::take(o) {
            ordered.insert(k, val);
        }
        *o = ordered;
    }
    // Keep the pagination arithmetic consistent with the synthesized page.
    if let Some(Value::Array(items)) = v.get("data").cloned()
        && v.get("pagination").is_some()
    {
        let n = items.len();
        let (page, pagination) = paginate(ctx, items, n, DB, GENERIC_SORT);
        v["data"] = Value::Array(page);
        v["pagination"] = pagination;
    }
    ctx.finish_json(status, v, name.as_deref())
}
