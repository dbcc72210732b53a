//! Running the hand-written handler actions (`catalog/websocket.yaml`): the action's
//! parameters become the WebSocket functions' options; their output is returned as they wrote
//! it (the presentation, `present/`, shows it).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::context::ExecConfig;
use crate::outcome::{CallError, HandlerOutput};
use crate::websocket::{
    self, ExecOptions, HandlerError, LogOptions, WsTarget, collect_logs, run_exec, sample_stats,
    sample_system_stats,
};
use arcane_catalog::{Action, Param, ParamLocation};

fn num(params: &Map<String, Value>, name: &str) -> Option<f64> {
    params.get(name).and_then(Value::as_f64)
}

fn secs(params: &Map<String, Value>, name: &str, default: f64) -> Duration {
    Duration::from_secs_f64(num(params, name).unwrap_or(default).clamp(0.5, 300.0))
}

/// The Arcane path of the handler with the environment and path parameters filled in.
fn api_path(
    action: &Action,
    params: &Map<String, Value>,
    default_env: &str,
) -> Result<String, String> {
    let Some(handler) = &action.request.handler else {
        return Err(format!("{} has no handler", action.id));
    };
    let mut values: Vec<(&Param, String)> = Vec::new();
    for p in &action.params {
        let value = match p.location {
            ParamLocation::Environment => params
                .get(&p.name)
                .and_then(Value::as_str)
                .unwrap_or(default_env)
                .to_string(),
            ParamLocation::Path => match params.get(&p.name) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => return Err(format!("{} needs {}", action.id, p.name)),
            },
            _ => continue,
        };
        values.push((p, value));
    }
    let values: Vec<crate::path::PathSlot<'_>> = values
        .iter()
        .map(|(p, v)| crate::path::PathSlot {
            placeholder: &p.wire_name,
            name: &p.name,
            value: v,
            takes_path: p.takes_path,
        })
        .collect();
    let path = crate::path::fill(&handler.path, &values)
        .map_err(|e| format!("{} — {e}. Nothing was sent.", action.id))?;
    Ok(path)
}

/// Runs a handler action and returns its output (or the error text).
pub async fn run(
    config: &ExecConfig,
    auth: &crate::http::Auth,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    action: &Action,
    params: &Map<String, Value>,
) -> Result<HandlerOutput, CallError> {
    // The server's history (catalog/history.yaml) is answered before anything is sent.
    if let Some(h) = &action.request.handler
        && h.kind.starts_with("history_")
    {
        return Err(CallError::Handler(format!(
            "{} is answered by the server from its history (docs/undo.md), never sent to Arcane",
            action.id
        )));
    }
    let path = api_path(action, params, &config.environment).map_err(CallError::Handler)?;
    let url = websocket::ws_url(&config.base_url, &path)
        .map_err(|e| CallError::Handler(e.to_string()))?;
    let (h, v) = auth.header();
    // The WebSocket's upgrade request carries the trace context of its span as any request.
    let mut headers = vec![(h.to_string(), v)];
    headers.extend(crate::trace::context_headers(&tracing::Span::current()));
    let target = WsTarget {
        url,
        headers,
        tls,
        max_message_bytes: config.max_response_bytes,
    };
    let kind = action
        .request
        .handler
        .as_ref()
        .map(|h| h.kind.as_str())
        .unwrap_or("");
    let outcome: Result<HandlerOutput, HandlerError> = match kind {
        "ws_logs" => {
            let opts = LogOptions {
                tail: num(params, "tail").unwrap_or(100.0) as u32,
                since: params
                    .get("since")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                timestamps: params
                    .get("timestamps")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                max_lines: num(params, "maxLines").unwrap_or(500.0) as usize,
                timeout: secs(params, "timeoutSeconds", 10.0),
                ..LogOptions::default()
            };
            collect_logs(&target, &opts).await.map(HandlerOutput::Logs)
        }
        "ws_stats" => {
            let n = num(params, "samples").unwrap_or(1.0) as usize;
            sample_stats(&target, n.max(1), secs(params, "timeoutSeconds", 10.0))
                .await
                .map(HandlerOutput::Stats)
        }
        "ws_system_stats" => {
            let n = num(params, "samples").unwrap_or(1.0) as usize;
            let interval =
                Duration::from_secs_f64(num(params, "interval").unwrap_or(2.0).clamp(1.0, 10.0));
            let timeout = interval * (n.max(1) as u32) + Duration::from_secs(10);
            sample_system_stats(&target, n.max(1), interval, timeout)
                .await
                .map(HandlerOutput::Stats)
        }
        "ws_exec" => {
            let command = params
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let opts = ExecOptions {
                shell: params
                    .get("shell")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                timeout: secs(params, "timeoutSeconds", 15.0),
                max_bytes: num(params, "maxBytes").unwrap_or(65536.0) as usize,
            };
            run_exec(&target, command, &opts)
                .await
                .map(HandlerOutput::Exec)
        }
        other => {
            return Err(CallError::Handler(format!(
                "{} declares handler kind {other:?}, which this server does not know; fix the declaration in catalog/",
                action.id
            )));
        }
    };
    outcome.map_err(|e| CallError::Handler(format!("{} failed: {e}", action.id)))
}
