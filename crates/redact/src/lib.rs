//! The one redactor: what counts as a secret, and how it is masked, for every place that
//! shows Arcane's data or a request (safe-mode previews, resources, the text of results,
//! error texts, the audit log). `structuredContent` goes through it only for the server's
//! own credentials, masked by value ([`KnownSecrets`], [`hold_secret`]): otherwise it keeps
//! Arcane's values.
//!
//! What is masked:
//! * environment variables (`KEY=VALUE` strings in arrays under keys such as `env`, `Env`,
//!   `environment`, the entries of a map under those keys, the lines of a `.env` file): the
//!   value of a secret-named variable, and a value that looks like a credential
//!   ([`looks_like_credential`]: a PEM block, a long high-entropy string; tokens and URL
//!   passwords inside it by the text rules below). The rest is kept: `LOG_LEVEL=info` and
//!   `REDIS_URL=redis://cache:6379` are the clue to a crash;
//! * values of fields whose name says secret ([`is_secret_name`]: password, secret, token, API
//!   key, credential, private key, cookie, authorization, basic-auth labels…); a `{key|name,
//!   value}` pair whose name says secret or that is marked `isSecret`;
//! * in compose text, the value of `KEY: VALUE` / `KEY=VALUE` lines whose key says secret or
//!   whose value looks like a credential;
//! * in any text: the password of a URL (`scheme://user:PASSWORD@host`, up to the last `@`)
//!   and a web URL's lone user (`https://TOKEN@host`), tokens of a known shape (GitHub, GitLab,
//!   Slack, AWS, Arcane keys…, JWTs), the body of a PEM private key, the value of a
//!   secret-named command-line flag (`--db-password=…`, `--requirepass …`, also as the next
//!   item of an argument array, in text or in JSON), of a secret-named `KEY=VALUE` word (also
//!   `key = value`, after a quote: `-e"K=V"`, `["K=V"]`; a quoted value whole, keys inside a
//!   connection string too), a secret-named key of JSON or of a Python literal written in text
//!   (also escaped: `{\"password\":\"…\"}`), a credential after its scheme
//!   (`Authorization: token …`), a bearer token; a secret word of prose and its value
//!   (`password hunter2`, `the password is: x`), `curl -u user:PW`, `redis-cli -a PW`,
//!   `mysql -pPW`, pairs percent-encoded once more (`password%3DPW`), words spelt with JSON
//!   escapes (`\u0070assword`), quoted `.env` values going on over lines;
//! * by value, wherever they are and in whatever encoding: the credentials held with
//!   [`hold_secret`] (the server's own, a caller's key over HTTP), at least
//!   [`MIN_KNOWN_SECRET_CHARS`] characters long;
//! * for secret domains (`swarm_secret`), the secret's `data`.
//!
//! Parameters (the audit log, previews' multipart parts) are read as JSON where they are JSON
//! text ([`redacted_params`]), so the same rules see what they carry.
//!
//! See `docs/security.md` ("Secrets").

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What replaces a masked value, everywhere.
pub const MASK: &str = "********";

/// Keys whose value is a list or map of environment variables.
const ENV_KEYS: &[&str] = &[
    "env",
    "environment",
    "envvars",
    "environmentvariables",
    "envs",
];

/// Keys whose string value is a whole `.env` file (a document of variables).
const ENV_FILE_KEYS: &[&str] = &["envcontent", "envfile", "dotenv", "predeployenv"];

/// Whole words of a name that mark a secret.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "secrets",
    "token",
    "tokens",
    "key",
    "apikey",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "cert",
    "certificate",
    "cookie",
    "cookies",
    "passphrase",
    "htpasswd",
    "basicauth",
    "bearer",
    "jwt",
];

/// Fragments of the name with separators removed that mark a secret even inside a longer
/// word (`POSTGRESPASSWORD`, `apikey`, `clientsecret`).
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
    "unlockkey",
    "basicauth",
    "htpasswd",
    // Redis: `--requirepass`, `requirepass`, `--masterauth`.
    "requirepass",
    "masterauth",
];

/// A last word that makes a secret-sounding name a description of one, not the secret
/// itself (`secretName`, `tokenExpiresAt`, `keyPrefix`, `passwordSet`, `apiKeyId`).
const NOT_SECRET_LAST: &[&str] = &[
    "id",
    "ids",
    "name",
    "names",
    "count",
    "type",
    "kind",
    "file",
    "path",
    "set",
    "enabled",
    "required",
    "at",
    "prefix",
    "length",
    "mode",
    "method",
    "provider",
    "url",
    "uri",
    "endpoint",
    "header",
    "policy",
    "scope",
    "scopes",
    "status",
    "state",
    "expiry",
    "expires",
    "label",
    "version",
    "configured",
    "exists",
    "hint",
    "description",
];

/// Keys that hold whole text documents that may embed secrets (compose files).
const TEXT_DOC_KEYS: &[&str] = &["composecontent", "overridecontent", "content", "source"];

fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of a name: split at non-alphanumerics and camelCase humps, lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a field, variable, header, label or flag name says its value is secret.
///
/// ```
/// use arcane_redact::is_secret_name;
/// for n in ["password", "POSTGRES_PASSWORD", "apiKey", "X-Registry-Token", "clientSecret",
///           "traefik.http.middlewares.a.basicauth.users", "--db-password", "key"] {
///     assert!(is_secret_name(n), "{n}");
/// }
/// for n in ["name", "keys", "apiKeyId", "secretName", "keyPrefix", "passwordSet", "author",
///           "publicKey", "monkey"] {
///     assert!(!is_secret_name(n), "{n}");
/// }
/// ```
pub fn is_secret_name(name: &str) -> bool {
    name_info_cached(name).secret
}

/// [`is_secret_name`], without the memory of verdicts.
fn judge_name(name: &str) -> bool {
    let w = words(name);
    let Some(last) = w.last() else {
        return false;
    };
    if NOT_SECRET_LAST.contains(&last.as_str()) || w.iter().any(|x| x == "public") {
        return false;
    }
    if w.iter().any(|x| SECRET_WORDS.contains(&x.as_str())) {
        return true;
    }
    let joined = norm(name);
    SECRET_FRAGMENTS.iter().any(|f| joined.contains(f))
}

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

/// What a field name means to the redactor, decided once per name and thread.
#[derive(Clone, Copy)]
struct NameInfo {
    /// [`is_secret_name`].
    secret: bool,
    /// Where its value's kind of text is decided: variables, a `.env` file, a document.
    kind: KeyKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Env,
    TextDoc,
    Other,
}

fn name_info(name: &str) -> NameInfo {
    let n = norm(name);
    let kind = if ENV_KEYS.contains(&n.as_str()) {
        KeyKind::Env
    } else if ENV_FILE_KEYS.contains(&n.as_str()) || TEXT_DOC_KEYS.contains(&n.as_str()) {
        KeyKind::TextDoc
    } else {
        KeyKind::Other
    };
    NameInfo {
        secret: judge_name(name),
        kind,
    }
}

/// Most names a thread remembers the verdict on, and the longest one it remembers (a hostile
/// answer may bring a new key per object): past the count the memory starts again, a longer
/// name is judged each time. At most about 1 MiB per thread.
const MAX_NAMES: usize = 4096;
const MAX_NAME_LEN: usize = 256;

thread_local! {
    /// The verdicts on the names met so far by this thread: Arcane's field names, labels and
    /// variables repeat on every row and every call.
    static NAMES: std::cell::RefCell<foldhash::HashMap<Box<str>, NameInfo>> =
        Default::default();
}

/// [`name_info`], remembered per thread.
fn name_info_cached(name: &str) -> NameInfo {
    if name.len() > MAX_NAME_LEN {
        return name_info(name);
    }
    NAMES
        .try_with(|names| {
            if let Some(info) = names.borrow().get(name) {
                return *info;
            }
            let info = name_info(name);
            let mut names = names.borrow_mut();
            if names.len() >= MAX_NAMES {
                names.clear();
            }
            names.insert(name.into(), info);
            info
        })
        // The thread is ending: judged without the memory.
        .unwrap_or_else(|_| name_info(name))
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

/// Whether a value, whatever its name, looks like a credential by itself: a PEM block (a key
/// or certificate pasted into a variable), or a long high-entropy string ([`high_entropy`]).
/// Tokens of a known shape and URL passwords are found by [`mask_text`] inside any text.
pub fn looks_like_credential(value: &str) -> bool {
    let v = value.trim().trim_matches(['"', '\'']);
    v.contains("-----BEGIN ") || high_entropy(v)
}

/// Shortest value [`high_entropy`] considers: shorter random strings are as often IDs.
const MIN_ENTROPY_LEN: usize = 20;

/// A long random-looking string: at least [`MIN_ENTROPY_LEN`] characters of the base64 or
/// URL-safe alphabet (no blank, `:`, `@`, so paths, URLs, images and lists are not), holding
/// letters and digits, not only hexadecimal digits (container IDs, digests, commit hashes and
/// UUIDs are everywhere in Docker's data and are not secrets), changing between upper case,
/// lower case and digits at least once per four characters (identifiers and versions such as
/// `com.example.App2` or `alpine3.19-build20240101` change far less often than random text),
/// and with at least 3.5 bits of Shannon entropy per character.
fn high_entropy(v: &str) -> bool {
    if v.len() < MIN_ENTROPY_LEN {
        return false;
    }
    let (mut letters, mut digits, mut non_hex, mut alnum, mut switches) = (0, 0, 0, 0usize, 0);
    let mut counts = [0u32; 128];
    let mut prev_class = 0u8;
    for b in v.bytes() {
        let class = match b {
            b'A'..=b'Z' => 1,
            b'a'..=b'z' => 2,
            b'0'..=b'9' => 3,
            b'+' | b'/' | b'=' | b'_' | b'-' | b'.' | b'~' => 0,
            _ => return false,
        };
        counts[b as usize] += 1;
        if class == 0 {
            continue;
        }
        alnum += 1;
        if class == 3 {
            digits += 1;
        } else {
            letters += 1;
            if !b.is_ascii_hexdigit() {
                non_hex += 1;
            }
        }
        if prev_class != 0 && prev_class != class {
            switches += 1;
        }
        prev_class = class;
    }
    if letters == 0 || digits == 0 || non_hex == 0 || switches * 4 < alnum {
        return false;
    }
    let n = v.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum();
    entropy >= 3.5
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

/// Masks the secrets inside one string; `None` when nothing changed. `doc`: a document (a
/// `.env` file, compose text) whose `KEY=VALUE` / `KEY: VALUE` lines are judged as variables
/// ([`mask_lines`]).
fn mask_string(s: &str, doc: bool) -> Option<String> {
    let lines = if doc { mask_lines(s) } else { None };
    let base = lines.as_deref().unwrap_or(s);
    match mask_text(base) {
        Cow::Owned(t) => Some(t),
        Cow::Borrowed(_) => lines,
    }
}

/// A downloaded text file (a `.env` file, compose text, a configuration) with its secrets
/// masked: its variables and settings as [`mask_lines`] judges them, and secrets inside any
/// line.
pub fn mask_document(text: &str) -> Cow<'_, str> {
    match mask_string(text, true) {
        Some(t) => Cow::Owned(t),
        None => Cow::Borrowed(text),
    }
}

static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    // The password runs to the last `@` of the authority: a password with a raw `@`
    // (`u:p@ss@host`, which parsers read the same way) is masked whole.
    Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/?#@]*:)([^\s/?#]+)@").expect("valid regex")
});
/// A web URL whose user info is a single word: how access tokens are put in clone URLs
/// (`https://<token>@github.com/…`).
static URL_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(https?://)([^\s:/?#@]+)@").expect("valid regex"));
/// A command-line flag and its value: `--flag=value`, `--flag value`, or the next string of a
/// JSON argument list, `"--flag","value"` (also escaped: `\"--flag\",\"value\"`). The flag
/// starts a word or a quoted string. An unquoted value stops at a quote or backslash here
/// (the end of the string a flag sits in); [`mask_flags`] runs it on to the next blank when
/// the flag was not in quotes.
static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?P<lead>^|[\s"'])(?P<flag>--?[A-Za-z][A-Za-z0-9_.\-]*)(?:"#,
        r#"(?P<sep>=)(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"'\\]+)"#,
        r#"|(?P<sep2>[ \t]+)(?P<val2>"[^"\n]*"|'[^'\n]*'|[^\s\-"'\\][^\s"'\\]*)"#,
        r#"|(?P<lsep>"[ \t]*,[ \t]*")(?P<lval>(?:[^"\\\n]|\\.)*)""#,
        r#"|(?P<esep>\\"[ \t]*,[ \t]*\\")(?P<eval>(?:[^"\\\n]|\\[^"\n])*)\\""#,
        r#")"#,
    ))
    .expect("valid regex")
});
/// Where a `KEY=` word starts (also `key = value`, and after a quote: `-e"K=V"`, `["K=V"]`);
/// its value is found by [`value_end`].
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(^|[\s;,&|(?"'\[{])([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*=[ \t]*"#)
        .expect("valid regex")
});
/// A key of JSON (or of a Python or JavaScript literal) written inside text, a structured log
/// line: `"password": "value"`, `'password': 'value'`, escaped as JSON inside JSON
/// (`\"password\":\"value\"`), the value quoted or bare (`"pin": 1234`).
static JSON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#""([A-Za-z_][A-Za-z0-9_.\-]*)"(\s*:\s*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[^\s"',}\]{\[]+)"#,
        r#"|'([A-Za-z_][A-Za-z0-9_.\-]*)'(\s*:\s*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[^\s"',}\]{\[]+)"#,
        r#"|\\"([A-Za-z_][A-Za-z0-9_.\-]*)\\"(\s*:\s*)(\\"(?:[^"\\\n]|\\[^"\n])*\\"|[^\s"',}\]{\[\\]+)"#,
    ))
    .expect("valid regex")
});
/// A JSON string literal written in text (`"…"`, its escapes kept whole).
static JSON_STRING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""(?:[^"\\\n]|\\.)*""#).expect("valid regex"));
/// `key: value` in free text (a log line, an error): YAML-ish settings printed on one line.
/// The key stands alone (not quoted: JSON pairs are [`JSON_PAIR`]'s); the value is one quoted
/// string or runs to the next blank or separator.
static COLON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(^|[\s{,;(\[])([A-Za-z_][A-Za-z0-9_.\-]*)([ \t]*:[ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s,;)}\]"']+)"#,
    )
    .expect("valid regex")
});
/// A credential after its scheme in an `Authorization` header, whatever the scheme
/// (`Authorization: token ghp_…`, GitHub's; `Digest …`, `ApiKey …`): the scheme stays.
static AUTH_SCHEME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(authorization["']?[ \t]*[:=][ \t]*["']?)([A-Za-z][A-Za-z0-9_\-]*[ \t]+)([^\s"',;\\]+)"#,
    )
    .expect("valid regex")
});
/// A bearer token (`Authorization: Bearer eyJ…`).
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b((?:bearer|basic)[ \t]+)([A-Za-z0-9\-._~+/]+=*)").expect("valid regex")
});
/// What every token of [`TOKEN`] starts with: a text without one of them is not searched.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk-",
    "sk_",
    "rk_",
    "AKIA",
    "ASIA",
    "AIza",
    "npm_",
    "hf_",
    "dckr_pat_",
    "arc_",
    "SG.",
    "eyJ",
];
/// Whether a text may hold a token of [`TOKEN`]: one of [`TOKEN_PREFIXES`]. A byte scan first:
/// every prefix but AWS's and Google's holds `_`, `-` or `.` (or is followed by one, in a
/// JWT), so most plain values (names, states) are answered without the regex.
fn token_hint(s: &str) -> bool {
    let may = s.bytes().any(|b| matches!(b, b'_' | b'-' | b'.'))
        || s.contains("AKIA")
        || s.contains("ASIA")
        || s.contains("AIza");
    may && TOKEN_HINT.is_match(s)
}
static TOKEN_HINT: LazyLock<Regex> = LazyLock::new(|| {
    let literals: Vec<String> = TOKEN_PREFIXES.iter().map(|p| regex::escape(p)).collect();
    Regex::new(&literals.join("|")).expect("valid regex")
});
/// Credentials whose shape says what they are, wherever they are written: GitHub, GitLab,
/// Slack, OpenAI, Anthropic, Stripe, AWS access key IDs, Google API keys, npm, Hugging Face,
/// Docker Hub and SendGrid tokens, Arcane's own API keys (`arc_` and 64 hexadecimal digits,
/// Arcane's `internal/apikey/service.go`), and JWTs (two base64url JSON objects, `eyJ…`).
/// Each starts with one of [`TOKEN_PREFIXES`] (a test checks it).
static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_\-]{20,}",
        r"|xox[aboprs]-[A-Za-z0-9\-]{10,}|sk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_\-]{20,}",
        r"|sk-[A-Za-z0-9]{40,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|AIza[0-9A-Za-z_\-]{35}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}",
        r"|dckr_pat_[A-Za-z0-9_\-]{20,}|arc_[0-9a-f]{32,}",
        r"|SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)",
    ))
    .expect("valid regex")
});
/// The body of a PEM private key (`-----BEGIN RSA PRIVATE KEY-----` … `-----END …-----`, or to
/// the end of a text cut short); the BEGIN and END lines stay, saying what was there.
static PEM_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)(?s:.*?)",
        r"(-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\z)",
    ))
    .expect("valid regex")
});

/// Masks the credentials URLs in a text carry (`scheme://user:password@`, `https://token@`),
/// and nothing else: for the program's own messages, which name secrets' settings
/// (`credential`, `token`) in words that [`mask_text`]'s `name: value` rules would take for a
/// secret and its value.
pub fn mask_url_credentials(s: &str) -> Cow<'_, str> {
    if !s.contains("://") {
        return Cow::Borrowed(s);
    }
    let text = apply(Cow::Borrowed(s), |t| {
        URL_PASSWORD.replace_all(t, format!("${{1}}{MASK}@").as_str())
    });
    apply(text, |t| {
        URL_TOKEN.replace_all(t, format!("${{1}}{MASK}@").as_str())
    })
}

/// Masks secrets written inside free text: a URL's password, tokens of a known shape, a PEM
/// private key, a secret-named flag's, `KEY=VALUE` word's, JSON key's or `key: value`'s value,
/// an `Authorization` credential. Borrows when nothing is found.
///
/// ```
/// use arcane_redact::mask_text;
/// assert_eq!(mask_text("postgres://app:hunter2@db/x"), "postgres://app:********@db/x");
/// assert_eq!(mask_text("run --db-password=hunter2 --token abc -v"), "run --db-password=******** --token ******** -v");
/// assert_eq!(mask_text("env API_TOKEN=abc make"), "env API_TOKEN=******** make");
/// assert_eq!(mask_text("/api/x?token=abc&limit=5"), "/api/x?token=********&limit=5");
/// assert_eq!(mask_text("--name web --port 80"), "--name web --port 80");
/// assert_eq!(mask_text(r#"{'user': 'bob', 'password': 'x'}"#), r#"{'user': 'bob', 'password': '********'}"#);
/// assert_eq!(mask_text("redis-server --requirepass x --port 6379"), "redis-server --requirepass ******** --port 6379");
/// assert_eq!(mask_text("Authorization: token abc"), "Authorization: token ********");
/// ```
pub fn mask_text(s: &str) -> Cow<'_, str> {
    // The held credentials first, by value: a shape rule could mask part of one and leave
    // the rest for none to find.
    match mask_known(s) {
        Cow::Borrowed(_) => mask_text_with(s, true),
        Cow::Owned(t) => Cow::Owned(mask_text_with(&t, true).into_owned()),
    }
}

/// [`mask_text`]; `skip` lets a rule be skipped when the text lacks what it looks for (the
/// tests compare both ways).
fn mask_text_with(s: &str, skip: bool) -> Cow<'_, str> {
    // `\u0070assword`: JSON escapes spelling letters are read as the letters, so that the
    // rules see the word; the text shown is the decoded one when something was masked.
    if let Some(decoded) = decode_alnum_escapes(s) {
        return match mask_shapes(&decoded, skip) {
            Cow::Owned(t) => Cow::Owned(t),
            Cow::Borrowed(_) => Cow::Borrowed(s),
        };
    }
    mask_shapes(s, skip)
}

/// The shape rules of [`mask_text`] (without the held credentials).
fn mask_shapes(s: &str, skip: bool) -> Cow<'_, str> {
    if !s.contains('@')
        && !s.contains('-')
        && !s.contains('=')
        && !s.contains(':')
        && !s.contains('%')
        && !s
            .as_bytes()
            .windows(6)
            .any(|w| w.eq_ignore_ascii_case(b"bearer"))
        && !token_hint(s)
        // `password hunter2`: a secret word and a value after a blank.
        && !(s.contains([' ', '\t']) && SECRET_HINT.is_match(s))
    {
        return Cow::Borrowed(s);
    }
    let mut text = Cow::Borrowed(s);
    if !skip || s.contains("-----BEGIN ") {
        text = apply(text, |t| {
            PEM_KEY.replace_all(t, format!("${{1}}{MASK}${{2}}").as_str())
        });
    }
    if !skip || token_hint(s) {
        text = apply(text, |t| TOKEN.replace_all(t, MASK));
    }
    if !skip || s.contains("://") {
        text = apply(text, mask_url_credentials);
    }
    // The other rules mask a value only after a secret name (or a scheme word): text without
    // one of their words (most values: IDs, images, dates, states) has nothing for them.
    // Masking only writes `********`, so it never makes such a word.
    if !skip || SECRET_HINT.is_match(s) {
        // JSON escaped inside a JSON string, whatever the key holding it.
        text = apply(text, |t| mask_escaped_strings(t, skip));
        // First, so that the scheme word stays (`Authorization: token …`): the rules after it
        // leave a scheme word followed by a masked credential alone.
        text = apply(text, |t| {
            AUTH_SCHEME.replace_all(t, |c: &regex::Captures<'_>| {
                if c[3].starts_with(MASK) {
                    c[0].to_string()
                } else {
                    format!("{}{}{MASK}", &c[1], &c[2])
                }
            })
        });
        text = apply(text, mask_flags);
        text = apply(text, mask_assignments);
        text = apply(text, mask_json_pairs);
        text = apply(text, |t| {
            COLON_PAIR.replace_all(t, |c: &regex::Captures<'_>| {
                let val = c[4].trim_matches(|ch| ch == '"' || ch == '\'');
                // `Authorization: Bearer …`, `Authorization: token …`: the scheme word stays,
                // the credential after it is masked by the bearer and scheme rules.
                let scheme = val.eq_ignore_ascii_case("bearer")
                    || val.eq_ignore_ascii_case("basic")
                    || scheme_before_mask(&c[2], &t[c.get(0).expect("match").end()..]);
                if is_secret_name(&c[2]) && val != MASK && !val.is_empty() && !scheme {
                    format!("{}{}{}{MASK}", &c[1], &c[2], &c[3])
                } else {
                    c[0].to_string()
                }
            })
        });
        text = apply(text, |t| {
            BEARER.replace_all(t, |c: &regex::Captures<'_>| {
                if c[2].starts_with(MASK) {
                    c[0].to_string()
                } else {
                    format!("{}{MASK}", &c[1])
                }
            })
        });
        if !skip || s.contains('%') {
            text = apply(text, mask_percent_pairs);
        }
        text = apply(text, mask_keyword_values);
    }
    // Programs whose password flag has no secret name: `curl -u user:pw`, `redis-cli -a pw`,
    // `mysql -ppw`. Looked for only after the program's name on the same line.
    if !skip || s.contains("curl") || s.contains("wget") {
        text = apply(text, |t| mask_after(&CURL_USER, t, user_password_span));
    }
    if !skip || s.contains("redis-cli") {
        text = apply(text, |t| mask_after(&REDIS_AUTH, t, whole_span));
    }
    if !skip || s.contains("mysql") || s.contains("mariadb") {
        text = apply(text, |t| mask_after(&MYSQL_PASSWORD, t, whole_span));
    }
    match text {
        // A rule that matched without masking rewrote the text unchanged.
        Cow::Owned(t) if t != s => Cow::Owned(t),
        _ => Cow::Borrowed(s),
    }
}

/// The secret words of [`KEYWORD_VALUE`], as a regex alternation (a name ending in one).
const KEYWORDS: &str =
    r"[A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd|secret|token|api[_\- ]?key)s?";

/// A secret word written as prose, then its value: `password hunter2`, `the password is: x`,
/// `secret is 'x'`, `DB_PASSWORD was "x"`. Group `key` is the word, `is` the verb (`is`,
/// `was`) and `colon` a colon after it, `val` the value (one quoted string, or a word).
static KEYWORD_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)(?:^|[^A-Za-z0-9_.\-])(?P<key>{KEYWORDS})[ \t]+(?:(?P<is>is|was)[ \t]*(?P<colon>:)?[ \t]*)?(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"']+)"#
    ))
    .expect("valid regex")
});

/// Whether a word after a secret word is a value rather than prose: it holds a digit, a
/// capital after its first letter or a symbol of passwords (`hunter2`, `QZabc`, `p@ss`);
/// `reset`, `expired`, `e-mail`, a path, a bracket's content and a setting's name
/// (`ARCANE_TOKEN`) are not. At least 4 characters; only digits (a count,
/// `tokens 5000`) is a value only after a word for passwords (a PIN).
fn value_like(key: &str, v: &str) -> bool {
    // `(ARCANE_API_KEY / --api-key)`, `ARCANE_TOKEN`: a setting's name, in the program's own
    // messages and in prose, is no value.
    let setting_name = v.contains('_')
        && v.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if v.chars().count() < 4 || v.starts_with(['(', '[', '{', '<', '-']) || setting_name {
        return false;
    }
    let digits_only = v.bytes().all(|b| b.is_ascii_digit());
    if digits_only {
        let k = key.to_ascii_lowercase();
        return ["pass", "pwd", "secret"].iter().any(|w| k.contains(w));
    }
    v.bytes().any(|b| b.is_ascii_digit())
        || v.chars().skip(1).any(char::is_uppercase)
        || v.contains(['!', '@', '#', '$', '%', '^', '&', '*', '+', '=', '~', '|'])
}

/// Masks the value after a secret word in prose ([`KEYWORD_VALUE`]): always after `is:` or
/// when quoted, else when it looks like a value ([`value_like`]).
fn mask_keyword_values(t: &str) -> Cow<'_, str> {
    // Not `replace_all`: a word passed over as no value may be the next secret word
    // (`login apwd password hunter2`, `secret token hunter2`), so the search goes on from the
    // end of the key rather than the end of the match.
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(c) = KEYWORD_VALUE.captures_at(t, at) {
        let whole = c.get(0).expect("match");
        let val = c.name("val").expect("group");
        let raw = val.as_str();
        let quoted = raw.len() >= 2
            && ((raw.starts_with('"') && raw.ends_with('"'))
                || (raw.starts_with('\'') && raw.ends_with('\'')));
        // Trailing punctuation ends a sentence, not the value.
        let bare = raw.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}']);
        let inner = if quoted { &raw[1..raw.len() - 1] } else { bare };
        let key = &c["key"];
        let wanted = !inner.is_empty()
            && !inner.starts_with(MASK)
            && is_secret_name(key.trim_end_matches(['s', 'S']))
            && (c.name("colon").is_some() || quoted || value_like(key, inner))
            // `token is` / `password was`: the verb itself is no value.
            && !(c.name("is").is_none() && matches!(inner.to_ascii_lowercase().as_str(), "is" | "was"));
        if !wanted {
            at = c.name("key").expect("group").end();
            continue;
        }
        out.push_str(&t[copied..val.start()]);
        if quoted {
            let q = &raw[..1];
            out.push_str(q);
            out.push_str(MASK);
            out.push_str(q);
        } else {
            out.push_str(MASK);
            out.push_str(&raw[bare.len()..]);
        }
        copied = whole.end();
        at = whole.end();
    }
    if copied == 0 {
        return Cow::Borrowed(t);
    }
    out.push_str(&t[copied..]);
    Cow::Owned(out)
}

/// A pair percent-encoded once more (a URL inside a query string, a logged form body):
/// `password%3Dhunter2`, the key after a separator or an escape (`%3F`, `%26`), the value up
/// to the next encoded `&` (`%26`), `&`, blank or quote.
static PERCENT_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)(?:^|[^A-Za-z0-9%]|%[0-9A-F]{2})([A-Za-z_][A-Za-z0-9_.\-]*)%3D"#,
        r#"((?:[^\s&%"'<>]|%(?:[013-9A-F][0-9A-F]|2[0-57-9A-F]))*)"#,
    ))
    .expect("valid regex")
});

fn mask_percent_pairs(t: &str) -> Cow<'_, str> {
    PERCENT_PAIR.replace_all(t, |c: &regex::Captures<'_>| {
        let whole = c.get(0).expect("match");
        let val = c.get(2).expect("group");
        if !is_secret_name(&c[1]) || val.as_str().is_empty() || val.as_str() == MASK {
            return whole.as_str().to_string();
        }
        format!("{}{MASK}", &t[whole.start()..val.start()])
    })
}

/// `curl -u user:password` (also `-uuser:pw`, `--user`, `--proxy-user`, `-U`) and wget's
/// `--user`/`--http-user`, after `curl` or `wget` on the line; group `val` is the value.
static CURL_USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"\b(?:curl|wget)\b[^\n]*?[\s"'](?:-[uU][ \t]*|--(?:user|proxy-user|http-user)(?:[ \t]+|=))"#,
        r#"(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"'\-][^\s"']*)"#,
    ))
    .expect("valid regex")
});
/// `redis-cli -a password` after `redis-cli` on the line (`--pass` is a secret-named flag).
static REDIS_AUTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\bredis-cli\b[^\n]*?[\s"']-a[ \t]+(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"'\-][^\s"']*)"#,
    )
    .expect("valid regex")
});
/// MySQL's and MariaDB's clients' `-pPASSWORD` (the password written against the flag; `-p`
/// alone asks for it), after the program's name on the line.
static MYSQL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\b(?:mysql[a-z]*|mariadb(?:-[a-z]+)?)\b[^\n]*?[\s"']-p(?P<val>[^\s"']+)"#)
        .expect("valid regex")
});

/// Masks, in each match of `rule`, the part of its `val` group that `span` picks (a range of
/// the value; `None` to keep it).
fn mask_after<'t>(
    rule: &Regex,
    t: &'t str,
    span: fn(&str) -> Option<std::ops::Range<usize>>,
) -> Cow<'t, str> {
    rule.replace_all(t, |c: &regex::Captures<'_>| {
        let whole = c.get(0).expect("match");
        let val = c.name("val").expect("group");
        let v = val.as_str();
        match span(v) {
            Some(r) if !v[r.clone()].is_empty() && !v[r.clone()].starts_with(MASK) => format!(
                "{}{}{MASK}{}",
                &t[whole.start()..val.start()],
                &v[..r.start],
                &v[r.end..]
            ),
            _ => whole.as_str().to_string(),
        }
    })
}

/// The whole value, inside its quotes.
fn whole_span(v: &str) -> Option<std::ops::Range<usize>> {
    Some(unquoted(v))
}

/// The password of `user:password` (after the first `:`), inside its quotes; `None` without
/// one (`curl -u user` asks for it).
fn user_password_span(v: &str) -> Option<std::ops::Range<usize>> {
    let r = unquoted(v);
    let colon = v[r.clone()].find(':')?;
    Some(r.start + colon + 1..r.end)
}

fn unquoted(v: &str) -> std::ops::Range<usize> {
    let quoted = v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    if quoted { 1..v.len() - 1 } else { 0..v.len() }
}

/// `s` with each JSON escape of an ASCII letter, digit or `_` (`\u0070`) written as that
/// character (no JSON encoder needs to escape them: only a text hiding a word does); `None`
/// when it holds none. An escaped backslash (`\\u0070`) is left as it is.
fn decode_alnum_escapes(s: &str) -> Option<String> {
    if !s.contains("\\u00") && !s.contains("\\U00") {
        return None;
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let decoded = (b.len() >= i + 6 && matches!(b[i + 1], b'u' | b'U'))
            .then(|| std::str::from_utf8(&b[i + 2..i + 6]).ok())
            .flatten()
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .and_then(char::from_u32)
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_');
        match decoded {
            Some(c) => {
                out.push_str(&s[copied..i]);
                out.push(c);
                i += 6;
                copied = i;
            }
            // Any other escape (an escaped backslash among them) is skipped whole.
            None => i += 2,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&s[copied..]);
    Some(out)
}

/// Whether the value just read after `key` is the scheme word of an `Authorization` credential
/// that [`AUTH_SCHEME`] masked (`rest` follows the value: blanks, then the mask).
fn scheme_before_mask(key: &str, rest: &str) -> bool {
    norm(key).ends_with("authorization")
        && rest.starts_with([' ', '\t'])
        && rest.trim_start_matches([' ', '\t']).starts_with(MASK)
}

/// The quote a match led by `lead` (at `at` in `t`) sits inside: `"`, `'`, or `\"` when the
/// quote is escaped (JSON inside JSON); `None` when it is not led by a quote.
fn lead_quote(t: &str, lead: &str, at: usize) -> Option<&'static str> {
    match lead {
        "\"" if at > 0 && t.as_bytes()[at - 1] == b'\\' => Some("\\\""),
        "\"" => Some("\""),
        "'" => Some("'"),
        _ => None,
    }
}

/// Where a value inside the quoted string `quote` ends (the string's closing quote, on the
/// same line), as an offset in `rest`; `None` when the string does not close on the line.
fn closing_quote(rest: &str, quote: &str) -> Option<usize> {
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    match quote {
        "\"" => closing_in(line, '"'),
        other => line.find(other),
    }
}

/// Masks the value of each secret-named flag ([`FLAG`]). One pass: each search starts where
/// the last value ended, and a value is run on to the next blank by one scan past it.
fn mask_flags(t: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0; // bytes of `t` already in `out`
    let mut pos = 0;
    while let Some(c) = FLAG.captures_at(t, pos) {
        let whole = c.get(0).expect("match");
        let lead = c.name("lead").expect("group");
        let flag = &c["flag"];
        let val = ["val", "val2", "lval", "eval"]
            .into_iter()
            .find_map(|g| c.name(g))
            .expect("one branch matched");
        let mut end = val.end();
        let quoted = val.as_str().starts_with(['"', '\'']);
        let in_list = c.name("lval").is_some() || c.name("eval").is_some();
        if !quoted && !in_list && lead_quote(t, lead.as_str(), lead.start()).is_none() {
            // Not inside a quoted string: the value runs to the next blank.
            end += t[end..].find(char::is_whitespace).unwrap_or(t.len() - end);
        }
        pos = end.max(whole.start() + 1);
        // `pos` may fall inside a character when the match was one byte long.
        while !t.is_char_boundary(pos) {
            pos += 1;
        }
        let value = &t[val.start()..end];
        if !is_secret_name(flag) || value.is_empty() || value.trim_matches(['"', '\'']) == MASK {
            continue;
        }
        out.push_str(&t[copied..val.start()]);
        out.push_str(MASK);
        copied = end;
    }
    if copied == 0 {
        return Cow::Borrowed(t);
    }
    out.push_str(&t[copied..]);
    Cow::Owned(out)
}

/// Masks what JSON string literals written in text hold escaped: JSON (or any text) inside a
/// string of JSON, `{"config":"{\"password\":\"x\"}"}`, whose pairs the other rules would
/// read as one value of a key that says nothing (`config`). Each literal holding an escaped
/// quote is decoded, masked by every rule — so a literal inside it is decoded in turn, at any
/// depth —, and written back escaped when something was masked.
fn mask_escaped_strings(t: &str, skip: bool) -> Cow<'_, str> {
    if !t.contains("\\\"") {
        return Cow::Borrowed(t);
    }
    JSON_STRING.replace_all(t, |c: &regex::Captures<'_>| {
        let literal = &c[0];
        let inner = match serde_json::from_str::<String>(literal) {
            Ok(inner) if literal.contains("\\\"") => inner,
            _ => return literal.to_string(),
        };
        match mask_text_with(&inner, skip) {
            Cow::Owned(masked) => {
                serde_json::to_string(&masked).unwrap_or_else(|_| literal.to_string())
            }
            Cow::Borrowed(_) => literal.to_string(),
        }
    })
}

/// Masks the value of each secret-named key of JSON or a literal written in text
/// ([`JSON_PAIR`]), in the quotes it was written with.
fn mask_json_pairs(t: &str) -> Cow<'_, str> {
    JSON_PAIR.replace_all(t, |c: &regex::Captures<'_>| {
        let whole = &c[0];
        // Each branch's groups: the key, the blanks and colon, the value.
        let (key, val) = [1, 4, 7]
            .into_iter()
            .find_map(|g| Some((c.get(g)?, c.get(g + 2)?)))
            .expect("one branch matched");
        let (open, close, inner) = if let Some(v) = val.as_str().strip_prefix("\\\"") {
            ("\\\"", "\\\"", v.strip_suffix("\\\"").unwrap_or(v))
        } else if let Some(q) = val
            .as_str()
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
        {
            let q = if q == '"' { "\"" } else { "'" };
            let v = &val.as_str()[1..];
            (q, q, v.strip_suffix(q).unwrap_or(v))
        } else {
            ("", "", val.as_str())
        };
        let bare_literal = open.is_empty() && matches!(inner, "null" | "true" | "false");
        if !is_secret_name(key.as_str()) || inner.is_empty() || inner == MASK || bare_literal {
            return whole.to_string();
        }
        // Everything before the value as written (the key's quotes included).
        let head = &whole[..val.start() - c.get(0).expect("match").start()];
        format!("{head}{open}{MASK}{close}")
    })
}

/// One rule of [`mask_text`] applied to the text so far: the text is copied only when the rule
/// rewrote it.
fn apply<'s>(text: Cow<'s, str>, rule: impl FnOnce(&str) -> Cow<'_, str>) -> Cow<'s, str> {
    let rewritten = match rule(&text) {
        Cow::Owned(t) => Some(t),
        Cow::Borrowed(_) => None,
    };
    match rewritten {
        Some(t) => Cow::Owned(t),
        None => text,
    }
}

/// The words every secret name holds ([`SECRET_WORDS`], [`SECRET_FRAGMENTS`]: a test checks
/// that each holds one), plus the bearer/basic scheme words; the separators a key of
/// [`mask_text`]'s rules may hold between their letters are skipped, as [`norm`] drops them.
const SECRET_HINT_WORDS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
    "cert",
    "cookie",
    "bearer",
    "basic",
    "jwt",
];

/// Whether a text may hold a secret name (see [`SECRET_HINT_WORDS`]). Case-insensitive with
/// Unicode case folding, so that it finds at least what [`is_secret_name`] would.
static SECRET_HINT: LazyLock<Regex> = LazyLock::new(|| {
    let words: Vec<String> = SECRET_HINT_WORDS
        .iter()
        .map(|w| {
            w.chars()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(r"[_.\-]*")
        })
        .collect();
    Regex::new(&format!("(?i){}", words.join("|"))).expect("valid regex")
});

/// Masks the value of each secret-named `KEY=VALUE` word. A value runs to the next blank or
/// `&`, or is one quoted string (`PASSWORD="two words"`), or, when the key starts a quoted
/// string (`"DB_PASSWORD=x y"` in a JSON list, `-e"K=V"`), runs to that string's end; keys
/// inside a value are found too (`Server=db;Password=…` in a connection string), and a
/// secret's value is masked whole, whatever keys it seems to hold. One pass, linear in the
/// text.
fn mask_assignments(s: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0; // bytes of `s` already in `out`
    let mut masked_to = 0; // end of the last masked value
    for c in ASSIGNMENT_KEY.captures_iter(s) {
        let whole = c.get(0).expect("match");
        let lead = c.get(1).expect("group");
        let key = &c[2];
        let start = whole.end();
        if start < masked_to || !is_secret_name(key) {
            continue;
        }
        let end = value_end(s, start, lead_quote(s, lead.as_str(), lead.start()));
        let val = &s[start..end];
        if val.is_empty() || val == MASK || is_padding(val) || scheme_before_mask(key, &s[end..]) {
            continue;
        }
        out.push_str(&s[copied..start]);
        out.push_str(MASK);
        copied = end;
        masked_to = end;
    }
    if copied == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// Where the value starting at `start` ends: after its closing quote when it is quoted (on the
/// same line); at the end of the quoted string `inside` the key started, when it closes on the
/// line; else at the next blank or `&`. Each scan stops at the first quote of its kind, which
/// the next key of that kind would start with, so many values on one long line stay linear.
fn value_end(s: &str, start: usize, inside: Option<&str>) -> usize {
    let rest = &s[start..];
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        match rest[1..].find([q, '\n']) {
            Some(close) if rest.as_bytes()[1 + close] == q as u8 => return start + close + 2,
            // A quoted value going on over lines (a `.env` file's `KEY="line1` … `line2"`):
            // to its closing quote, or to the end of a text that never closes it.
            Some(_) => {
                return start
                    + 1
                    + rest[1..]
                        .split_inclusive('\n')
                        .scan(0, |at, line| {
                            let here = *at;
                            *at += line.len();
                            Some((here, line))
                        })
                        .find_map(|(here, line)| closing_in(line, q).map(|c| here + c + 1))
                        .unwrap_or(rest.len() - 1);
            }
            None => {}
        }
    }
    if let Some(at) = inside.and_then(|q| closing_quote(rest, q)) {
        return start + at;
    }
    start
        + rest
            .find(|ch: char| ch.is_whitespace() || ch == '&')
            .unwrap_or(rest.len())
}

/// `=` signs only: the padding of a base64 line (a certificate), not a value.
fn is_padding(v: &str) -> bool {
    v.trim_end_matches('\r').bytes().all(|b| b == b'=')
}

/// Masks values of `KEY=VALUE` (and, for documents, `KEY: VALUE`) lines whose key says secret
/// or whose value looks like a credential ([`looks_like_credential`]): the lines of a `.env`
/// file are variables, judged as [`variable_text`] judges them, and so are a compose file's
/// `environment:` entries (the free-text rules run on the whole text afterwards).
fn mask_lines(text: &str) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split('\n').enumerate();
    while let Some((i, line)) = lines.next() {
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
            let wanted = is_secret_name(k) || (!v.is_empty() && looks_like_credential(v));
            if !wanted
                || v.is_empty()
                || v == "|"
                || v == ">"
                || k.is_empty()
                || k.contains(' ')
                || is_padding(v)
            {
                return None;
            }
            let prefix_len = line.len() - item.len() + at + 1;
            let cr = if line.ends_with('\r') { "\r" } else { "" };
            let space = if rest.starts_with(": ") { " " } else { "" };
            Some((
                format!("{}{space}{MASK}{cr}", &line[..prefix_len]),
                open_quote(v),
            ))
        });
        // A quoted value that goes on over the next lines (`KEY="line1` … `line2"`, as
        // `.env` files allow) is masked whole: its lines up to the closing quote are dropped
        // (to the end of the text when it never closes, as a `.env` reader would read it).
        let masked_line = masked_line.map(|(l, open)| {
            if let Some(q) = open {
                for (_, next) in lines.by_ref() {
                    if closes(next, q) {
                        break;
                    }
                }
            }
            l
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

/// The quote a value opens and does not close on its line (`"line1`), if any.
fn open_quote(v: &str) -> Option<char> {
    let v = v.trim_end_matches('\r');
    let q = v.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    (!closes(&v[1..], q)).then_some(q)
}

/// Whether `line` holds the closing quote `q` (for `"`, one not escaped by a backslash).
fn closes(line: &str, q: char) -> bool {
    closing_in(line, q).is_some()
}

/// Where in `line` the closing quote `q` is (for `"`, the first not escaped by a backslash).
fn closing_in(line: &str, q: char) -> Option<usize> {
    if q == '\'' {
        return line.find('\'');
    }
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A short, non-secret fingerprint of a credential for logs, cache keys and the audit log: the
/// first 12 hex digits of its SHA-256 (enough to tell users apart, useless to recover the key).
pub fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Masking by value: the server's own credentials.
// ---------------------------------------------------------------------------------------------

/// Shortest credential [`KnownSecrets`] masks by its value, in characters: a shorter one would
/// match ordinary words (no Arcane API key, JWT or sensible bearer token is that short).
pub const MIN_KNOWN_SECRET_CHARS: usize = 8;

/// A set of credential values masked wherever they appear, whatever their shape: the server's
/// own (the Arcane API key or token, the HTTP listener's bearer tokens, the password of
/// `ARCANE_URL`) and the callers' keys over HTTP. Each value is looked for as written, and in
/// the forms another program may have turned it into before echoing it: percent-encoded (as a
/// URL component, upper- or lower-case hex, every non-alphanumeric or only the reserved
/// characters, form encoding's `+`) and escaped as a JSON string (as serde and Go's
/// `encoding/json` write one). One Aho–Corasick automaton over every form, longest first, so
/// that one pass over a text finds them all (linear in the text, whatever the values).
/// Values shorter than [`MIN_KNOWN_SECRET_CHARS`] are ignored.
#[derive(Clone, Default)]
pub struct KnownSecrets {
    matcher: Option<std::sync::Arc<aho_corasick::AhoCorasick>>,
}

impl KnownSecrets {
    /// The set of `values` (blank-trimmed; short ones ignored).
    pub fn new<'a>(values: impl IntoIterator<Item = &'a str>) -> KnownSecrets {
        let mut forms: Vec<String> = Vec::new();
        for v in values {
            let v = v.trim();
            if v.chars().count() < MIN_KNOWN_SECRET_CHARS {
                continue;
            }
            forms.extend(forms_of(v));
        }
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        if forms.is_empty() {
            return KnownSecrets::default();
        }
        let matcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&forms)
            .ok()
            .map(std::sync::Arc::new);
        KnownSecrets { matcher }
    }

    /// Whether the set holds no value.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every form of every value replaced by [`MASK`]; borrowed when none is in it.
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => Cow::Owned(replace_with_mask(m, text)),
            _ => Cow::Borrowed(text),
        }
    }

    /// Masks every string of `value` in place, object keys included; whether one changed.
    pub fn mask_value(&self, value: &mut Value) -> bool {
        if self.matcher.is_none() {
            return false;
        }
        match value {
            Value::String(s) => match self.mask(s) {
                Cow::Owned(t) => {
                    *s = t;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, v| self.mask_value(v) | changed),
            Value::Object(map) => {
                let mut changed = false;
                if map.keys().any(|k| matches!(self.mask(k), Cow::Owned(_))) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.mask(&k).into_owned(), v);
                    }
                    changed = true;
                }
                map.values_mut()
                    .fold(changed, |changed, v| self.mask_value(v) | changed)
            }
            _ => false,
        }
    }
}

fn replace_with_mask(m: &aho_corasick::AhoCorasick, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    m.replace_all_with(text, &mut out, |_, _, out| {
        out.push_str(MASK);
        true
    });
    out
}

/// The forms of a credential looked for: as written, percent-encoded, JSON-escaped.
fn forms_of(v: &str) -> Vec<String> {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    /// What a URL component encoder leaves as it is: the unreserved `-._~`.
    const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let mut forms = vec![v.to_string()];
    for set in [NON_ALPHANUMERIC, COMPONENT] {
        let upper = utf8_percent_encode(v, set).to_string();
        forms.push(lower_hex(&upper));
        forms.push(upper.replace("%20", "+"));
        forms.push(upper);
    }
    let json = serde_json::to_string(v).unwrap_or_default();
    // Without its quotes.
    let json = json
        .get(1..json.len().saturating_sub(1))
        .unwrap_or(v)
        .to_string();
    // Go's `encoding/json` (Arcane's) also escapes `<`, `>` and `&`.
    forms.push(
        json.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026"),
    );
    forms.push(json);
    forms
}

/// `%2B` as `%2b`: percent-encoders differ in the case of their hex digits.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

/// The values held process-wide, each with how many holders, and their set.
struct Registry {
    held: std::collections::HashMap<String, usize>,
    set: KnownSecrets,
}

static REGISTRY: LazyLock<std::sync::Mutex<Registry>> = LazyLock::new(|| {
    std::sync::Mutex::new(Registry {
        held: Default::default(),
        set: KnownSecrets::default(),
    })
});

/// The set every redaction point masks by value ([`mask_text`], [`redacted`], the previews,
/// the audit log, the logs): a copy of its automaton's handle, read without waiting on
/// writers for longer than a pointer copy.
static CURRENT: LazyLock<std::sync::RwLock<KnownSecrets>> = LazyLock::new(Default::default);

/// A credential held in the process-wide set of [`KnownSecrets`] until this is dropped: the
/// server holds its own for as long as it serves, a caller's key over HTTP for its request.
/// Several holders of one value share it; the last to drop takes it out.
#[must_use = "the value is masked only while its hold lives"]
pub struct SecretHold {
    value: Option<String>,
}

impl std::fmt::Debug for SecretHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretHold(***)")
    }
}

/// Holds `value` in the set every redaction point masks ([`SecretHold`]). A value shorter
/// than [`MIN_KNOWN_SECRET_CHARS`] (blanks trimmed) gives a hold that does nothing.
pub fn hold_secret(value: &str) -> SecretHold {
    let v = value.trim();
    if v.chars().count() < MIN_KNOWN_SECRET_CHARS {
        return SecretHold { value: None };
    }
    let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    let count = reg.held.entry(v.to_string()).or_insert(0);
    *count += 1;
    if *count == 1 {
        rebuild(&mut reg);
    }
    SecretHold {
        value: Some(v.to_string()),
    }
}

impl Drop for SecretHold {
    fn drop(&mut self) {
        let Some(v) = self.value.take() else { return };
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        let gone = match reg.held.get_mut(&v) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                reg.held.remove(&v);
                true
            }
            None => false,
        };
        if gone {
            rebuild(&mut reg);
        }
    }
}

/// Bumped at each change of the held set: a thread reads the set again only then.
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// This thread's copy of the held set, and the generation it was read at.
    static LOCAL: std::cell::RefCell<(u64, KnownSecrets)> = Default::default();
}

fn rebuild(reg: &mut Registry) {
    reg.set = KnownSecrets::new(reg.held.keys().map(String::as_str));
    *CURRENT.write().unwrap_or_else(|p| p.into_inner()) = reg.set.clone();
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Release);
}

/// The held set, as of now: one atomic read when it has not changed since this thread last
/// looked (the redactor runs on every string of an answer).
fn current() -> KnownSecrets {
    let generation = GENERATION.load(std::sync::atomic::Ordering::Acquire);
    let read = || CURRENT.read().unwrap_or_else(|p| p.into_inner()).clone();
    LOCAL
        .try_with(|local| {
            let mut local = local.borrow_mut();
            if local.0 != generation {
                *local = (generation, read());
            }
            local.1.clone()
        })
        .unwrap_or_else(|_| read())
}

/// `text` with every held credential ([`hold_secret`]) masked, in any of its forms
/// ([`KnownSecrets`]); nothing else. [`mask_text`] does this first; this alone is for text
/// whose shapes must stay (the program's own log lines and messages).
pub fn mask_known(text: &str) -> Cow<'_, str> {
    current().mask(text)
}

/// [`mask_known`] on every string of `value` (object keys too), in place; whether one
/// changed. For what keeps Arcane's values otherwise (`structuredContent`).
pub fn mask_known_in(value: &mut Value) -> bool {
    current().mask_value(value)
}

/// `value` with the held credentials masked: borrowed when it holds none.
pub fn mask_known_view(value: &Value) -> Cow<'_, Value> {
    let set = current();
    if set.is_empty() || !holds_known(&set, value) {
        return Cow::Borrowed(value);
    }
    let mut copy = value.clone();
    set.mask_value(&mut copy);
    Cow::Owned(copy)
}

fn holds_known(set: &KnownSecrets, value: &Value) -> bool {
    let Some(m) = &set.matcher else { return false };
    match value {
        Value::String(s) => m.is_match(s),
        Value::Array(items) => items.iter().any(|v| holds_known(set, v)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| m.is_match(k) || holds_known(set, v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_key_colon_value_in_free_text_is_masked() {
        for (line, masked) in [
            (
                "db ready, password: hunter2, user: app",
                "db ready, password: ********, user: app",
            ),
            ("token:abc123", "token:********"),
            (
                "config {api_key: 'k-1', port: 80}",
                "config {api_key: ********, port: 80}",
            ),
            ("secret: \"two words\" done", "secret: ******** done"),
            (
                "Authorization: Basic YWxhZGRpbjpvcGVu",
                "Authorization: Basic ********",
            ),
        ] {
            assert_eq!(mask_text(line), masked, "{line}");
        }
        // Not secrets, and not rewritten: times, URLs, ordinary keys, already masked.
        for line in [
            "started at 12:30:01",
            "see https://example.com/x",
            "status: running, port: 8080",
            "password: ********",
        ] {
            assert_eq!(mask_text(line), line);
        }
    }

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
    fn base64_padding_is_not_a_value() {
        // Certificate lines end in `=`; a hump such as `xKeyZ` must not make them variables.
        let pem =
            "-----BEGIN CERTIFICATE-----\nMIIBxKeyZtokenAbc==\nQUJD=\n-----END CERTIFICATE-----\n";
        assert_eq!(mask_document(pem), pem);
        assert_eq!(mask_text("x API_KEY== y"), "x API_KEY== y");
    }

    #[test]
    fn every_secret_word_holds_a_hint_word() {
        // `mask_text` skips its name rules for text without a hint word: a secret word without
        // one would be skipped.
        for w in SECRET_WORDS.iter().chain(SECRET_FRAGMENTS) {
            assert!(
                SECRET_HINT_WORDS.iter().any(|h| w.contains(h)),
                "{w} holds no word of SECRET_HINT_WORDS"
            );
            assert!(SECRET_HINT.is_match(w), "{w}");
        }
        // Separators inside a key are skipped, as `norm` drops them.
        for key in ["PASS_WORD", "to.ken", "api-key", "SeCrEt", "Bearer"] {
            assert!(SECRET_HINT.is_match(key), "{key}");
        }
        for plain in [
            "nginx:1.27",
            "sha256:0123abc",
            "2026-11-30T22:30:00Z",
            "Up 2 hours",
        ] {
            assert!(!SECRET_HINT.is_match(plain), "{plain}");
        }
    }

    #[test]
    fn verdicts_stay_right_past_the_memory_of_names() {
        // More names than a thread remembers, twice over, and names longer than it keeps.
        for round in 0..2 {
            for i in 0..MAX_NAMES + 100 {
                assert!(is_secret_name(&format!("x{i}_TOKEN")), "{round} {i}");
                assert!(!is_secret_name(&format!("x{i}_TOKEN_ID")), "{round} {i}");
            }
        }
        let long = format!("{}_password", "a".repeat(MAX_NAME_LEN));
        assert!(is_secret_name(&long) && is_secret_name(&long));
        assert!(!is_secret_name(&format!("{long}_set")));
        NAMES.with(|n| assert!(n.borrow().len() <= MAX_NAMES));
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
    fn skipping_rules_changes_no_mask() {
        use proptest::prelude::*;
        let word = prop_oneof![
            Just("password".to_string()),
            Just("PASS_word".into()),
            Just("api-Key".into()),
            Just("tok.en".into()),
            Just("apiKeyId".into()),
            Just("Bearer".into()),
            Just("basic".into()),
            Just("--token".into()),
            Just("https://u:p@h/x".into()),
            Just("https://tok@github.com".into()),
            Just("X_TOKEN=abc".into()),
            Just("\"password\": \"x\"".into()),
            Just("token: v".into()),
            Just("\u{212A}ey".into()),
            Just("sha256:abc".into()),
            Just("nginx:1.2".into()),
            // The shapes of docs/security.md's table: each rule's hint must be found wherever
            // the rule would mask.
            Just("--requirepass".into()),
            Just("\"--password\",\"x\"".into()),
            Just("[\"--token=x\",".into()),
            Just("-e\"DB_PASSWORD=x\"".into()),
            Just("[\"API_TOKEN=x y\"]".into()),
            Just("[\\\"SECRET=x\\\"]".into()),
            Just("'password': 'x'".into()),
            Just("{\\\"token\\\":\\\"x\\\"}".into()),
            Just("Authorization: token abc".into()),
            Just("authorization=Digest".into()),
            Just("key = v".into()),
            Just(format!("ghp_{}", "a1".repeat(18))),
            Just("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.".into()),
            Just("AKIAIOSFODNN7EXAMPLE".into()),
            Just("-----BEGIN PRIVATE KEY-----".into()),
            Just("-----END PRIVATE KEY-----".into()),
            // The prose and program shapes (`password hunter2`, `curl -u u:p`, `-ppw`…).
            Just("is:".into()),
            Just("was".into()),
            Just("hunter2".into()),
            Just("QZabc".into()),
            Just("curl".into()),
            Just("wget".into()),
            Just("-u".into()),
            Just("--user".into()),
            Just("u:pw9".into()),
            Just("redis-cli".into()),
            Just("-a".into()),
            Just("mysql".into()),
            Just("mariadb-dump".into()),
            Just("-pPw1".into()),
            Just("password%3Dx".into()),
            Just("%26".into()),
            Just("%3d".into()),
            Just("\\u0070assword".into()),
            Just("\\u0074".into()),
            Just("\"x\ny\"".into()),
            Just("'a\nb'".into()),
            "[a-zA-Z0-9_.:=@ ,\\\\\\-\"'/]{0,12}",
        ];
        let text = prop::collection::vec(word, 0..6).prop_map(|w| w.join(" "));
        proptest!(ProptestConfig::with_cases(2000), |(t in text)| {
            prop_assert_eq!(mask_text_with(&t, true), mask_text_with(&t, false));
        });
    }

    #[test]
    fn every_token_shape_is_found_by_its_hint() {
        // `mask_text` searches for tokens only in text holding one of `TOKEN_PREFIXES`: a
        // shape of `TOKEN` without one would be skipped. One sample per alternative.
        let samples = [
            format!("ghp_{}", "a1".repeat(18)),
            format!("gho_{}", "a1".repeat(18)),
            format!("ghu_{}", "a1".repeat(18)),
            format!("ghs_{}", "a1".repeat(18)),
            format!("ghr_{}", "a1".repeat(18)),
            format!("github_pat_{}", "a1_".repeat(14)),
            "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn".to_string(),
            "xoxb-1234567890-abcdef".to_string(),
            format!("sk-proj-{}", "Ab1-".repeat(6)),
            format!("sk-ant-{}", "Ab1_".repeat(6)),
            format!("sk-{}", "Ab1".repeat(14)),
            format!("sk_live_{}", "Ab1".repeat(6)),
            format!("rk_test_{}", "Ab1".repeat(6)),
            "AKIAIOSFODNN7EXAMPLE".to_string(),
            "ASIAIOSFODNN7EXAMPLE".to_string(),
            format!("AIza{}", "Ab1_-".repeat(7)),
            format!("npm_{}", "Ab1".repeat(12)),
            format!("hf_{}", "Ab1".repeat(11)),
            format!("dckr_pat_{}", "Ab1-".repeat(6)),
            format!("arc_{}", "0123456789abcdef".repeat(4)),
            format!("SG.{}.{}", "Ab1_".repeat(5), "Cd2-".repeat(5)),
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.".to_string(),
        ];
        for t in &samples {
            assert_eq!(
                TOKEN.find(t).map(|m| m.as_str()),
                Some(t.as_str()),
                "{t} is a token, whole"
            );
            assert!(token_hint(t), "{t} holds a hint");
            assert_eq!(mask_text(t), MASK, "{t}");
        }
    }

    #[test]
    fn high_entropy_tells_random_strings_from_identifiers() {
        for random in [
            "Zk3pQ9vX2mL7wR4tB8nC1yH6",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "k8f3j2n9x7q1m5z0v4b6c2d8",
            "dGhpcyBpcyBhIHNlY3JldCB2YWx1ZTEyMw==",
        ] {
            assert!(high_entropy(random), "{random}");
            assert!(looks_like_credential(random), "{random}");
        }
        for plain in [
            // Too short, hexadecimal (IDs, digests), a UUID, paths, versions, identifiers.
            "Zk3pQ9vX2mL7wR4",
            "3f4e1b2c9a7d5e6f3f4e1b2c9a7d5e6f3f4e1b2c9a7d5e6f3f4e1b2c9a7d5e6f",
            "A035C8C19219BA821ECEA86B64E628F8D684696D",
            "0b7c6a1e-8d4f-4c2a-9b3e-5f6a7b8c9d0e",
            "/usr/local/sbin:/usr/local/bin:/usr/bin",
            "com.example.Application2Service",
            "1.2.3-alpine3.19-build20240101",
            "my-service-v2-production-east1",
            "America/Argentina/Buenos_Aires",
            "redis://cache:6379",
            "--max-old-space-size=4096",
            "production",
        ] {
            assert!(!looks_like_credential(plain), "{plain}");
        }
        assert!(looks_like_credential(
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
        ));
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
    fn known_values_are_masked_in_every_form_and_short_ones_ignored() {
        // A value with characters each encoding changes, and one without.
        let odd = "k3y+with/odd&<chars> \"q\"\\z";
        let plain = "plainkeyvalue42";
        let set = KnownSecrets::new([odd, plain, "short7!", "  "]);
        let json = serde_json::to_string(odd).unwrap();
        let forms = [
            odd.to_string(),
            json[1..json.len() - 1].to_string(),
            json[1..json.len() - 1]
                .replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026"),
            percent_encoding::utf8_percent_encode(odd, percent_encoding::NON_ALPHANUMERIC)
                .to_string(),
            lower_hex(
                &percent_encoding::utf8_percent_encode(odd, percent_encoding::NON_ALPHANUMERIC)
                    .to_string(),
            ),
            url::form_urlencoded::byte_serialize(odd.as_bytes()).collect(),
        ];
        for form in &forms {
            let text = format!("before {form} after");
            assert_eq!(set.mask(&text), format!("before {MASK} after"), "{form}");
        }
        assert_eq!(
            set.mask(&format!("x{plain}{plain}y")),
            format!("x{MASK}{MASK}y")
        );
        // Shorter than the minimum: ordinary words stay.
        assert_eq!(set.mask("short7! and more"), "short7! and more");
        assert!(matches!(set.mask("nothing here"), Cow::Borrowed(_)));
        assert!(KnownSecrets::new(["1234567"]).is_empty());
        // Values, keys and nested strings of JSON.
        let mut v = json!({"a": [format!("k={plain}")], plain: 1, "n": 5});
        assert!(set.mask_value(&mut v));
        assert_eq!(v, json!({"a": [format!("k={MASK}")], MASK: 1, "n": 5}));
        let mut clean = json!({"a": "b"});
        assert!(!set.mask_value(&mut clean));
    }

    #[test]
    fn a_held_value_is_masked_by_every_rule_until_its_last_hold_drops() {
        // A value no other test holds or writes (the held set is the process's).
        let key = "held-Zq81-unique-value-of-this-test";
        let text = format!("upstream said: {key}");
        assert_eq!(mask_text(&text), text);
        let first = hold_secret(key);
        let second = hold_secret(key);
        assert_eq!(mask_text(&text), format!("upstream said: {MASK}"));
        assert_eq!(mask_known(&text), format!("upstream said: {MASK}"));
        let v = redacted(&json!({"note": text, "id": key}), "container");
        assert_eq!(
            v,
            json!({"note": format!("upstream said: {MASK}"), "id": MASK})
        );
        let view = json!({"k": [key]});
        assert_eq!(*mask_known_view(&view), json!({"k": [MASK]}));
        drop(first);
        assert_eq!(mask_known(&text), format!("upstream said: {MASK}"));
        // Seen from another thread too.
        let other = std::thread::spawn({
            let text = text.clone();
            move || mask_known(&text).into_owned()
        });
        assert_eq!(other.join().unwrap(), format!("upstream said: {MASK}"));
        drop(second);
        assert_eq!(mask_known(&text), text);
        assert!(matches!(mask_known_view(&view), Cow::Borrowed(_)));
        // A short value gives a hold that masks nothing.
        let _short = hold_secret("abc1234");
        assert_eq!(mask_known("abc1234 x"), "abc1234 x");
    }

    #[test]
    fn ordinary_values_are_untouched() {
        let mut v = json!({"name": "web-1", "image": "nginx:1.27", "status": "Up 2 hours", "ports": [{"privatePort": 80}]});
        let before = v.clone();
        assert!(redact_for(&mut v, "").is_empty());
        assert_eq!(v, before);
    }
}
