//! Presentation: the engine's answer (`arcane_engine::Outcome` or `arcane_engine::CallError`) as an
//! MCP tool result (docs/output-format.md). Markdown through `arcane-markdown`, output-schema
//! fitting and its note (`crate::present::output_schema`), next steps and the resource link
//! ([`finish`]), the last sanitize, secrets masked in the text unless `--show-secrets`, and a
//! result kept under the size one MCP message can carry. `structuredContent` is Arcane's value.

pub mod blocks;
pub mod find;
pub mod finish;
pub mod links;
pub mod next_steps;
pub mod output_schema;
pub mod text;

pub use blocks::{
    assistant_text, error_result, mask_known_message, mask_known_result, result_text,
};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use arcane_catalog::Action;
use arcane_engine::{
    CallError, ChangeState, Download, DownloadBody, ExecConfig, ExecOutput, HandlerOutput,
    LogOutput, Outcome, Produced, StatsOutput, StreamSummary,
};
use arcane_markdown::{RenderContext, render_value, title};
use arcane_redact::mask_text;

use crate::load::snapshot::Snapshot;
use crate::surface::call_name;

/// Largest download returned as text.
const MAX_TEXT_DOWNLOAD: usize = 256 * 1024;
/// Largest tool result, serialized. rmcp's stdio reader drops a JSON-RPC line over 16 MiB
/// (`DEFAULT_MAX_LINE_LENGTH`); a result stays a little under it so that the envelope fits.
pub const MAX_RESULT_BYTES: usize = 15 * 1024 * 1024;

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
    let mut facts = None;
    let result = match produced {
        // A preview is returned as it is: no next steps, nothing was run.
        Produced::Preview(request, effect) => return safe_mode_preview(action, request, &effect),
        Produced::Json(body) => {
            let value = arcane_catalog::unwrap_envelope(body);
            facts = finish::condition_view(action, &value);
            success(snap, action, &params, value, show_secrets)
        }
        Produced::NoBody { status } => success(
            snap,
            action,
            &params,
            json!({"status": status, "ok": true}),
            show_secrets,
        ),
        Produced::Stream(summary) => stream_result(action, &summary, show_secrets),
        Produced::Download(d) => download_result(action, d, show_secrets),
        Produced::Handler(output) => handler_result(action, output, show_secrets),
    };
    let result = finish::finish(
        snap,
        action,
        &params,
        &config.environment,
        facts.as_ref(),
        result,
    );
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
fn success(
    snap: &Snapshot,
    action: &Action,
    params: &Map<String, Value>,
    value: Value,
    show_secrets: bool,
) -> CallToolResult {
    let full_item = action
        .output
        .full_item
        .as_deref()
        .and_then(|id| snap.catalog.get(id))
        .filter(|a| snap.policy.serves(a))
        .map(|a| call_name(snap.surface, a));
    let notice = nothing_done(action, params, &value);
    let ctx = RenderContext {
        title: &action.title,
        columns: action.output.columns.as_deref(),
        full_item_action: full_item.as_deref(),
        empty_hint: action.output.empty_hint.as_deref(),
        omit: &action.output.text_omits,
        page_start: page_start(action, params),
        notice: notice.as_deref(),
        ..Default::default()
    };
    let mut text = if show_secrets || action.safety.reveals_secret.is_some() {
        // Arcane's secrets shown, never the server's own: masked before rendering, which
        // escapes characters of the value.
        render_value(&ctx, &arcane_redact::mask_known_view(&value))
    } else {
        render_value(&ctx, &arcane_redact::redacted_view(&value, &action.domain))
    };
    if let Some(what) = &action.safety.reveals_secret {
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
        if !show_secrets && action.safety.reveals_secret.is_none() {
            // The note quotes Arcane's original values: the same redactor as the text, with
            // the part's own name deciding as a field name would.
            for a in &mut adjusted {
                let key = a.pointer.rsplit('/').next().unwrap_or_default().to_string();
                let mut wrapped = Value::Object(Map::from_iter([(key.clone(), a.original.take())]));
                arcane_redact::redact_for(&mut wrapped, &action.domain);
                a.original = wrapped[&key].take();
            }
        }
        if !adjusted.is_empty() {
            text.push_str("\n\n");
            text.push_str(&crate::present::output_schema::note(&adjusted));
        }
    }
    let mut r = CallToolResult::success(vec![assistant_text(text)]);
    r.structured_content = Some(value);
    r
}

/// The `start` a list call used, when its action pages with `start` and `limit` (the paging
/// hints of docs/output-format.md name them); `None` for an action that does not page.
fn page_start(action: &Action, params: &Map<String, Value>) -> Option<u64> {
    (action.output.list && action.param("start").is_some() && action.param("limit").is_some())
        .then(|| params.get("start").and_then(Value::as_u64).unwrap_or(0))
}

/// The sentence that opens the text of a destructive call that did nothing
/// (docs/output-format.md#nothing-done), read from the answer's own fields named by the
/// action's `noEffect` (overlay data): each is 0, empty or absent, and at least one is there.
/// It names the selection that matched nothing — the call's query and body parameters, as
/// given — so that a model does not report a clean-up that did not happen. A result that
/// reports errors or `success: false` says something else and gets no such sentence.
fn nothing_done(action: &Action, params: &Map<String, Value>, value: &Value) -> Option<String> {
    let rule = action.safety.no_effect.as_ref()?;
    if value.get("success") == Some(&Value::Bool(false))
        || value
            .get("errors")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty())
    {
        return None;
    }
    let mut said = Vec::new();
    for field in &rule.fields {
        let at = field
            .split('.')
            .try_fold(value, |v, key| v.get(key))
            .filter(|v| !v.is_null());
        let Some(v) = at else { continue };
        let what = match v {
            Value::Number(n) if n.as_f64() == Some(0.0) => "0",
            Value::Array(a) if a.is_empty() => "empty",
            Value::Object(o) if o.is_empty() => "empty",
            Value::String(s) if s.is_empty() || s == "0" => "0",
            // Something was done.
            _ => return None,
        };
        said.push(format!("{} {what}", arcane_markdown::code_span(field)));
    }
    if said.is_empty() {
        return None;
    }
    let chosen: Vec<String> = params
        .iter()
        .filter(|(name, _)| {
            action.param(name).is_some_and(|p| {
                use arcane_catalog::ParamLocation as L;
                matches!(
                    p.location,
                    L::Query | L::BodyProperty | L::Body | L::FormField
                )
            }) && !arcane_redact::is_secret_name(name)
        })
        .map(|(name, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            arcane_markdown::code_span(&arcane_markdown::clip(&format!("{name}: {v}"), 120))
        })
        .collect();
    let selection = if chosen.is_empty() {
        "nothing matched what the call selects by default (no parameter chose what to remove)"
            .to_string()
    } else {
        format!("nothing matched {}", chosen.join(", "))
    };
    Some(format!(
        "**{}**: {} — {selection}.",
        arcane_markdown::inline(&rule.says),
        said.join(", ")
    ))
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
    let usage = usage_lines(&out.samples);
    if !usage.is_empty() {
        text.push_str("\n\n");
        text.push_str(&usage);
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

/// The CPU and memory use of a container's stats samples (Docker's stats objects), computed as
/// the Docker CLI's `docker stats` computes them, for the latest sample (and the range over
/// the samples when there are several). Empty for frames that are not Docker's stats (the
/// host's system stats carry their own percentages).
fn usage_lines(samples: &[Value]) -> String {
    let Some(last) = samples.last() else {
        return String::new();
    };
    let mut lines = Vec::new();
    if let Some(cpu) = cpu_percent(last) {
        let cpus = online_cpus(last)
            .map(|n| format!(" of {n} CPU(s), where 100% is one whole CPU"))
            .unwrap_or_default();
        let mut line = format!("- CPU: {cpu:.2}%{cpus}");
        let all: Vec<f64> = samples.iter().filter_map(cpu_percent).collect();
        if all.len() > 1 {
            let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            line.push_str(&format!(" ({lo:.2}% to {hi:.2}% over the samples)"));
        }
        lines.push(line);
    }
    if let Some((used, limit)) = memory_use(last) {
        let mut line = format!(
            "- memory: {}",
            arcane_markdown::human_bytes(used.round() as u64)
        );
        if limit > 0.0 {
            line.push_str(&format!(
                " of {} ({:.2}%)",
                arcane_markdown::human_bytes(limit as u64),
                used / limit * 100.0
            ));
        }
        line.push_str(", page cache excluded");
        lines.push(line);
    }
    if lines.is_empty() {
        return String::new();
    }
    lines.push("(As `docker stats` computes them.)".into());
    lines.join("\n")
}

fn num_at(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(Value::as_f64)
}

/// The CPUs the percentage is relative to: `online_cpus`, or the per-CPU counters' count.
fn online_cpus(s: &Value) -> Option<u64> {
    num_at(s, "/cpu_stats/online_cpus")
        .filter(|n| *n > 0.0)
        .map(|n| n as u64)
        .or_else(|| {
            s.pointer("/cpu_stats/cpu_usage/percpu_usage")
                .and_then(Value::as_array)
                .map(|a| a.len() as u64)
                .filter(|n| *n > 0)
        })
}

/// Docker CLI's CPU %: the container's CPU time since the previous reading over the whole
/// system's, times the online CPUs, times 100; 0 when either did not grow. `None` when the
/// sample has no CPU counters.
fn cpu_percent(s: &Value) -> Option<f64> {
    let total = num_at(s, "/cpu_stats/cpu_usage/total_usage")?;
    let system = num_at(s, "/cpu_stats/system_cpu_usage")?;
    let pre_total = num_at(s, "/precpu_stats/cpu_usage/total_usage").unwrap_or(0.0);
    let pre_system = num_at(s, "/precpu_stats/system_cpu_usage").unwrap_or(0.0);
    let cpus = online_cpus(s).unwrap_or(0) as f64;
    let (cpu_delta, system_delta) = (total - pre_total, system - pre_system);
    Some(if system_delta > 0.0 && cpu_delta > 0.0 {
        cpu_delta / system_delta * cpus * 100.0
    } else {
        0.0
    })
}

/// Docker CLI's memory use and limit: the usage minus the inactive page cache
/// (`total_inactive_file` on cgroup v1, `inactive_file` on cgroup v2) when it is smaller than
/// the usage. `None` without a usage.
fn memory_use(s: &Value) -> Option<(f64, f64)> {
    let usage = num_at(s, "/memory_stats/usage")?;
    let stat = |k: &str| num_at(s, &format!("/memory_stats/stats/{k}"));
    let used = match stat("total_inactive_file").filter(|v1| *v1 < usage) {
        Some(v1) => usage - v1,
        None => {
            let v2 = stat("inactive_file").unwrap_or(0.0);
            if v2 < usage { usage - v2 } else { usage }
        }
    };
    Some((used, num_at(s, "/memory_stats/limit").unwrap_or(0.0)))
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
                arcane_redact::mask_document(&text)
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
    let done = if action.safety.mutating {
        format!(
            " {}",
            arcane_engine::unsure(&snap.scope(), action, ChangeState::Succeeded)
        )
    } else {
        String::new()
    };
    error_result(format!("{} — {cause}. {how}.{done}", action.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_use_the_docker_cli_formulas() {
        // CPU: 200 ms of 2 s on 4 CPUs = 40%; no growth is 0; no counters, no figure.
        let s = json!({
            "cpu_stats": {"cpu_usage": {"total_usage": 1_200_000_000u64}, "system_cpu_usage": 12_000_000_000u64, "online_cpus": 4},
            "precpu_stats": {"cpu_usage": {"total_usage": 1_000_000_000u64}, "system_cpu_usage": 10_000_000_000u64},
            "memory_stats": {"usage": 300_000_000u64, "limit": 1_000_000_000u64, "stats": {"inactive_file": 100_000_000u64}},
        });
        assert_eq!(cpu_percent(&s), Some(40.0));
        let mut idle = s.clone();
        idle["precpu_stats"]["cpu_usage"]["total_usage"] = json!(1_200_000_000u64);
        assert_eq!(cpu_percent(&idle), Some(0.0));
        assert_eq!(cpu_percent(&json!({"read": "x"})), None);
        // Without online_cpus, the per-CPU counters count.
        let mut per = s.clone();
        per["cpu_stats"]["online_cpus"] = json!(0);
        per["cpu_stats"]["cpu_usage"]["percpu_usage"] = json!([1, 2]);
        assert_eq!(cpu_percent(&per), Some(20.0));
        // Memory: cgroup v2 subtracts inactive_file; v1 total_inactive_file first; a cache
        // larger than the usage is not subtracted.
        assert_eq!(memory_use(&s), Some((200_000_000.0, 1_000_000_000.0)));
        let mut v1 = s.clone();
        v1["memory_stats"]["stats"] =
            json!({"total_inactive_file": 50_000_000u64, "inactive_file": 100_000_000u64});
        assert_eq!(memory_use(&v1), Some((250_000_000.0, 1_000_000_000.0)));
        let mut big = s.clone();
        big["memory_stats"]["stats"] = json!({"inactive_file": 400_000_000u64});
        assert_eq!(memory_use(&big), Some((300_000_000.0, 1_000_000_000.0)));
        let text = usage_lines(&[idle, s]);
        assert!(
            text.contains("- CPU: 40.00% of 4 CPU(s), where 100% is one whole CPU (0.00% to 40.00% over the samples)")
                && text.contains("- memory: 200.0 MB of 1.0 GB (20.00%), page cache excluded"),
            "{text}"
        );
        // System stats frames are not Docker's: nothing is computed.
        assert_eq!(
            usage_lines(&[json!({"cpuUsage": 12.5, "memoryUsage": 1})]),
            ""
        );
    }

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
