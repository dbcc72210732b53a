//! Prompts as data: the overlay's `prompts:` entries merged across layers, their templates
//! parsed once at load, and the checked rendering of one prompt with a client's arguments.
//!
//! A template is text with two kinds of placeholder: `{{domain.action}}` (an action ID, with a
//! dot) is spelled as the calling surface names the action, and `{{name}}` (no dot) is one of
//! the prompt's arguments. The template is split into parts when the catalog is built, and a
//! rendering walks those parts once: a client's value is inserted through the caller's quoting
//! (the server's code span) and never scanned again, so no value can add a placeholder, a line
//! or Markdown structure. The layers are merged into prompts by `prompt_layers.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest argument value a client may send (characters): names and IDs fit many times over.
pub const MAX_ARGUMENT_CHARS: usize = 200;

/// One prompt entry of an overlay file; a later file's entry for the same name replaces the
/// fields it sets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptOverlay {
    pub title: Option<String>,
    pub description: Option<String>,
    /// A later file's list replaces an earlier one.
    pub arguments: Option<Vec<PromptArgument>>,
    pub template: Option<String>,
    /// Withdraw the prompt (a built-in one an operator does not want offered); the value is why.
    pub exclude: Option<String>,
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptArgument {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub required: bool,
    /// Where `completion/complete` finds values for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<CompletionSource>,
    /// The text that stands for an optional argument the client left out (plain text, no
    /// placeholders); empty when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_absent: Option<String>,
}

/// What a prompt argument's values are: the names of one kind of Arcane object, read through
/// the same list actions as the resolvers' lookups (`overrides/resolvers.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CompletionSource {
    Environments,
    Projects,
    Containers,
    Images,
    Volumes,
    SwarmServices,
}

impl CompletionSource {
    /// The parameter whose values these are (`projectId`): its resolver, when there is one,
    /// says which list action and fields give them.
    pub fn param(self) -> &'static str {
        match self {
            CompletionSource::Environments => "environmentId",
            CompletionSource::Projects => "projectId",
            CompletionSource::Containers => "containerId",
            CompletionSource::Images => "imageId",
            CompletionSource::Volumes => "volumeName",
            CompletionSource::SwarmServices => "serviceId",
        }
    }

    /// The overlay's spelling (`swarmServices`).
    pub fn as_str(self) -> &'static str {
        match self {
            CompletionSource::Environments => "environments",
            CompletionSource::Projects => "projects",
            CompletionSource::Containers => "containers",
            CompletionSource::Images => "images",
            CompletionSource::Volumes => "volumes",
            CompletionSource::SwarmServices => "swarmServices",
        }
    }
}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Part {
    Text(String),
    Argument(String),
    Action(String),
}

/// A prompt of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    pub name: String,
    pub title: String,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
    pub parts: Vec<Part>,
    /// `FILE:LINE` of the entry that set its template.
    pub origin: String,
}

/// Why a client's arguments do not fit a prompt; each message says what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    #[error("argument `{name}` is required: {description}")]
    Missing { name: String, description: String },
    #[error("prompt `{prompt}` has no argument {given}; its arguments are: {known}")]
    Unknown {
        prompt: String,
        given: String,
        known: String,
    },
    #[error(
        "argument `{name}` is {len} characters long, over the limit of {max}: send a name or an ID"
    )]
    TooLong {
        name: String,
        len: usize,
        max: usize,
    },
    #[error("argument `{name}` must be text (a string), not {kind}")]
    NotText { name: String, kind: &'static str },
    #[error(
        "argument `{name}` holds a control character (a line break, a tab…): send the name on one line"
    )]
    Control { name: String },
}

impl Prompt {
    /// The action IDs the template names, in order of first mention.
    pub fn actions(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.parts {
            if let Part::Action(id) = p
                && !out.contains(&id.as_str())
            {
                out.push(id);
            }
        }
        out
    }

    /// The client's arguments, checked: every required one given, none unknown, each a string
    /// of at most [`MAX_ARGUMENT_CHARS`] on one line. An empty string counts as not given.
    pub fn check_arguments(
        &self,
        given: Option<&serde_json::Map<String, Value>>,
    ) -> Result<BTreeMap<String, String>, ArgumentError> {
        let mut out = BTreeMap::new();
        for (name, value) in given.into_iter().flatten() {
            let Some(arg) = self.arguments.iter().find(|a| &a.name == name) else {
                let known = if self.arguments.is_empty() {
                    "(none)".to_string()
                } else {
                    self.arguments
                        .iter()
                        .map(|a| format!("`{}`", a.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(ArgumentError::Unknown {
                    prompt: self.name.clone(),
                    given: shown(name),
                    known,
                });
            };
            let text = match value {
                Value::String(s) => s,
                Value::Null => continue,
                other => {
                    return Err(ArgumentError::NotText {
                        name: arg.name.clone(),
                        kind: kind_of(other),
                    });
                }
            };
            let len = text.chars().count();
            if len > MAX_ARGUMENT_CHARS {
                return Err(ArgumentError::TooLong {
                    name: arg.name.clone(),
                    len,
                    max: MAX_ARGUMENT_CHARS,
                });
            }
            if text.chars().any(char::is_control) {
                return Err(ArgumentError::Control {
                    name: arg.name.clone(),
                });
            }
            if !text.trim().is_empty() {
                out.insert(arg.name.clone(), text.trim().to_string());
            }
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|a| a.required && !out.contains_key(&a.name))
        {
            return Err(ArgumentError::Missing {
                name: missing.name.clone(),
                description: missing.description.clone(),
            });
        }
        Ok(out)
    }

    /// The prompt's text: each action placeholder replaced by `name(id)`, each argument by
    /// `quote(value)` (the server's code span), or by its `whenAbsent` text. `args` come from
    /// [`Prompt::check_arguments`]; no value is read as template.
    pub fn render(
        &self,
        args: &BTreeMap<String, String>,
        name: &dyn Fn(&str) -> String,
        quote: &dyn Fn(&str) -> String,
    ) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Action(id) => out.push_str(&name(id)),
                Part::Argument(a) => match args.get(a) {
                    Some(v) => out.push_str(&quote(v)),
                    None => {
                        let absent = self
                            .arguments
                            .iter()
                            .find(|x| &x.name == a)
                            .and_then(|x| x.when_absent.as_deref())
                            .unwrap_or("");
                        out.push_str(absent);
                    }
                },
            }
        }
        out
    }
}

/// A name from a file or a client in a message: escaped, clipped, quoted.
fn shown(s: &str) -> String {
    let clipped: String = s.chars().take(60).collect();
    format!("{clipped:?}")
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Splits a template into parts; an error says what is wrong in it.
pub fn parse_template(template: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            parts.push(Part::Text(rest[..start].to_string()));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!(
                "`{{{{` without a closing `}}}}` near {}",
                shown(&after.chars().take(30).collect::<String>())
            ));
        };
        let inner = after[..end].trim();
        let ok_chars = |s: &str, dot: bool| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || (dot && c == '.'))
        };
        if inner.contains('.') {
            if !ok_chars(inner, true) || inner.starts_with('.') || inner.ends_with('.') {
                return Err(format!(
                    "{} is not an action ID (`domain.action`)",
                    shown(inner)
                ));
            }
            parts.push(Part::Action(inner.to_string()));
        } else {
            if !ok_chars(inner, false) {
                return Err(format!(
                    "{} is not an argument name (letters, digits, `_`) or an action ID (`domain.action`)",
                    shown(inner)
                ));
            }
            parts.push(Part::Argument(inner.to_string()));
        }
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(template: &str, arguments: Vec<PromptArgument>) -> Prompt {
        Prompt {
            name: "p".into(),
            title: "P".into(),
            description: "d".into(),
            arguments,
            parts: parse_template(template).unwrap(),
            origin: "x:1".into(),
        }
    }

    fn arg(name: &str, required: bool) -> PromptArgument {
        PromptArgument {
            name: name.into(),
            description: format!("the {name}"),
            required,
            complete: None,
            when_absent: Some("every one".into()),
        }
    }

    #[test]
    fn templates_split_into_text_arguments_and_actions() {
        let parts = parse_template("Read {{ container.logs }} of {{name}}.").unwrap();
        assert_eq!(
            parts,
            vec![
                Part::Text("Read ".into()),
                Part::Action("container.logs".into()),
                Part::Text(" of ".into()),
                Part::Argument("name".into()),
                Part::Text(".".into()),
            ]
        );
        assert!(parse_template("a {{b").unwrap_err().contains("closing"));
        assert!(
            parse_template("{{a b}}")
                .unwrap_err()
                .contains("not an argument")
        );
        assert!(
            parse_template("{{.x}}")
                .unwrap_err()
                .contains("not an action")
        );
    }

    #[test]
    fn a_value_is_data_never_template() {
        let p = prompt(
            "Look at {{c}} with {{container.get}}.",
            vec![arg("c", true)],
        );
        let args = p
            .check_arguments(Some(
                serde_json::json!({"c": "{{container.delete}} `x` **b**"})
                    .as_object()
                    .unwrap(),
            ))
            .unwrap();
        let text = p.render(&args, &|id| format!("<{id}>"), &|v| format!("[{v}]"));
        assert!(text.contains("<container.get>"), "{text}");
        assert!(!text.contains("<container.delete>"), "{text}");
        assert!(text.contains("[{{container.delete}} `x` **b**]"), "{text}");
    }

    #[test]
    fn arguments_are_checked() {
        let p = prompt("{{a}} {{b}}", vec![arg("a", true), arg("b", false)]);
        let check = |v: serde_json::Value| p.check_arguments(v.as_object());
        assert!(matches!(
            check(serde_json::json!({"b": "x"})),
            Err(ArgumentError::Missing { .. })
        ));
        assert!(matches!(
            check(serde_json::json!({"a": ""})),
            Err(ArgumentError::Missing { .. })
        ));
        let e = check(serde_json::json!({"a": "x", "zz": "y"})).unwrap_err();
        assert!(e.to_string().contains("`a`, `b`"), "{e}");
        assert!(e.to_string().contains("\"zz\""), "{e}");
        assert!(matches!(
            check(serde_json::json!({"a": "x".repeat(MAX_ARGUMENT_CHARS + 1)})),
            Err(ArgumentError::TooLong { .. })
        ));
        assert!(matches!(
            check(serde_json::json!({"a": "x\ny"})),
            Err(ArgumentError::Control { .. })
        ));
        assert!(matches!(
            check(serde_json::json!({"a": 3})),
            Err(ArgumentError::NotText { .. })
        ));
        let ok = check(serde_json::json!({"a": " web "})).unwrap();
        assert_eq!(
            p.render(&ok, &|id| id.to_string(), &|v| format!("`{v}`")),
            "`web` every one"
        );
    }
}
