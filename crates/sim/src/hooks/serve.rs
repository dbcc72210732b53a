//! The simulator's side of the test hooks: the `/__sim` routes, each a thin HTTP translation
//! of one [`Shared`] operation (requests, reset, state, faults, streams, config).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::config::ArcaneVersion;
use crate::faults;
use crate::reply::json_response;
use crate::state::State;
use crate::world::Shared;

/// The `/__sim` routes, for the server's router to merge.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/__sim/requests", get(requests))
        .route("/__sim/reset", post(reset))
        .route("/__sim/state", get(get_state).post(set_state))
        .route(
            "/__sim/faults",
            get(get_faults).post(add_faults).delete(clear_faults),
        )
        .route("/__sim/streams", get(streams))
        .route("/__sim/config", get(get_config).post(set_config))
}

type St = axum::extract::State<Arc<Shared>>;

async fn requests(st: St) -> Response {
    json_response(StatusCode::OK, &Value::Array(st.requests()))
}

async fn reset(st: St) -> Response {
    st.reset();
    json_response(StatusCode::OK, &json!({"reset": true}))
}

async fn get_state(st: St) -> Response {
    let s = st.state().clone();
    json_response(
        StatusCode::OK,
        &serde_json::to_value(s).unwrap_or(Value::Null),
    )
}

async fn set_state(st: St, body: Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body)
        .map_err(anyhow::Error::from)
        .and_then(State::from_json);
    match parsed {
        Ok(s) => {
            st.replace_state(s);
            json_response(StatusCode::OK, &json!({"ok": true}))
        }
        Err(e) => json_response(
            StatusCode::BAD_REQUEST,
            &json!({"error": format!("invalid state: {e:#}")}),
        ),
    }
}

async fn get_faults(st: St) -> Response {
    json_response(StatusCode::OK, &json!({"pending": st.pending_faults()}))
}

async fn add_faults(st: St, body: Bytes) -> Response {
    match faults::parse(&body) {
        Ok(fs) => {
            let n = fs.len();
            st.add_faults(fs);
            json_response(StatusCode::OK, &json!({"added": n}))
        }
        Err(e) => json_response(StatusCode::BAD_REQUEST, &json!({"error": format!("{e:#}")})),
    }
}

async fn clear_faults(st: St) -> Response {
    st.clear_faults();
    json_response(StatusCode::OK, &json!({"cleared": true}))
}

async fn streams(st: St) -> Response {
    json_response(StatusCode::OK, &Value::Array(st.streams()))
}

async fn get_config(st: St) -> Response {
    json_response(
        StatusCode::OK,
        &json!({"streamPaceMs": st.stream_pace_ms.load(Ordering::Relaxed),
                "arcaneVersion": st.version().as_str()}),
    )
}

async fn set_config(st: St, body: Bytes) -> Response {
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": format!("body is not JSON: {e}")}),
            );
        }
    };
    let version = match v.get("arcaneVersion") {
        None => None,
        Some(x) => match x.as_str().map(str::parse::<ArcaneVersion>) {
            Some(Ok(ver)) => Some(ver),
            Some(Err(e)) => {
                return json_response(StatusCode::BAD_REQUEST, &json!({"error": e}));
            }
            None => {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "arcaneVersion must be \"2.8\" or \"main\""}),
                );
            }
        },
    };
    let pace = match v.get("streamPaceMs").map(Value::as_u64) {
        Some(Some(ms)) => Some(ms),
        Some(None) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "streamPaceMs must be a non-negative integer"}),
            );
        }
        None => None,
    };
    if let Some(ms) = pace {
        st.stream_pace_ms.store(ms, Ordering::Relaxed);
    }
    if let Some(ver) = version {
        st.set_version(ver);
    }
    get_config(st).await
}
