//! Presentation: the engine's answer (`arcane_engine::Outcome` or `arcane_engine::CallError`) as an
//! MCP tool result (docs/output-format.md). Markdown through `arcane-markdown`, output-schema
//! fitting and its note (`crate::output_schema`), next steps and the resource link
//! ([`finish`]), the last sanitize, secrets masked in the text unless `--show-secrets`, and a
//! result kept under the size one MCP message can carry. `structuredContent` is Arcane's value.

pub mod finish;
pub mod next_steps;
pub mod text;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use arcane_catalog::Action;
use arcane_engine::{
    CallError, ChangeState, Download, DownloadBody, ExecConfig, ExecOutput, HandlerOutput,
    LogOutput, Outcome, Produced, StatsOutput, StreamSummary, mask_text,
};
use arcane_markdown::{RenderContext, render_value, title};

use crate::snapshot::Snapshot;
use crate::surface::call_name;

/// Largest download returned as text.
const MAX_TEXT_DOWNLOAD: usize = 256 * 1024;
/// Largest tool result, serialized. rmcp's stdio reader drops a JSON-RPC line over 16 MiB
/// (`DEFAULT_MAX_LINE_LENGTH`); a result stays a little under it so that the envelope fits.
pub const MAX_RESULT_BYTES: usize = 15 * 1024 * 1024;

/// The text blocks of a tool result, joined by newlines (what the audit log and token audit
/// read of a result).
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A text block for the model (audience `assistant`, docs/output-format.md).
pub fn assistant_text(text: impl Into<String>) -> ContentBlock {
    let mut t = rmcp::model::TextContent::new(text);
    t.annotations =
        Some(rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::Assistant]));
    ContentBlock::Text(t)
}

/// The text of a failed call: an `isError` result, no structuredContent. Every error text
/// passes here, so this is where a password written in a URL (`ARCANE_URL` with
/// `user:password@`, or one Arcane echoed) is masked.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    let text = text.into();
    let text = match mask_text(&text) {
        std::borrow::Cow::Owned(masked) => masked,
        std::borrow::Cow::Borrowed(_) => text,
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The tool result of one call, run on `snap` by an executor with `config`.
pub fn tool_result(
    snap: &Snapshot,
    config: &ExecConfig,
    answer: Result<Outcome<'_>, CallError>,
) -> CallToolResult {
    let outcome = match answer {
        Ok(outcome) => outcome,
        Err(e) => return error_result(e.to_string()),
    };
    let Outcome {
        action,
        params,
        produced,
    } = outcome;
    let show_secrets = config.show_secrets;
    let result = match produced {
        // A preview is returned as it is: no next steps, nothing was run.
        Produced::Preview(request, effect) => return safe_mode_preview(action, request, &effect),
        Produced::Json(body) => success(
            snap,
            action,
            crate::output_schema::unwrap_envelope(body),
            show_secrets,
        ),
        Produced::NoBody { status } => success(
            snap,
            action,
            json!({"status": status, "ok": true}),
            show_secrets,
        ),
        Produced::Stream(summary) => stream_result(action, &summary, show_secrets),
        Produced::Download(d) => download_result(action, d, show_secrets),
        Produced::Handler(output) => handler_result(action, output, show_secrets),
    };
    let result = finish::finish(snap, action, &params, &config.environment, result);
    fit_result(snap, action, result)
}

/// A safe-mode preview: what the call would do, in the words a confirmation shows
/// (`arcane_engine::Effect`, one renderer for both), then the exact request.
fn safe_mode_preview(
    action: &Action,
    preview: Value,
    effect: &arcane_engine::Effect,
) -> CallToolResult {
    let text = format!(
        "Safe mode: {} was not sent. It would run:\n\n{}\n\nThis is the request it would send (secrets masked):\n\n```json\n{}\n```\n",
        action.id,
        effect.text(),
        serde_json::to_string_pretty(&preview).unwrap_or_default()
    );
    let mut r = CallToolResult::success(vec![assistant_text(text)]);
    r.structured_content = Some(
        json!({"safeMode": true, "action": action.id, "effect": effect.text(), "request": preview}),
    );
    r
}

/// A successful JSON result: structuredContent (Arcane's value) plus the Markdown text, which
/// is rendered from a redacted copy unless `show_secrets`, or unless revealing a secret is the
/// action's purpose (then the text says so).
fn success(snap: &Snapshot, action: &Action, value: Value, show_secrets: bool) -> CallToolResult {
    let full_item = action
        .full_item
        .as_deref()
        .and_then(|id| snap.catalog.get(id))
        .filter(|a| snap.policy.serves(a))
        .map(|a| call_name(snap.surface, a));
    let ctx = RenderContext {
        title: &action.title,
        columns: action.columns.as_deref(),
        full_item_action: full_item.as_deref(),
        empty_hint: action.empty_hint.as_deref(),
        omit: &action.text_omits,
        ..Default::default()
    };
    let mut text = if show_secrets || action.reveals_secret.is_some() {
        render_value(&ctx, &value)
    } else {
        render_value(&ctx, &arcane_engine::redacted_view(&value, &action.domain))
    };
    if let Some(what) = &action.reveals_secret {
        text.push_str(&format!(
            "\n\nThis answer shows {what} in full: it is the purpose of this action, and Arcane \
             may not show it again. Hand it to the user to store; do not repeat it elsewhere."
        ));
    }
    let mut value = value;
    // Declared output schemas are enforced: a part that does not fit is sent as null, and the
    // text names it with Arcane's original value.
    if let Some(fitter) = &snap.fitter
        && snap.policy.declares_output_schema(action)
    {
        let mut adjusted = fitter.fit(&action.id, &mut value);
        if !show_secrets && action.reveals_secret.is_none() {
            // The note quotes Arcane's original values: the same redactor as the text, with
            // the part's own name deciding as a field name would.
            for a in &mut adjusted {
                let key = a.pointer.rsplit('/').next().unwrap_or_default().to_string();
                let mut wrapped = Value::Object(Map::from_iter([(key.clone(), a.original.take())]));
                arcane_engine::redact_for(&mut wrapped, &action.domain);
                a.original = wrapped[&key].take();
            }
        }
        if !adjusted.is_empty() {
            text.push_str("\n\n");
            text.push_str(&crate::output_schema::note(&adjusted));
        }
    }
    let mut r = CallToolResult::success(vec![assistant_text(text)]);
    r.structured_content = Some(value);
    r
}

/// A finished stream: its summary as text (the last lines masked like log lines unless
/// `show_secrets`), the summary as structuredContent, as Arcane sent it.
fn stream_result(action: &Action, s: &StreamSummary, show_secrets: bool) -> CallToolResult {
    let text = format!("{}{}", title(&action.title), text::stream_text(s));
    let text = if show_secrets {
        text
    } else {
        mask_text(&text).into_owned()
    };
    let mut r = CallToolResult::success(vec![assistant_text(text)]);
    r.structured_content = Some(json!({
        "activityId": s.activity_id,
        "done": s.done,
        "lines": s.lines,
        "finalStatus": s.final_status,
        "items": s.items.iter().map(|i| json!({"item": i.item, "status": i.status})).collect::<Vec<_>>(),
        "lastLines": s.last_lines,
        "malformedLines": s.malformed,
    }));
    r
}

/// A handler's output as written, in its fence; the text masks secrets written in it (a
/// password in a URL, a `--token …` flag) unless `show_secrets`, structuredContent keeps it
/// as Arcane sent it.
fn handler_result(action: &Action, output: HandlerOutput, show_secrets: bool) -> CallToolResult {
    let (text, structured) = match output {
        HandlerOutput::Logs(out) => {
            let shown = if show_secrets {
                text::log_text(&out)
            } else {
                text::log_text(&LogOutput {
                    lines: out
                        .lines
                        .iter()
                        .map(|l| mask_text(l).into_owned())
                        .collect(),
                    truncated: out.truncated.clone(),
                })
            };
            (
                format!("{}{shown}", title(&action.title)),
                json!({"lines": out.lines, "truncated": out.truncated}),
            )
        }
        HandlerOutput::Stats(out) => stats_text(action, out),
        HandlerOutput::Exec(out) => {
            let shown = if show_secrets {
                text::exec_text(&out)
            } else {
                text::exec_text(&ExecOutput {
                    output: mask_text(&out.output).into_owned(),
                    ..out.clone()
                })
            };
            (
                format!("{}{shown}", title(&action.title)),
                json!({"output": out.output, "exitCode": out.exit_code, "truncated": out.truncated}),
            )
        }
    };
    let mut r = CallToolResult::success(vec![assistant_text(text)]);
    r.structured_content = Some(structured);
    r
}

fn stats_text(action: &Action, out: StatsOutput) -> (String, Value) {
    let mut text = format!("{}{} sample(s).", title(&action.title), out.samples.len());
    if let Some(why) = &out.truncated {
        text.push_str(&format!(" {why}"));
    }
    if let Some(last) = out.samples.last() {
        text.push_str("\n\n");
        text.push_str(&arcane_markdown::render_object(
            &RenderContext {
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

/// A download (docs/output-format.md): text in a fenced block when small enough; otherwise the
/// metadata in the text and the file itself as an embedded resource for the user.
fn download_result(action: &Action, d: Download, show_secrets: bool) -> CallToolResult {
    let file_name = d.file_name.clone().unwrap_or_else(|| action.name.clone());
    let content_type = d
        .content_type
        .clone()
        .unwrap_or_else(|| "application/octet-stream".into());
    let size = d.size as u64;
    let meta = json!({"fileName": file_name, "size": size, "contentType": content_type});
    match d.body {
        DownloadBody::Text(text) if text.len() <= MAX_TEXT_DOWNLOAD => {
            let shown = if show_secrets {
                std::borrow::Cow::Borrowed(text.as_str())
            } else {
                arcane_engine::mask_document(&text)
            };
            let md = arcane_markdown::render_text_download(&file_name, size, &content_type, &shown);
            let mut r = CallToolResult::success(vec![assistant_text(md)]);
            let mut sc = meta;
            sc["text"] = Value::String(text);
            r.structured_content = Some(sc);
            r
        }
        body => {
            let bytes = match body {
                DownloadBody::Text(t) => t.into_bytes(),
                DownloadBody::Binary(b) => b,
            };
            let md = arcane_markdown::render_binary_download_meta(&file_name, size, &content_type);
            let uri = format!(
                "arcane://download/{}",
                arcane_engine::segment("fileName", &file_name)
                    .unwrap_or_else(|_| "download".into())
            );
            let blob = rmcp::model::ResourceContents::BlobResourceContents {
                uri,
                mime_type: Some(content_type.clone()),
                blob: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bytes),
                meta: None,
            };
            let mut embedded = rmcp::model::EmbeddedResource::new(blob);
            embedded.annotations = Some(
                rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::User]),
            );
            let mut r =
                CallToolResult::success(vec![assistant_text(md), ContentBlock::Resource(embedded)]);
            r.structured_content = Some(meta);
            r
        }
    }
}

/// Counts the bytes a value serializes to, without holding them.
#[derive(Default)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps a result within [`MAX_RESULT_BYTES`] so that every client can read it: a larger one is
/// replaced by an error that says how to ask for less.
fn fit_result(snap: &Snapshot, action: &Action, result: CallToolResult) -> CallToolResult {
    let mut count = ByteCount::default();
    if serde_json::to_writer(&mut count, &result).is_err() {
        return result;
    }
    let size = count.0;
    if size <= MAX_RESULT_BYTES {
        return result;
    }
    tracing::warn!(action = %action.id, bytes = size, "a result was too large to send");
    let cause = format!(
        "the result would be {} ({size} bytes), more than fits in one MCP message (limit {}), \
         so it was not sent",
        arcane_markdown::human_bytes(size as u64),
        arcane_markdown::human_bytes(MAX_RESULT_BYTES as u64)
    );
    let how = arcane_engine::how_to_ask_for_less(action);
    let done = if action.mutating {
        format!(
            " {}",
            arcane_engine::unsure(&snap.scope(), action, ChangeState::Succeeded)
        )
    } else {
        String::new()
    };
    error_result(format!("{}: {cause}. {how}.{done}", action.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_its_text_masked_without_structured_content() {
        let err = CallError::Unreachable {
            base: "https://admin:hunter2@arcane.example".into(),
            cause: "connection refused".into(),
        };
        let r = error_result(err.to_string());
        assert_eq!(r.is_error, Some(true));
        assert!(r.structured_content.is_none());
        let text = r.content[0].as_text().map(|t| t.text.clone()).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.starts_with("Cannot connect to Arcane at https://admin:")
                && text.contains("Check ARCANE_URL"),
            "{text}"
        );
    }
}
