//! The OAuth users file (`--oauth-users`): which Arcane key, and what narrowing, an access
//! token's holder gets. Validated by `schemas/oauth-users.schema.json` (errors name file and
//! line), read again when it changes; a broken edit keeps the rules that were serving.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Map, Value};

const SCHEMA: &str = include_str!("../../schemas/oauth-users.schema.json");

/// Largest users file read (a file of rules, not a database).
const MAX_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    users: Vec<RuleText>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleText {
    #[serde(rename = "match")]
    matches: Map<String, Value>,
    arcane_key_file: Option<PathBuf>,
    arcane_key_env: Option<String>,
    preset: Option<String>,
    tools: Option<Vec<String>>,
}

/// One rule of the file, its key read.
pub struct Rule {
    /// Its place in the file (0-based), and the line it starts at.
    pub index: usize,
    pub line: usize,
    matches: Vec<(String, String)>,
    /// The Arcane API key its callers' calls run with.
    pub key: String,
    pub preset: Option<String>,
    pub tools: Vec<String>,
}

impl Rule {
    /// Whether a token's claims satisfy every entry: a string claim equal to the value, an
    /// array claim holding it as one of its strings. Other claim types never match.
    fn matches(&self, claims: &Map<String, Value>) -> bool {
        self.matches
            .iter()
            .all(|(name, want)| match claims.get(name) {
                Some(Value::String(s)) => s == want,
                Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(want)),
                _ => false,
            })
    }

    /// What its `match` says, for logs (claim values are not secrets).
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .matches
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!(
            "rule {} (line {}: {{{}}})",
            self.index + 1,
            self.line,
            parts.join(", ")
        )
    }
}

/// Parses a users file's text; `origin` names it in errors (`FILE:LINE: …`). `env` reads an
/// environment variable (the process's, or a test's).
pub fn parse(
    text: &str,
    origin: &str,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Vec<Rule>> {
    let (file, lines): (File, _) =
        arcane_catalog::parse_checked_file(text, origin, SCHEMA, "docs/oauth.md")?;
    let mut rules = Vec::with_capacity(file.users.len());
    let mut errors = Vec::new();
    for (index, r) in file.users.into_iter().enumerate() {
        let line = lines.line_of(&["users".to_string(), index.to_string()]);
        let key = match (&r.arcane_key_file, &r.arcane_key_env) {
            (Some(path), _) => {
                let path = if path.is_absolute() {
                    path.clone()
                } else {
                    base.join(path)
                };
                match std::fs::read_to_string(&path) {
                    Ok(k) => Ok(k.trim().to_string()),
                    Err(e) => Err(format!(
                        "{origin}:{line}: cannot read arcaneKeyFile {:?}: {e} — put the user's \
                         Arcane API key in that file",
                        path.display().to_string()
                    )),
                }
            }
            (None, Some(name)) => env(name).map(|k| k.trim().to_string()).ok_or_else(|| {
                format!(
                    "{origin}:{line}: arcaneKeyEnv {name} is not set — set it to the user's \
                     Arcane API key"
                )
            }),
            (None, None) => Err(format!(
                "{origin}:{line}: a rule needs arcaneKeyFile or arcaneKeyEnv"
            )),
        };
        // A blank preset or allow-list entry would read as no narrowing at all: a typo must
        // not serve more.
        let blank = r.preset.as_deref().is_some_and(|p| p.trim().is_empty())
            || r.tools.iter().flatten().any(|t| t.trim().is_empty());
        match key {
            _ if blank => errors.push(format!(
                "{origin}:{line}: a blank preset or tools entry — name a preset of the overlays \
                 and action IDs, tool names or domains, or leave the field out"
            )),
            Ok(k) if k.is_empty() => errors.push(format!(
                "{origin}:{line}: the Arcane API key of this rule is empty — put the user's key \
                 there (an empty key never means the server's own)"
            )),
            Ok(key) => rules.push(Rule {
                index,
                line,
                matches: r
                    .matches
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                    .collect(),
                key,
                preset: r.preset,
                tools: r.tools.unwrap_or_default(),
            }),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!(errors.join("\n"));
    }
    Ok(rules)
}

/// The users file as last read, read again when its modification time or size changes.
pub struct Users {
    path: PathBuf,
    state: Mutex<Loaded>,
}

struct Loaded {
    stamp: Option<(SystemTime, u64)>,
    rules: Arc<Vec<Rule>>,
    /// The rules' keys, masked by value wherever text leaves the server while they serve.
    _holds: Vec<arcane_redact::SecretHold>,
}

fn holds(rules: &[Rule]) -> Vec<arcane_redact::SecretHold> {
    rules
        .iter()
        .map(|r| arcane_redact::hold_secret(&r.key))
        .collect()
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

fn read(path: &Path) -> anyhow::Result<Vec<Rule>> {
    use anyhow::Context;
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading the OAuth users file {}", path.display()))?
        .len();
    if len > MAX_BYTES {
        anyhow::bail!(
            "{}: the OAuth users file is {len} bytes, more than {MAX_BYTES}: it holds rules, \
             keep it short",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the OAuth users file {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, &path.display().to_string(), base, &|n| {
        std::env::var(n).ok()
    })
}

impl Users {
    /// Reads the file; an error (at startup) names file and line.
    pub fn load(path: &Path) -> anyhow::Result<Users> {
        let rules = read(path)?;
        Ok(Users {
            path: path.to_path_buf(),
            state: Mutex::new(Loaded {
                stamp: stamp(path),
                _holds: holds(&rules),
                rules: Arc::new(rules),
            }),
        })
    }

    /// The rules now: read again when the file changed since; a file that no longer reads or
    /// validates is logged and the rules that were serving go on.
    pub fn current(&self) -> Arc<Vec<Rule>> {
        let now = stamp(&self.path);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if now != state.stamp {
            state.stamp = now;
            match read(&self.path) {
                Ok(rules) => {
                    state._holds = holds(&rules);
                    tracing::info!(
                        file = %self.path.display(),
                        rules = rules.len(),
                        "OAuth users file reloaded"
                    );
                    state.rules = Arc::new(rules);
                }
                Err(e) => tracing::warn!(
                    "the OAuth users file did not reload; the previous rules keep serving: {e:#}"
                ),
            }
        }
        state.rules.clone()
    }

    /// The first rule the claims satisfy.
    pub fn find(&self, claims: &Map<String, Value>) -> Option<(Arc<Vec<Rule>>, usize)> {
        let rules = self.current();
        let at = rules.iter().position(|r| r.matches(claims))?;
        Some((rules, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        (name == "OPS_KEY").then(|| "ops-key".to_string())
    }

    #[test]
    fn first_matching_rule_wins_and_arrays_contain() {
        let text = "users:\n  - match: {sub: alice}\n    arcaneKeyEnv: OPS_KEY\n    preset: deploy\n  - match: {groups: ops}\n    arcaneKeyEnv: OPS_KEY\n    tools: [container.list]\n";
        let rules = parse(text, "users.yaml", Path::new("."), &env).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!((rules[0].line, rules[1].line), (2, 5));
        let claims = |v: Value| v.as_object().unwrap().clone();
        let first = |c: &Map<String, Value>| rules.iter().position(|r| r.matches(c));
        assert_eq!(
            first(&claims(json!({"sub": "alice", "groups": ["ops"]}))),
            Some(0)
        );
        assert_eq!(
            first(&claims(json!({"sub": "bob", "groups": ["dev", "ops"]}))),
            Some(1)
        );
        assert_eq!(
            first(&claims(json!({"sub": "bob", "groups": "ops"}))),
            Some(1)
        );
        assert_eq!(
            first(&claims(json!({"sub": "bob", "groups": ["dev"]}))),
            None
        );
        assert_eq!(first(&claims(json!({"sub": ["alice"]}))), Some(0));
        assert_eq!(
            first(&claims(json!({"sub": 7}))),
            None,
            "a number never matches"
        );
        assert_eq!(rules[0].preset.as_deref(), Some("deploy"));
        assert_eq!(rules[1].tools, vec!["container.list".to_string()]);
    }

    /// Every line of an error names the file and the line, whatever the text (found by
    /// fuzzing the oauth target: a YAML error with a blank line in it; the input is in
    /// tests/fixtures/fuzz-regressions/oauth).
    #[test]
    fn every_error_line_names_file_and_line() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fuzz-regressions/oauth"
        );
        let mut n = 0;
        for entry in std::fs::read_dir(dir).expect("the regression inputs") {
            let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("text");
            let Err(e) = parse(&text, "users.yaml", Path::new("/nonexistent"), &env) else {
                continue;
            };
            for line in e.to_string().lines() {
                let rest = line.strip_prefix("users.yaml:");
                assert!(
                    rest.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit())),
                    "{line:?} in {e:#}"
                );
            }
            n += 1;
        }
        assert!(n >= 2, "the inputs were not read");
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = |text: &str| match parse(text, "users.yaml", Path::new("."), &env) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        };
        let e = err("users:\n  - match: {sub: a}\n    arcaneKeyEnv: OPS_KEY\n    colour: red\n");
        assert!(e.contains("users.yaml:4:") && e.contains("colour"), "{e}");
        let e = err("users:\n  - match: {sub: a}\n");
        assert!(e.starts_with("users.yaml:2:"), "{e}");
        let e = err("users:\n  - match: {sub: a}\n    arcaneKeyEnv: MISSING\n");
        assert!(
            e.contains("users.yaml:2:") && e.contains("MISSING is not set"),
            "{e}"
        );
        let e = err("users:\n  - match: {}\n    arcaneKeyEnv: OPS_KEY\n");
        assert!(e.contains("users.yaml:2:"), "{e}");
        // A blank narrowing would serve everything: refused.
        for blank in [
            "preset: \" \"",
            "tools: [\" \"]",
            "tools: [container.list, \"\\t\"]",
        ] {
            let e = err(&format!(
                "users:\n  - match: {{sub: a}}\n    arcaneKeyEnv: OPS_KEY\n    {blank}\n"
            ));
            assert!(
                e.contains("users.yaml:2:") && e.contains("blank"),
                "{blank}: {e}"
            );
        }
        let e = err("users:\n  - match: {sub: a}\n    arcaneKeyFile: /nonexistent/key\n");
        assert!(
            e.contains("cannot read arcaneKeyFile \"/nonexistent/key\""),
            "{e}"
        );
        let e =
            err("users:\n  - match: {sub: a}\n    match: {sub: b}\n    arcaneKeyEnv: OPS_KEY\n");
        assert!(e.contains("users.yaml:3:"), "a duplicate key: {e}");
    }
}
