//! Walking JSON (Arcane's answers, a call's parameters): values masked by their field's name, as
//! environment variables, as `{key, value}` pairs and by the text rules; a copy made only where
//! something is masked.

use std::borrow::Cow;

use serde_json::Value;

use crate::document::mask_string;
use crate::known::MASK;
use crate::names::{KeyKind, is_secret_name, name_info_cached, words};
use crate::text::looks_like_credential;

/// Masks secrets in place in a value of `domain` (an action's domain; a domain of secrets,
/// `swarm_secret`, also has its `data` masked); returns the JSON Pointers that were masked.
pub fn redact_for(value: &mut Value, domain: &str) -> Vec<String> {
    let mut masked = Vec::new();
    let new = Walker::new(domain, Some(&mut masked)).walk(value, KeyKind::Other);
    if let Some(new) = new {
        *value = new;
    }
    masked
}

/// A redacted copy.
pub fn redacted(value: &Value, domain: &str) -> Value {
    redacted_view(value, domain).into_owned()
}

/// A redacted view of `value`: borrowed when nothing in it is secret (the common case of a
/// list page: no copy at all), otherwise a copy with the secrets masked.
pub fn redacted_view<'a>(value: &'a Value, domain: &str) -> Cow<'a, Value> {
    match Walker::new(domain, None).walk(value, KeyKind::Other) {
        Some(new) => Cow::Owned(new),
        None => Cow::Borrowed(value),
    }
}

/// The parameters of a call as the audit log and previews show them: a string that is JSON
/// text of an object or a list (the flat client profile's JSON-text parameters,
/// `project.create`'s raw `project` text, a multipart part) is read as that JSON first, so the
/// same rules see the names and texts it carries (`envContent`, compose text, `password`);
/// then everything is redacted as [`redacted`] does. A string that is not such JSON stays a
/// string, masked by the text rules.
///
/// `identifiers` names the parameters whose values say what the call addresses (its path
/// parameters, its environment, a name looked up): each is kept as given when
/// [`shown_as_given`] allows, so that the log says what was deleted even when its name looks
/// like a credential.
pub fn redacted_params(
    params: &serde_json::Map<String, Value>,
    domain: &str,
    identifiers: &[&str],
) -> Value {
    let kept = |k: &str, v: &Value| identifiers.contains(&k) && shown_as_given(k, v);
    let rest: serde_json::Map<String, Value> = params
        .iter()
        .filter(|(k, v)| !kept(k, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let value = Value::Object(rest);
    let mut masked = match decode_json_text(&value, 0) {
        Some(decoded) => redacted(&decoded, domain),
        None => redacted(&value, domain),
    };
    let Value::Object(masked) = &mut masked else {
        return masked;
    };
    // Back in the caller's order.
    Value::Object(
        params
            .iter()
            .map(|(k, v)| match masked.remove(k) {
                Some(m) => (k.clone(), m),
                None => (k.clone(), v.clone()),
            })
            .collect(),
    )
}

/// Whether the value of a parameter that names what a call addresses (a path parameter such
/// as `volumeName`, the environment, a name looked up) is shown and recorded as given rather
/// than masked: it is an identifier — the object the person approves deleting, the line of the
/// audit log that says what was deleted — even when it looks like a credential
/// (`sk-proj-…`, `AKIA…`, `token=prod-data`). Not when the parameter's own name says secret
/// ([`is_secret_name`]: a path parameter named `token` carries one), and only a scalar: an
/// object or a list in such a place is no identifier and is masked as any value is. The one
/// rule of the question, the safe-mode preview and the audit log
/// (docs/security.md#what-is-masked-and-what-is-not).
pub fn shown_as_given(name: &str, value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) && !is_secret_name(name)
}

/// How deep JSON text inside JSON text is read (a parameter of JSON text whose field is JSON
/// text again); deeper text is left to the text rules.
const MAX_JSON_TEXT_DEPTH: usize = 4;

/// `value` with its strings of JSON text (of objects and lists) decoded; `None` when it holds
/// none.
fn decode_json_text(value: &Value, depth: usize) -> Option<Value> {
    match value {
        Value::String(s) if depth < MAX_JSON_TEXT_DEPTH => {
            let t = s.trim_start();
            if !t.starts_with(['{', '[']) {
                return None;
            }
            match serde_json::from_str::<Value>(t) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => {
                    Some(decode_json_text(&v, depth + 1).unwrap_or(v))
                }
                _ => None,
            }
        }
        Value::Array(items) => {
            let mut out: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                let new = decode_json_text(item, depth);
                keep_or_replace(&mut out, items.iter(), i, item, new);
            }
            out.map(Value::Array)
        }
        Value::Object(map) => {
            let mut out: Option<Vec<Value>> = None;
            for (i, v) in map.values().enumerate() {
                let new = decode_json_text(v, depth);
                keep_or_replace(&mut out, map.values(), i, v, new);
            }
            out.map(|values| Value::Object(map.keys().cloned().zip(values).collect()))
        }
        _ => None,
    }
}

/// One walk over a value, read-only: a node that holds a secret comes back as its masked copy
/// (and its parents as copies around it); a node without one comes back as `None`, so that an
/// answer without secrets is never copied.
struct Walker<'m> {
    secret_domain: bool,
    /// The pointers of masked values, when the caller wants them (resources say what was
    /// masked); `path` is the pointer of the node being walked, kept only then.
    masked: Option<&'m mut Vec<String>>,
    path: String,
}

impl<'m> Walker<'m> {
    fn new(domain: &str, masked: Option<&'m mut Vec<String>>) -> Self {
        Walker {
            secret_domain: words(domain)
                .iter()
                .any(|w| w == "secret" || w == "secrets"),
            masked,
            path: String::new(),
        }
    }

    /// Records the pointer of the node being walked as masked.
    fn note(&mut self) {
        if let Some(masked) = &mut self.masked {
            masked.push(self.path.clone());
        }
    }

    /// Enters a child for the pointer; returns the length to come back to.
    fn enter(&mut self, seg: Seg<'_>) -> usize {
        let len = self.path.len();
        if self.masked.is_some() {
            self.path.push('/');
            match seg {
                Seg::Index(i) => self.path.push_str(&i.to_string()),
                Seg::Key(k) => self.path.push_str(&escape_pointer(k)),
            }
        }
        len
    }

    fn leave(&mut self, len: usize) {
        self.path.truncate(len);
    }

    /// `kind`: what the name of the field holding `value` says of it.
    fn walk(&mut self, value: &Value, kind: KeyKind) -> Option<Value> {
        if kind == KeyKind::Env {
            return self.mask_env(value);
        }
        match value {
            Value::String(s) => {
                let doc = kind == KeyKind::TextDoc || s.contains('\n');
                let new = mask_string(s, doc)?;
                self.note();
                Some(Value::String(new))
            }
            Value::Array(items) => {
                let mut out: Option<Vec<Value>> = None;
                let mut hide_next = false;
                for (i, item) in items.iter().enumerate() {
                    let len = self.enter(Seg::Index(i));
                    // `["--token", "xyz"]`: the item after a secret-named flag is its value.
                    let flag = item.as_str().is_some_and(|s| {
                        s.starts_with('-') && !s.contains('=') && is_secret_name(s)
                    });
                    let new = if hide_next && !flag && item.as_str().is_some_and(|s| !s.is_empty())
                    {
                        self.note();
                        Some(Value::String(MASK.to_string()))
                    } else {
                        self.walk(item, kind)
                    };
                    hide_next = flag;
                    self.leave(len);
                    keep_or_replace(&mut out, items.iter(), i, item, new);
                }
                out.map(Value::Array)
            }
            Value::Object(map) => {
                // `{key|name, value}` pairs (variables, labels as lists): the pair's name decides.
                let Pair {
                    name: pair_field,
                    value: value_field,
                } = pair_fields(map);
                let is_pair = value_field.is_some() && pair_field.is_some();
                let pair_secret = is_pair
                    && (pair_field
                        .and_then(|f| map.get(f))
                        .and_then(Value::as_str)
                        .is_some_and(is_secret_name)
                        || marked_secret(map));
                let mut out: Option<Vec<Value>> = None;
                for (i, (k, v)) in map.iter().enumerate() {
                    let len = self.enter(Seg::Key(k));
                    let info = name_info_cached(k);
                    let secret = if is_pair && Some(k.as_str()) == pair_field {
                        // A pair's name is not a secret, whatever it says (`key: API_TOKEN`).
                        false
                    } else if is_pair && Some(k.as_str()) == value_field {
                        pair_secret
                    } else {
                        info.secret || (self.secret_domain && k.eq_ignore_ascii_case("data"))
                    };
                    let new = if secret && worth_hiding(v) {
                        self.note();
                        Some(Value::String(MASK.to_string()))
                    } else {
                        self.walk(v, info.kind)
                    };
                    self.leave(len);
                    keep_or_replace(&mut out, map.values(), i, v, new);
                }
                out.map(|values| Value::Object(map.keys().cloned().zip(values).collect()))
            }
            _ => None,
        }
    }

    /// Environment variables: a value is masked when its variable's name says secret or the
    /// value looks like a credential; other values are kept, with the text rules applied to
    /// them (a URL's password, a token inside).
    fn mask_env(&mut self, value: &Value) -> Option<Value> {
        match value {
            Value::Array(items) => {
                let mut out: Option<Vec<Value>> = None;
                for (i, item) in items.iter().enumerate() {
                    let len = self.enter(Seg::Index(i));
                    let new = match item {
                        Value::String(s) => match s.split_once('=') {
                            Some((k, v)) => variable_text(k, v).map(|v| {
                                self.note();
                                Value::String(format!("{k}={v}"))
                            }),
                            None => None,
                        },
                        // [{name, value}] shapes.
                        Value::Object(o) => self.env_pair(o).or_else(|| {
                            // Not a pair: judged as any object.
                            (!is_pair(o))
                                .then(|| self.walk(item, KeyKind::Other))
                                .flatten()
                        }),
                        _ => None,
                    };
                    self.leave(len);
                    keep_or_replace(&mut out, items.iter(), i, item, new);
                }
                out.map(Value::Array)
            }
            Value::Object(map) => {
                let mut out: Option<Vec<Value>> = None;
                for (i, (k, v)) in map.iter().enumerate() {
                    let len = self.enter(Seg::Key(k));
                    let new = self.variable(k, v, false);
                    self.leave(len);
                    keep_or_replace(&mut out, map.values(), i, v, new);
                }
                out.map(|values| Value::Object(map.keys().cloned().zip(values).collect()))
            }
            Value::String(s) if !s.is_empty() => {
                let new = mask_string(s, true)?;
                self.note();
                Some(Value::String(new))
            }
            _ => None,
        }
    }

    /// A `{name, value}` entry of a list of variables: its value judged as the variable's;
    /// `None` when kept, or when it is not such a pair.
    fn env_pair(&mut self, o: &serde_json::Map<String, Value>) -> Option<Value> {
        let Pair {
            name: Some(name_field),
            value: Some(value_field),
        } = pair_fields(o)
        else {
            return None;
        };
        let name = o.get(name_field).and_then(Value::as_str)?;
        let value = o.get(value_field)?;
        let len = self.enter(Seg::Key(value_field));
        let new = self.variable(name, value, marked_secret(o));
        self.leave(len);
        let mut o = o.clone();
        o.insert(value_field.into(), new?);
        Some(Value::Object(o))
    }

    /// The value of the variable `name` (the node being walked): masked whole when the name
    /// says secret (or `marked`), else judged by what it looks like.
    fn variable(&mut self, name: &str, value: &Value, marked: bool) -> Option<Value> {
        if (marked || is_secret_name(name)) && worth_hiding(value) {
            self.note();
            return Some(Value::String(MASK.to_string()));
        }
        match value {
            Value::String(s) => {
                let new = variable_text(name, s)?;
                self.note();
                Some(Value::String(new))
            }
            Value::Array(_) | Value::Object(_) => self.walk(value, KeyKind::Other),
            _ => None,
        }
    }
}

/// The text of a variable's value as shown, `None` when kept as it is: masked whole when the
/// name says secret or the value looks like a credential, else with the free-text rules
/// applied (a URL keeps its host and loses its password).
fn variable_text(name: &str, value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if is_secret_name(name) || looks_like_credential(value) {
        return Some(MASK.to_string());
    }
    mask_string(value, value.contains('\n'))
}

/// Whether an object marks its value secret (`isSecret: true`, `secret: true`,
/// `sensitive: true`), as Arcane's variables do.
fn marked_secret(map: &serde_json::Map<String, Value>) -> bool {
    ["isSecret", "secret", "sensitive"]
        .iter()
        .any(|k| map.get(*k) == Some(&Value::Bool(true)))
}

/// Whether an object is a `{key|name, value}` pair.
fn is_pair(map: &serde_json::Map<String, Value>) -> bool {
    let p = pair_fields(map);
    p.name.is_some() && p.value.is_some()
}

/// The fields of a `{key|name, value}` pair, by the first name of each list an object has
/// (`key`, `name`, `Key`, `Name` holding a string; `value`, `Value`): one pass over its keys
/// rather than a lookup per name.
struct Pair {
    name: Option<&'static str>,
    value: Option<&'static str>,
}

fn pair_fields(map: &serde_json::Map<String, Value>) -> Pair {
    const NAMES: [&str; 4] = ["key", "name", "Key", "Name"];
    const VALUES: [&str; 2] = ["value", "Value"];
    let (mut name, mut value) = (NAMES.len(), VALUES.len());
    for (k, v) in map {
        if let Some(i) = NAMES.iter().position(|n| n == k)
            && v.is_string()
        {
            name = name.min(i);
        } else if let Some(i) = VALUES.iter().position(|n| n == k) {
            value = value.min(i);
        }
    }
    Pair {
        name: NAMES.get(name).copied(),
        value: VALUES.get(value).copied(),
    }
}

/// A step of a JSON Pointer.
enum Seg<'k> {
    Index(usize),
    Key(&'k str),
}

/// Builds the copy of a container only once a child has changed: `out` stays `None` while the
/// children are kept; at the first replacement it takes copies of the children before it.
/// `children` are the container's, `i` and `current` the child just walked.
fn keep_or_replace<'v>(
    out: &mut Option<Vec<Value>>,
    children: impl Iterator<Item = &'v Value>,
    i: usize,
    current: &Value,
    new: Option<Value>,
) {
    match (out.as_mut(), new) {
        (Some(out), Some(new)) => out.push(new),
        (Some(out), None) => out.push(current.clone()),
        (None, Some(new)) => {
            let mut copy: Vec<Value> = children.take(i).cloned().collect();
            copy.push(new);
            *out = Some(copy);
        }
        (None, None) => {}
    }
}

fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

/// Whether a secret field's value is worth replacing with [`MASK`]: not a flag, null or an
/// empty value.
fn worth_hiding(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.is_empty(),
        Value::Number(_) => true,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Bool(_) | Value::Null => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
        let masked = redact_for(&mut v, "");
        let text = v.to_string();
        for secret in ["s3cr3t", "hunter2", "postgres://u:p@", "\"t\""] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        // Values neither secret-named nor credential-shaped are shown.
        assert_eq!(v["config"]["env"][1], "PATH=/usr/bin");
        assert_eq!(v["environment"]["MODE"], "prod");
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
    fn pairs_are_judged_by_their_name() {
        let v = json!([
            {"key": "API_TOKEN", "value": "t0k"},
            {"key": "THEME", "value": "dark"},
            {"key": "PLAIN", "value": "hidden", "isSecret": true},
            {"name": "registry", "value": "docker.io", "password": "pw"},
        ]);
        let m = redacted(&v, "");
        assert_eq!(m[0], json!({"key": "API_TOKEN", "value": MASK}));
        assert_eq!(m[1], json!({"key": "THEME", "value": "dark"}));
        assert_eq!(m[2]["value"], MASK);
        assert_eq!(
            m[3],
            json!({"name": "registry", "value": "docker.io", "password": MASK})
        );
    }

    #[test]
    fn a_value_without_secrets_is_borrowed_and_one_with_secrets_copied() {
        let plain = json!({"items": [{"id": "a", "labels": {"app": "web"}, "image": "nginx:1"}]});
        assert!(matches!(
            redacted_view(&plain, "container"),
            Cow::Borrowed(_)
        ));
        let secret = json!({"items": [
            {"id": "a", "labels": {"app": "web"}},
            {"id": "b", "labels": {"traefik.http.middlewares.a.basicauth.users": "u:$apr1$x"}},
            {"id": "c", "env": ["A_TOKEN=1", "MODE=x"]},
        ]});
        let view = redacted_view(&secret, "container");
        assert!(matches!(view, Cow::Owned(_)));
        // The rows around the masked ones are kept as they were, in order.
        assert_eq!(view["items"][0], secret["items"][0]);
        assert_eq!(
            view["items"][1]["labels"]["traefik.http.middlewares.a.basicauth.users"],
            MASK
        );
        assert_eq!(
            view["items"][2],
            json!({"id": "c", "env": [format!("A_TOKEN={MASK}"), "MODE=x"]})
        );
        // The original is untouched.
        assert_eq!(secret["items"][2]["env"][0], "A_TOKEN=1");
    }

    #[test]
    fn secrets_deep_in_a_value_are_masked_with_their_pointers() {
        let mut v = json!({
            "a": {"b": [{"c": {"apiToken": "t1", "plain": "p"}}]},
            "labels": {"com.example.db-password": "pw1", "app": "web"},
            "config": {"Env": ["X_SECRET=xs1", "Y", "LOG=debug"], "Cmd": ["serve", "--token", "t2", "-v"]},
            "vars": [{"name": "SMTP_PASSWORD", "value": "pw2"}, {"name": "MODE", "value": "x"}],
            "list": [{"secret": "s1", "id": 1}, {"secret": "", "id": 2}],
            "log": "12:00 connecting to postgres://app:pw3@db/x with token=t3",
            "a/b~c": {"password": "pw4"},
        });
        let pointers = redact_for(&mut v, "container");
        let text = v.to_string();
        for secret in ["t1", "pw1", "xs1", "t2", "pw2", "s1", "pw3", "t3", "pw4"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        for kept in [
            "\"p\"",
            "web",
            "\"Y\"",
            "LOG=debug",
            "serve",
            "-v",
            "MODE",
            "\"x\"",
        ] {
            assert!(text.contains(kept), "{kept} lost: {text}");
        }
        assert_eq!(
            pointers,
            [
                "/a/b/0/c/apiToken",
                "/labels/com.example.db-password",
                "/config/Env/0",
                "/config/Cmd/2",
                "/vars/0/value",
                "/list/0/secret",
                "/log",
                "/a~1b~0c/password",
            ]
        );
    }

    #[test]
    fn json_text_parameters_are_read_as_json_before_masking() {
        let project = json!({
            "name": "shop",
            "envContent": "DB_PASSWORD=hunter2\nMODE=prod\n",
            "composeContent": "services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD=s3cr3t\n",
        });
        let params = json!({
            "project": project.to_string(),
            "spec": json!({"Env": ["API_TOKEN=t0k", "LOG_LEVEL=info"],
                           "inner": json!({"password": "pw"}).to_string()}).to_string(),
            "note": "{not json",
            "count": 3,
        });
        let v = redacted_params(params.as_object().unwrap(), "project", &[]);
        assert_eq!(v["project"]["name"], "shop");
        assert_eq!(
            v["project"]["envContent"],
            format!("DB_PASSWORD={MASK}\nMODE=prod\n")
        );
        assert!(
            v["project"]["composeContent"]
                .as_str()
                .unwrap()
                .contains(&format!("POSTGRES_PASSWORD={MASK}")),
            "{v}"
        );
        assert_eq!(
            v["spec"]["Env"],
            json!([format!("API_TOKEN={MASK}"), "LOG_LEVEL=info"])
        );
        assert_eq!(v["spec"]["inner"]["password"], MASK);
        assert_eq!(v["note"], "{not json");
        assert_eq!(v["count"], 3);
        for secret in ["hunter2", "s3cr3t", "t0k", "\"pw\""] {
            assert!(!v.to_string().contains(secret), "{secret}: {v}");
        }
    }

    /// The parameters that name what a call addresses are kept as given even when they look
    /// like credentials (the audit log must say what was deleted); everything else, and an
    /// identifier whose own name says secret, is masked as before.
    #[test]
    fn identifiers_are_kept_as_given_unless_their_name_says_secret() {
        let params = json!({
            "environmentId": "AKIAIOSFODNN7EXAMPLE",
            "volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "containerId": "token=prod-data",
            "token": "glpat-abcdefghijklmnopqrst",
            "force": true,
            "note": "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "spec": json!({"password": "pw1"}).to_string(),
        });
        let ids = ["environmentId", "volumeName", "containerId", "token"];
        let v = redacted_params(params.as_object().unwrap(), "volume", &ids);
        assert_eq!(v["environmentId"], "AKIAIOSFODNN7EXAMPLE", "{v}");
        assert_eq!(
            v["volumeName"], "sk-proj-abcdefghijklmnopqrstuvwxyz01",
            "{v}"
        );
        assert_eq!(v["containerId"], "token=prod-data", "{v}");
        assert_eq!(v["token"], MASK, "a secret-named identifier: {v}");
        assert_eq!(v["force"], true);
        assert_eq!(v["note"], MASK, "not an identifier: {v}");
        assert_eq!(v["spec"]["password"], MASK, "{v}");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        let given: Vec<&String> = params.as_object().unwrap().keys().collect();
        assert_eq!(keys, given, "in the caller's order");
        // Without identifiers, the same values are masked as before.
        let v = redacted_params(params.as_object().unwrap(), "volume", &[]);
        for k in ["environmentId", "volumeName", "containerId"] {
            assert!(v[k].as_str().unwrap().contains(MASK), "{k}: {v}");
        }
    }

    #[test]
    fn ordinary_values_are_untouched() {
        let mut v = json!({"name": "web-1", "image": "nginx:1.27", "status": "Up 2 hours", "ports": [{"privatePort": 80}]});
        let before = v.clone();
        assert!(redact_for(&mut v, "").is_empty());
        assert_eq!(v, before);
    }
}
