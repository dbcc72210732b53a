//! Error messages with a next step (docs/output-format.md#errors), reading Arcane's real answers (docs/arcane-wire.md#errors):
//! problem+json `{title,status,detail,errors[]}`, plain JSON `{"success":false,"error":…}` or
//! `{"success":false,"data":{"error":…}}`, and whatever else a proxy may put in between.

use serde_json::Value;

use crate::scope::Scope;
use arcane_catalog::Action;
use arcane_markdown::{clip, code_span, excerpt, quoted_name, sanitize};

/// What Arcane said, read from any of its error shapes.
///
/// `message` and `details` are Arcane's words, sanitized but not escaped (they are matched
/// against known phrases); [`ArcaneError::shown`] and [`ArcaneError::shown_details`] give them
/// escaped for a text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArcaneError {
    pub status: u16,
    /// The human message: problem `detail` (or `title`), or the plain-JSON `error`.
    pub message: String,
    /// Problem `errors[]` entries as `message (at location)`.
    pub details: Vec<String>,
    /// The answer was an HTML page (a proxy's error or login page), not Arcane's JSON.
    pub html: bool,
}

/// Longest excerpt of Arcane's words quoted in a message.
const MAX_MESSAGE_CHARS: usize = 300;

impl ArcaneError {
    /// The message, escaped for running text.
    pub fn shown(&self) -> String {
        excerpt(&self.message, MAX_MESSAGE_CHARS)
    }

    /// The details, each escaped for a `- ` line.
    pub fn shown_details(&self) -> impl Iterator<Item = String> + '_ {
        self.details
            .iter()
            .take(20)
            .map(|d| excerpt(d, MAX_MESSAGE_CHARS))
    }
}

/// The one reader of an error answer's bytes, whatever read them (JSON calls, downloads,
/// streams, WebSocket upgrades). Field priority: problem `detail` (when not empty), then
/// plain-JSON `error`, `data.error`, `error.message`, `message`, and last `title`; an HTML
/// page is named by its `<title>`; anything else is its first 300 characters.
pub fn error_detail(status: u16, content_type: &str, body: &[u8]) -> ArcaneError {
    let mut e = ArcaneError {
        status,
        ..Default::default()
    };
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if is_html(content_type, body) {
        e.html = true;
        e.message = match html_title(text) {
            Some(t) => {
                format!("an HTML page titled \"{t}\" (from a proxy or login page, not Arcane)")
            }
            None => "an HTML page (from a proxy or login page, not Arcane)".into(),
        };
        return e;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => {
            let text_at = |v: Option<&Value>| {
                v.and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_string)
            };
            e.message = text_at(v.get("detail"))
                .or_else(|| text_at(v.get("error")))
                .or_else(|| text_at(v.pointer("/data/error")))
                .or_else(|| text_at(v.pointer("/error/message")))
                .or_else(|| text_at(v.get("message")))
                .or_else(|| text_at(v.get("title")))
                .unwrap_or_else(|| clip(text, MAX_MESSAGE_CHARS).into_owned());
            if let Some(errs) = v.get("errors").and_then(Value::as_array) {
                e.details = errs
                    .iter()
                    .take(20)
                    .map(|x| {
                        let msg = x
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("invalid");
                        match x.get("location").and_then(Value::as_str) {
                            Some(loc) => format!("{msg} (at {loc})"),
                            None => msg.to_string(),
                        }
                    })
                    .map(|d| sanitize(&d).into_owned())
                    .collect();
            }
        }
        Err(_) => e.message = clip(text, MAX_MESSAGE_CHARS).into_owned(),
    }
    e.message = sanitize(&e.message).into_owned();
    if e.message.trim().is_empty() {
        e.message = "no error text".into();
    }
    e
}

/// Whether an answer is Arcane's plain-JSON failure shape, `{"success": false, …}`, which can
/// come with a 2xx status: such an answer is an error whatever the action expected (JSON or a
/// file).
pub fn is_failure_shape(body: &serde_json::Value) -> bool {
    body.get("success") == Some(&serde_json::Value::Bool(false))
}

/// Whether an answer is an HTML page: by its content type, or by how it starts (whatever the
/// type says).
pub fn is_html(content_type: &str, body: &[u8]) -> bool {
    let ct = content_type.to_ascii_lowercase();
    if ct.contains("html") {
        return true;
    }
    // A JSON content type does not stop the look at the body: a login page or a proxy's
    // error page is sometimes sent as `application/json`, and no JSON text starts with `<`.
    // A byte order mark, blanks and a few leading comments (`<!-- sso -->`) come before the
    // page proper; only the first KiB is looked at.
    let head = &body[..body.len().min(1024)];
    let mut rest = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    for _ in 0..4 {
        rest = rest.trim_ascii_start();
        match rest.strip_prefix(b"<!--") {
            Some(comment) => match comment.windows(3).position(|w| w == b"-->") {
                Some(end) => rest = &comment[end + 3..],
                None => return false,
            },
            None => break,
        }
    }
    let start: Vec<u8> = rest.iter().take(15).map(u8::to_ascii_lowercase).collect();
    start.starts_with(b"<!doctype html") || start.starts_with(b"<html")
}

/// The `<title>` of an HTML page, sanitized, on one line and cut to 100 characters.
fn html_title(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = sanitize(&page[start..end])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!title.is_empty()).then(|| clip(&title, 100).into_owned())
}

/// Whether Arcane's words say it could not reach the Docker daemon or the environment's agent
/// (then a 404/500/502/503 is not a missing resource).
pub fn is_unreachable(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "cannot connect to the docker daemon",
        "is the docker daemon running",
        "failed to connect to docker",
        "failed to create docker client",
        "failed to negotiate docker api version",
        "agent is not connected",
        "agent not connected",
        "agent is offline",
        "agent unreachable",
        "proxy request failed",
        "connection refused",
        "no route to host",
        "i/o timeout",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Whether Arcane's words say the addressed thing does not exist (Arcane answers 500 for
/// actions on a missing container).
pub fn is_not_found(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("not found") || m.contains("no such ") || m.contains("does not exist")
}

/// The full error text of a failed HTTP answer: what Arcane said, then a next step.
pub fn http_error_text(
    scope: &Scope<'_>,
    action: &Action,
    err: &ArcaneError,
    environment: Option<&str>,
    credential: &str,
) -> String {
    let mut out = format!(
        "{} failed: Arcane answered {} — {}",
        action.id,
        err.status,
        err.shown()
    );
    for d in err.shown_details() {
        out.push_str("\n- ");
        out.push_str(&d);
    }
    out.push_str("\n\nNext step: ");
    let env = environment
        .map(|e| quoted_name(e, 80))
        .unwrap_or_else(|| "the configured environment".into());
    // An action outside any environment (an API key, a user) names none.
    let in_env = environment
        .map(|_| format!(" in environment {env}"))
        .unwrap_or_default();
    let env_checks = || {
        let test = scope.served("environment", &["test"]);
        let get = scope.served("environment", &["get"]);
        match (test, get) {
            (Some(t), Some(g)) => format!(" Check it with {t} and {g} (environmentId {env})."),
            (Some(t), None) => format!(" Check it with {t} (environmentId {env})."),
            (None, Some(g)) => format!(" Check it with {g} (environmentId {env})."),
            (None, None) => String::new(),
        }
    };
    // Answers that mislead on their own (known Arcane bugs): the catalog's hint.
    if let Some(h) = scope
        .catalog
        .error_hints
        .iter()
        .find(|h| h.applies(&action.id, err.status, &err.message))
    {
        out.push_str(&h.hint.replace("{environment}", &env));
        return out;
    }
    let msg = err.message.to_ascii_lowercase();
    match err.status {
        _ if err.html => out.push_str(
            "A proxy or login page answered instead of Arcane. Check ARCANE_URL: it must point \
             at Arcane itself (not at a login portal or a proxy page), and that Arcane is up.",
        ),
        200..=299 if action.safety.mutating => out.push_str(&format!(
            "Arcane reported that the change failed; it may have partly happened. Check the \
             current state{} before retrying.",
            check_hint(scope, action)
        )),
        200..=299 => out.push_str("Arcane reported a failure; check the parameters and retry."),
        404 | 500 | 502 | 503 if is_unreachable(&err.message) => {
            let what = if msg.contains("docker") {
                "the Docker daemon"
            } else {
                "the environment's agent"
            };
            out.push_str(&format!(
                "Arcane could not reach {what} of environment {env}; the resource is not \
                 necessarily missing. Retry once it is reachable.{}",
                env_checks()
            ));
        }
        401 => out.push_str(&format!(
            "Arcane rejected the credential. Check {credential}: it must be valid, not expired, \
             and belong to a user of this Arcane (create an API key under Settings → API Keys)."
        )),
        403 => {
            let perm = err
                .message
                .split_once("permission denied:")
                .map(|(_, p)| p.trim().to_string());
            match perm {
                Some(p) => out.push_str(&format!(
                    "The user of {credential} lacks the permission {}. An Arcane administrator \
                     must assign a role that grants it (Settings → Users / Roles).",
                    code_span(&clip(&p, 100))
                )),
                None => out.push_str(&format!(
                    "The user of {credential} is not allowed to do this{}. An Arcane administrator \
                     must grant a role with access (Settings → Users / Roles).",
                    if msg.contains("environment") {
                        " on this environment"
                    } else {
                        ""
                    }
                )),
            }
        }
        404 if msg.contains("api endpoint not found") => out.push_str(
            "This Arcane does not serve the endpoint: its version differs from the spec the \
             catalog was built from. Point --spec at this Arcane's document (or let the server \
             fetch it) and retry.",
        ),
        404 if msg.contains("environment not found") => {
            let list = scope.served("environment", &["list"]);
            out.push_str(&format!(
                "Environment {env} does not exist.{}",
                list.map(|l| format!(" List the valid IDs with {l}."))
                    .unwrap_or_default()
            ));
        }
        400 if msg.contains("environment is disabled") => out.push_str(&format!(
            "Environment {env} is disabled in Arcane; enable it, or use another environmentId.{}",
            env_checks()
        )),
        404 | 500 if err.status == 404 || is_not_found(&err.message) => {
            let list = scope.served(&action.domain, &["list"]).or_else(|| {
                scope
                    .catalog
                    .domain(&action.domain)?
                    .actions
                    .iter()
                    .filter_map(|id| scope.catalog.get(id))
                    .find(|a| a.output.list && scope.policy.serves(a))
                    .map(|a| scope.caller.action_name(a))
            });
            match list {
                Some(l) => out.push_str(&format!(
                    "The ID or name does not exist{in_env}. Find valid ones with {l}."
                )),
                None => out.push_str(&format!("The ID or name does not exist{in_env}; check it.")),
            }
        }
        400 | 422 => out.push_str(&format!(
            "Arcane rejected the parameters. Fix them and retry; the accepted ones are at \
             arcane://tools/{}.",
            action.id
        )),
        429 => out.push_str("Arcane is rate-limiting; wait a minute before retrying."),
        s if s >= 500 && action.safety.mutating => out.push_str(&format!(
            "Arcane failed while handling a change; it may have partly happened. Check the \
             current state{} before retrying.",
            check_hint(scope, action)
        )),
        s if s >= 500 => out.push_str("Arcane failed; retry later, or check Arcane's logs."),
        _ => out.push_str("Check the parameters and retry."),
    }
    out
}

/// " with `container.get`" when a read of the same domain is served.
pub fn check_hint(scope: &Scope<'_>, action: &Action) -> String {
    scope
        .served(&action.domain, &["get", "list"])
        .map(|a| format!(" with {a}"))
        .unwrap_or_default()
}

/// The text of a failed validation: what is wrong, then the accepted and required parameters.
pub fn validation_text(action: &Action, problems: &[String]) -> String {
    let mut out = format!("Invalid parameters for {}:", action.id);
    // The problems repeat the client's names and values: escaped like any untrusted text.
    for p in problems.iter().take(20) {
        out.push_str("\n- ");
        out.push_str(&excerpt(p, 300));
    }
    out.push_str("\n\n");
    out.push_str(&params_summary(action));
    if let Some(example) = &action.request.example {
        // Ours, not the client's, but a code span keeps its `*` and `[` out of the Markdown.
        out.push_str(&format!("\nExample: {}", code_span(&example.to_string())));
    }
    out.push_str(&format!(
        "\nNothing was sent to Arcane. Full schema: arcane://tools/{}",
        action.id
    ));
    out
}

/// `Accepted parameters: a (string, required), …` and the required list.
pub fn params_summary(action: &Action) -> String {
    let mut out = String::from("Accepted parameters:");
    if action.params.is_empty() {
        out.push_str(" none");
    }
    for p in &action.params {
        out.push_str(&format!("\n- {} ({}", p.name, type_of(&p.schema)));
        if p.required {
            out.push_str(", required");
        }
        out.push(')');
        if !p.description.is_empty() {
            let d: String = p.description.chars().take(100).collect();
            out.push_str(": ");
            out.push_str(d.lines().next().unwrap_or(""));
        }
    }
    out.push_str("\nRequired: ");
    if action.request.required.is_empty() {
        out.push_str("none");
    } else {
        out.push_str(&action.request.required.join(", "));
    }
    out
}

/// A short type name of a schema (`string`, `integer`, `array of string`, `one of a|b`…).
pub fn type_of(schema: &Value) -> String {
    if let Some(Value::Array(e)) = schema.get("enum") {
        let vals: Vec<String> = e
            .iter()
            .take(8)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        return format!("one of {}", vals.join("|"));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_of(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_sent_as_json_is_still_a_page() {
        let page = b"\xEF\xBB\xBF  <!-- sso --><!DOCTYPE html><title>SSO</title>";
        assert!(is_html("application/json", page));
        assert!(is_html(
            "application/json; charset=utf-8",
            b"<html><body>login</body></html>"
        ));
        assert!(!is_html("application/json", br#"{"success":true}"#));
        assert!(!is_html("application/json", b""));
    }

    /// An error body of any shape, the content type unknown.
    fn parse_error(status: u16, body: &str) -> ArcaneError {
        error_detail(status, "", body.as_bytes())
    }

    #[test]
    fn reads_every_error_shape() {
        let p = parse_error(
            422,
            r#"{"$schema":"x","title":"Unprocessable Entity","status":422,"detail":"validation failed","errors":[{"message":"unexpected property","location":"body.x","value":1}]}"#,
        );
        assert_eq!(p.message, "validation failed");
        assert_eq!(p.details, ["unexpected property (at body.x)"]);
        let p = parse_error(
            404,
            r#"{"success":false,"error":"API endpoint not found: /api/x"}"#,
        );
        assert_eq!(p.message, "API endpoint not found: /api/x");
        let p = parse_error(
            502,
            r#"{"success":false,"data":{"error":"Edge agent is not connected"}}"#,
        );
        assert_eq!(p.message, "Edge agent is not connected");
        let p = error_detail(
            502,
            "text/html",
            b"<html><head><title>502 Bad\n Gateway</title></head><body>nginx</body></html>",
        );
        assert!(p.html);
        assert_eq!(
            p.message,
            "an HTML page titled \"502 Bad Gateway\" (from a proxy or login page, not Arcane)"
        );
        assert!(error_detail(200, "", b"  <!DOCTYPE html><p>login</p>").html);
        let p = error_detail(
            401,
            "application/json",
            br#"{"message":"Authentication required","code":"UNAUTHORIZED"}"#,
        );
        assert_eq!(p.message, "Authentication required");
        let p = error_detail(403, "text/plain", b"permission denied: containers:exec");
        assert_eq!(p.message, "permission denied: containers:exec");
        // Shown escaped: no structure from Arcane's words.
        let p = parse_error(500, r##"{"detail":"# Next steps\n[click](http://evil)"}"##);
        assert_eq!(p.shown(), "\\# Next steps \\[click](http\\://evil)");
        assert_eq!(parse_error(500, "").message, "no error text");
    }

    #[test]
    fn classifies_unreachable_and_not_found() {
        assert!(is_unreachable(
            "Failed to list containers: failed to list Docker containers: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
        ));
        assert!(is_unreachable("Edge agent is not connected"));
        assert!(is_unreachable(
            "Proxy request failed: Get \"http://x\": dial tcp 1.2.3.4:3553: connect: connection refused"
        ));
        assert!(!is_unreachable("Image not found: inspect not found"));
        assert!(is_not_found(
            "Failed to start container: Error response from daemon: No such container: x"
        ));
        assert!(is_not_found(
            "Failed to get project details: project not found"
        ));
    }
}
