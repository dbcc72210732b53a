//! Redacted views of Docker state: secrets masked before a value becomes a resource.
//!
//! What is masked:
//! * every environment variable value: `KEY=VALUE` strings in arrays under keys such as `env`,
//!   `Env`, `environment`, and every value of a map under those keys;
//! * values of fields whose name says secret (password, secret, token, API key, credential,
//!   private key, access key, cookie, authorization…);
//! * in multi-line text under such fields or `envContent`-like fields (`.env` files), the value
//!   of each `KEY=VALUE` line; in compose text, the value of `KEY: VALUE` / `KEY=VALUE` lines
//!   whose key says secret.
//!
//! The result says which JSON Pointers were masked, so the resource can carry a note.

use serde_json::Value;

/// What replaces a masked value.
pub const MASK: &str = "********";

/// Keys whose value is a list or map of environment variables.
const ENV_KEYS: &[&str] = &[
    "env",
    "environment",
    "envvars",
    "environmentvariables",
    "envs",
];

/// Keys whose string value is a whole `.env` file.
const ENV_FILE_KEYS: &[&str] = &["envcontent", "envfile", "dotenv", "preDeployEnv"];

/// Key fragments that mark a secret (compared on the lower-cased key without `_`/`-`).
const SECRET_FRAGMENTS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authorization",
    "cookie",
    "passphrase",
    "clientsecret",
    "unlockkey",
];

/// Keys that hold whole text documents that may embed secrets (compose files).
const TEXT_DOC_KEYS: &[&str] = &["composecontent", "overridecontent", "content", "source"];

fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a field or variable name says its value is secret.
pub fn is_secret_name(key: &str) -> bool {
    let k = norm(key);
    // `tokenCount`-like or `hasPassword` booleans are masked only when their value is a string.
    SECRET_FRAGMENTS.iter().any(|f| k.contains(f)) || k == "pwd" || k == "key" || k == "auth"
}

/// Masks secrets in place; returns the JSON Pointers that were masked.
pub fn redact(value: &mut Value) -> Vec<String> {
    let mut masked = Vec::new();
    walk(value, &mut String::new(), None, &mut masked);
    masked
}

fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

fn walk(value: &mut Value, path: &mut String, key: Option<&str>, masked: &mut Vec<String>) {
    let nkey = key.map(norm).unwrap_or_default();
    if ENV_KEYS.contains(&nkey.as_str()) {
        mask_env(value, path, masked);
        return;
    }
    match value {
        Value::String(s) => {
            if key.is_some_and(|k| ENV_FILE_KEYS.iter().any(|e| norm(e) == nkey || k == *e)) {
                if let Some(new) = mask_lines(s, true) {
                    *s = new;
                    masked.push(path.clone());
                }
            } else if key.is_some_and(is_secret_name) {
                if !s.is_empty() {
                    *s = MASK.to_string();
                    masked.push(path.clone());
                }
            } else if (TEXT_DOC_KEYS.contains(&nkey.as_str()) || s.contains('\n'))
                && let Some(new) = mask_lines(s, false)
            {
                *s = new;
                masked.push(path.clone());
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, path, key, masked);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                // A secret-named field holding an object (credentials: {…}) is masked whole.
                if is_secret_name(k) && (v.is_object() || v.is_array()) && !is_empty(v) {
                    *v = Value::String(MASK.to_string());
                    masked.push(path.clone());
                } else {
                    walk(v, path, Some(k), masked);
                }
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Environment variables: every value is masked, whatever its name.
fn mask_env(value: &mut Value, path: &mut String, masked: &mut Vec<String>) {
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                if let Value::String(s) = item
                    && let Some((k, v)) = s.split_once('=')
                    && !v.is_empty()
                {
                    *s = format!("{k}={MASK}");
                    masked.push(format!("{path}/{i}"));
                } else if item.is_object() {
                    // [{name, value}] shapes.
                    if let Some(Value::String(v)) = item.get_mut("value")
                        && !v.is_empty()
                    {
                        *v = MASK.to_string();
                        masked.push(format!("{path}/{i}/value"));
                    }
                }
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if matches!(v, Value::Null) || v.as_str() == Some("") {
                    continue;
                }
                *v = Value::String(MASK.to_string());
                masked.push(format!("{path}/{}", escape_pointer(k)));
            }
        }
        Value::String(s) if !s.is_empty() => {
            if let Some(new) = mask_lines(s, true) {
                *s = new;
                masked.push(path.clone());
            }
        }
        _ => {}
    }
}

/// Masks values of `KEY=VALUE` (and, for documents, `KEY: VALUE`) lines. `all` masks every
/// `KEY=VALUE` line (a `.env` file); otherwise only lines whose key says secret.
fn mask_lines(text: &str, all: bool) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') {
            out.push_str(line);
            continue;
        }
        let item = trimmed.strip_prefix("- ").unwrap_or(trimmed);
        let sep = [item.find('='), item.find(':')].into_iter().flatten().min();
        let masked_line = sep.and_then(|at| {
            let (k, rest) = item.split_at(at);
            let k = k.trim().trim_matches(['"', '\'']);
            let v = rest[1..].trim();
            let is_env_line = rest.starts_with('=');
            let secret = is_secret_name(k);
            let wanted = (all && is_env_line) || secret;
            if !wanted || v.is_empty() || v == "|" || v == ">" || k.is_empty() || k.contains(' ') {
                return None;
            }
            let prefix_len = line.len() - item.len() + at + 1;
            let cr = if line.ends_with('\r') { "\r" } else { "" };
            let space = if rest.starts_with(": ") { " " } else { "" };
            Some(format!("{}{space}{MASK}{cr}", &line[..prefix_len]))
        });
        match masked_line {
            Some(l) => {
                changed = true;
                out.push_str(&l);
            }
            None => out.push_str(line),
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_env_and_secret_fields() {
        let mut v = json!({
            "id": "abc",
            "config": {"env": ["POSTGRES_PASSWORD=s3cr3t", "PATH=/usr/bin", "EMPTY="]},
            "registry": {"username": "bob", "password": "hunter2", "passwordSet": true},
            "labels": {"app": "web"},
            "envContent": "A=1\n# comment\nDATABASE_URL=postgres://u:p@h/db\n",
            "composeContent": "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: s3cr3t\n      POSTGRES_USER: app\n",
            "environment": {"TOKEN": "t", "MODE": "prod"},
        });
        let masked = redact(&mut v);
        let text = v.to_string();
        for secret in [
            "s3cr3t",
            "hunter2",
            "postgres://u:p@h/db",
            "\"t\"",
            "prod",
            "/usr/bin",
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(v["config"]["env"][2], "EMPTY=");
        assert_eq!(v["registry"]["username"], "bob");
        assert_eq!(v["registry"]["passwordSet"], true);
        assert_eq!(v["labels"]["app"], "web");
        assert!(
            v["composeContent"]
                .as_str()
                .unwrap()
                .contains("POSTGRES_USER: app")
        );
        assert!(v["envContent"].as_str().unwrap().contains("# comment"));
        assert!(masked.contains(&"/config/env/0".to_string()));
        assert!(masked.contains(&"/registry/password".to_string()));
    }

    #[test]
    fn ordinary_values_are_untouched() {
        let mut v = json!({"name": "web-1", "image": "nginx:1.27", "status": "Up 2 hours", "ports": [{"privatePort": 80}]});
        let before = v.clone();
        assert!(redact(&mut v).is_empty());
        assert_eq!(v, before);
    }
}
