//! Arcane's answer shapes that need no request context: plain JSON, huma's problem+json,
//! the environment proxy's error, the unknown-route 404 (docs/arcane-wire.md#errors).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The largest body read whole: a request body, or a response the `truncated_stream` fault cuts.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// A JSON response with `application/json`.
pub fn json_response(status: StatusCode, v: &Value) -> Response {
    let body = serde_json::to_vec(v).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// A huma problem+json body: `{$schema, title, status, detail, errors?}`.
pub fn problem(status: u16, detail: &str, errors: Option<Value>, host: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = Map::new();
    body.insert(
        "$schema".into(),
        json!(format!("http://{host}/api/schemas/ErrorModel.json")),
    );
    body.insert(
        "title".into(),
        json!(code.canonical_reason().unwrap_or("Error")),
    );
    body.insert("status".into(), json!(status));
    body.insert("detail".into(), json!(detail));
    if let Some(e) = errors {
        body.insert("errors".into(), e);
    }
    (
        code,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        )],
        serde_json::to_vec(&Value::Object(body)).unwrap_or_default(),
    )
        .into_response()
}

/// Arcane's plain-JSON error of the environment proxy: `{"success":false,"data":{"error":…}}`.
pub fn proxy_error(status: u16, msg: &str) -> Response {
    json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
        &json!({"success": false, "data": {"error": msg}}),
    )
}

/// Arcane's unknown-route 404 (docs/arcane-wire.md#errors).
pub fn unknown_route(path: &str) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"success": false, "error": format!("API endpoint not found: {path}")}),
    )
}
