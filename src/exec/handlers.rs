//! Running the hand-written handler actions (`catalog/websocket.yaml`): the action's
//! parameters become the WebSocket functions' options; their output is shown as they wrote it.

use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::websocket::{
    self, ExecOptions, HandlerError, LogOptions, WsTarget, collect_logs, run_exec, sample_stats,
    sample_system_stats,
};
use super::{ExecConfig, assistant_text, error_result};
use crate::catalog::{Action, ParamLocation};
use crate::redact::mask_text;
use crate::render::markdown::title;

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
    let Some(handler) = &action.handler else {
        return Err(format!("{} has no handler", action.id));
    };
    let mut values: Vec<(&str, &str, String)> = Vec::new();
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
        values.push((&p.wire_name, &p.name, value));
    }
    let values: Vec<(&str, &str, &str)> = values
        .iter()
        .map(|(w, n, v)| (*w, *n, v.as_str()))
        .collect();
    let path = super::path::fill(&handler.path, &values)
        .map_err(|e| format!("{}: {e}. Nothing was sent.", action.id))?;
    Ok(path)
}

/// Runs a handler action and turns its output (or error) into a result.
pub async fn run(
    config: &ExecConfig,
    auth: &super::Auth,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    action: &Action,
    params: &Map<String, Value>,
) -> CallToolResult {
    let path = match api_path(action, params, &config.environment) {
        Ok(p) => p,
        Err(e) => return error_result(e),
    };
    let url = match websocket::ws_url(&config.base_url, &path) {
        Ok(u) => u,
        Err(e) => return error_result(e.to_string()),
    };
    let (h, v) = auth.header();
    let target = WsTarget {
        url,
        headers: vec![(h.to_string(), v)],
        tls,
        max_message_bytes: config.max_response_bytes,
    };
    let kind = action
        .handler
        .as_ref()
        .map(|h| h.kind.as_str())
        .unwrap_or("");
    let outcome: Result<(String, Value), HandlerError> = match kind {
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
            collect_logs(&target, &opts).await.map(|out| {
                // The text masks secrets written in the lines (a password in a URL, a
                // `--token …` flag); structuredContent keeps the lines as Arcane sent them.
                let shown = if config.show_secrets {
                    out.to_text()
                } else {
                    websocket::LogOutput {
                        lines: out
                            .lines
                            .iter()
                            .map(|l| mask_text(l).into_owned())
                            .collect(),
                        truncated: out.truncated.clone(),
                    }
                    .to_text()
                };
                let text = format!("{}{shown}", title(&action.title));
                (
                    text,
                    json!({"lines": out.lines, "truncated": out.truncated}),
                )
            })
        }
        "ws_stats" => {
            let n = num(params, "samples").unwrap_or(1.0) as usize;
            sample_stats(&target, n.max(1), secs(params, "timeoutSeconds", 10.0))
                .await
                .map(|out| stats_result(action, out))
        }
        "ws_system_stats" => {
            let n = num(params, "samples").unwrap_or(1.0) as usize;
            let interval =
                Duration::from_secs_f64(num(params, "interval").unwrap_or(2.0).clamp(1.0, 10.0));
            let timeout = interval * (n.max(1) as u32) + Duration::from_secs(10);
            sample_system_stats(&target, n.max(1), interval, timeout)
                .await
                .map(|out| stats_result(action, out))
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
            run_exec(&target, command, &opts).await.map(|out| {
                let shown = if config.show_secrets {
                    out.to_text()
                } else {
                    websocket::ExecOutput {
                        output: mask_text(&out.output).into_owned(),
                        ..out.clone()
                    }
                    .to_text()
                };
                let text = format!("{}{shown}", title(&action.title));
                (
                    text,
                    json!({"output": out.output, "exitCode": out.exit_code, "truncated": out.truncated}),
                )
            })
        }
        other => {
            return error_result(format!(
                "{} declares handler kind {other:?}, which this server does not know; fix the declaration in catalog/",
                action.id
            ));
        }
    };
    match outcome {
        Ok((text, structured)) => {
            let mut r = CallToolResult::success(vec![assistant_text(text)]);
            r.structured_content = Some(structured);
            r
        }
        Err(e) => error_result(format!("{} failed: {e}", action.id)),
    }
}

fn stats_result(action: &Action, out: websocket::StatsOutput) -> (String, Value) {
    let mut text = format!("{}{} sample(s).", title(&action.title), out.samples.len());
    if let Some(why) = &out.truncated {
        text.push_str(&format!(" {why}"));
    }
    if let Some(last) = out.samples.last() {
        text.push_str("\n\n");
        text.push_str(&crate::render::markdown::render_object(
            &crate::render::markdown::RenderContext {
                title: "Latest sample",
                ..Default::default()
            },
            last,
        ));
    }
    (
        text,
        json!({"samples": out.samples, "truncated": out.truncated}),
    )
}
