//! The one redactor: what counts as a secret, and how it is masked, for every place that
//! shows Arcane's data or a request (safe-mode previews, resources, the text of results,
//! error texts). `structuredContent` never goes through it: it keeps Arcane's values.
//!
//! What is masked:
//! * every environment variable value: `KEY=VALUE` strings in arrays under keys such as `env`,
//!   `Env`, `environment`, and every value of a map under those keys;
//! * values of fields whose name says secret ([`is_secret_name`]: password, secret, token, API
//!   key, credential, private key, cookie, authorization, basic-auth labels…); a `{key|name,
//!   value}` pair whose name says secret or that is marked `isSecret`;
//! * in multi-line text under such fields or `envContent`-like fields (`.env` files), the value
//!   of each `KEY=VALUE` line; in compose text, the value of `KEY: VALUE` / `KEY=VALUE` lines
//!   whose key says secret;
//! * in any text: the password of a URL (`scheme://user:PASSWORD@host`, up to the last `@`)
//!   and a web URL's lone user (`https://TOKEN@host`), the value of a secret-named
//!   command-line flag (`--db-password=…`, `--token …`, also as the next item of an argument
//!   array) and of a secret-named `KEY=VALUE` word (a quoted value whole, keys inside a
//!   connection string too), a secret-named key of JSON written in text, a bearer token;
//! * for secret domains (`swarm_secret`), the secret's `data`.
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

/// Keys whose string value is a whole `.env` file.
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
/// use arcane_engine::is_secret_name;
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
    EnvFile,
    TextDoc,
    Other,
}

fn name_info(name: &str) -> NameInfo {
    let n = norm(name);
    let kind = if ENV_KEYS.contains(&n.as_str()) {
        KeyKind::Env
    } else if ENV_FILE_KEYS.contains(&n.as_str()) {
        KeyKind::EnvFile
    } else if TEXT_DOC_KEYS.contains(&n.as_str()) {
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

    /// Records the pointer of the node being walked (plus `suffix`) as masked.
    fn note(&mut self, suffix: Option<&str>) {
        if let Some(masked) = &mut self.masked {
            let mut p = self.path.clone();
            if let Some(s) = suffix {
                p.push('/');
                p.push_str(&escape_pointer(s));
            }
            masked.push(p);
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
                let env_file = kind == KeyKind::EnvFile;
                let doc = kind == KeyKind::TextDoc || s.contains('\n');
                let new = mask_string(s, env_file, doc)?;
                self.note(None);
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
                        self.note(None);
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
                        || ["isSecret", "secret", "sensitive"]
                            .iter()
                            .any(|k| map.get(*k) == Some(&Value::Bool(true))));
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
                        self.note(None);
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

    /// Environment variables: every value is masked, whatever its name.
    fn mask_env(&mut self, value: &Value) -> Option<Value> {
        match value {
            Value::Array(items) => {
                let mut out: Option<Vec<Value>> = None;
                for (i, item) in items.iter().enumerate() {
                    let len = self.enter(Seg::Index(i));
                    let new = match item {
                        Value::String(s) => match s.split_once('=') {
                            Some((k, v)) if !v.is_empty() => {
                                self.note(None);
                                Some(Value::String(format!("{k}={MASK}")))
                            }
                            _ => None,
                        },
                        // [{name, value}] shapes.
                        Value::Object(o) => match o.get("value") {
                            Some(Value::String(v)) if !v.is_empty() => {
                                self.note(Some("value"));
                                let mut o = o.clone();
                                o.insert("value".into(), Value::String(MASK.to_string()));
                                Some(Value::Object(o))
                            }
                            _ => None,
                        },
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
                    let new = if matches!(v, Value::Null) || v.as_str() == Some("") {
                        None
                    } else {
                        self.note(Some(k));
                        Some(Value::String(MASK.to_string()))
                    };
                    keep_or_replace(&mut out, map.values(), i, v, new);
                }
                out.map(|values| Value::Object(map.keys().cloned().zip(values).collect()))
            }
            Value::String(s) if !s.is_empty() => {
                let new = mask_string(s, true, true)?;
                self.note(None);
                Some(Value::String(new))
            }
            _ => None,
        }
    }
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

/// Masks the secrets inside one string; `None` when nothing changed. `env_file`: every
/// `KEY=VALUE` line is a variable (a `.env` file); `doc`: a document whose secret-named
/// `KEY: VALUE` / `KEY=VALUE` lines are masked (compose text).
fn mask_string(s: &str, env_file: bool, doc: bool) -> Option<String> {
    let lines = if env_file || doc {
        mask_lines(s, env_file)
    } else {
        None
    };
    let base = lines.as_deref().unwrap_or(s);
    match mask_text(base) {
        Cow::Owned(t) => Some(t),
        Cow::Borrowed(_) => lines,
    }
}

/// A downloaded text file with its secrets masked: every variable of a `.env` file, the
/// secret-named lines of other documents, and secrets inside any line.
pub fn mask_document<'a>(text: &'a str, file_name: &str) -> Cow<'a, str> {
    let name = file_name.to_ascii_lowercase();
    let env_file = name == ".env" || name.ends_with(".env") || name.starts_with(".env.");
    match mask_string(text, env_file, true) {
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
static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(^|\s)(--?[A-Za-z][A-Za-z0-9_.\-]*)(=(?:"[^"\n]*"|'[^'\n]*'|\S+)|[ \t]+(?:"[^"\n]*"|'[^'\n]*'|[^\s\-"']\S*))"#,
    )
    .expect("valid regex")
});
/// Where a `KEY=` word starts; its value is found by [`value_end`].
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|[\s;,&|(?])([A-Za-z_][A-Za-z0-9_.\-]*)=").expect("valid regex")
});
/// A secret-named key of JSON written inside text (a structured log line):
/// `"password": "value"`.
static JSON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""([A-Za-z_][A-Za-z0-9_.\-]*)"(\s*:\s*)"((?:[^"\\\n]|\\.)*)""#)
        .expect("valid regex")
});
/// A bearer token (`Authorization: Bearer eyJ…`).
/// `key: value` in free text (a log line, an error): YAML-ish settings printed on one line.
/// The key stands alone (not quoted: JSON pairs are [`JSON_PAIR`]'s); the value is one quoted
/// string or runs to the next blank or separator.
static COLON_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(^|[\s{,;(\[])([A-Za-z_][A-Za-z0-9_.\-]*)([ \t]*:[ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s,;)}\]"']+)"#,
    )
    .expect("valid regex")
});
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b((?:bearer|basic)[ \t]+)([A-Za-z0-9\-._~+/]+=*)").expect("valid regex")
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

/// Masks secrets written inside free text: a URL's password, a secret-named flag's value, a
/// secret-named `KEY=VALUE` word. Borrows when nothing is found.
///
/// ```
/// use arcane_engine::mask_text;
/// assert_eq!(mask_text("postgres://app:hunter2@db/x"), "postgres://app:********@db/x");
/// assert_eq!(mask_text("run --db-password=hunter2 --token abc -v"), "run --db-password=******** --token ******** -v");
/// assert_eq!(mask_text("env API_TOKEN=abc make"), "env API_TOKEN=******** make");
/// assert_eq!(mask_text("/api/x?token=abc&limit=5"), "/api/x?token=********&limit=5");
/// assert_eq!(mask_text("--name web --port 80"), "--name web --port 80");
/// ```
pub fn mask_text(s: &str) -> Cow<'_, str> {
    mask_text_with(s, true)
}

/// [`mask_text`]; `skip` lets a rule be skipped when the text lacks what it looks for (the
/// tests compare both ways).
fn mask_text_with(s: &str, skip: bool) -> Cow<'_, str> {
    if !s.contains('@')
        && !s.contains('-')
        && !s.contains('=')
        && !s.contains(':')
        && !s
            .as_bytes()
            .windows(6)
            .any(|w| w.eq_ignore_ascii_case(b"bearer"))
    {
        return Cow::Borrowed(s);
    }
    let mut text = Cow::Borrowed(s);
    if !skip || s.contains("://") {
        text = apply(text, mask_url_credentials);
    }
    // The other rules mask a value only after a secret name (or a bearer/basic scheme word):
    // text without one of their words (most values: IDs, images, dates, states) has nothing
    // for them. Masking only writes `********`, so it never makes such a word.
    if !skip || SECRET_HINT.is_match(s) {
        text = apply(text, |t| {
            FLAG.replace_all(t, |c: &regex::Captures<'_>| {
                let (lead, flag, rest) = (&c[1], &c[2], &c[3]);
                // `rest` is `=value` or the blanks and the next word (or quoted words).
                let at = rest
                    .find(|ch: char| ch != '=' && ch != ' ' && ch != '\t')
                    .unwrap_or(rest.len());
                let (sep, val) = rest.split_at(at);
                if is_secret_name(flag) && val != MASK {
                    format!("{lead}{flag}{sep}{MASK}")
                } else {
                    c[0].to_string()
                }
            })
        });
        text = apply(text, mask_assignments);
        text = apply(text, |t| {
            JSON_PAIR.replace_all(t, |c: &regex::Captures<'_>| {
                if is_secret_name(&c[1]) && &c[3] != MASK && !c[3].is_empty() {
                    format!("\"{}\"{}\"{MASK}\"", &c[1], &c[2])
                } else {
                    c[0].to_string()
                }
            })
        });
        text = apply(text, |t| {
            COLON_PAIR.replace_all(t, |c: &regex::Captures<'_>| {
                let val = c[4].trim_matches(|ch| ch == '"' || ch == '\'');
                // `Authorization: Bearer …`: the scheme word stays, the credential after it is
                // masked by the bearer rule below.
                let scheme =
                    val.eq_ignore_ascii_case("bearer") || val.eq_ignore_ascii_case("basic");
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
    }
    match text {
        // A rule that matched without masking rewrote the text unchanged.
        Cow::Owned(t) if t != s => Cow::Owned(t),
        _ => Cow::Borrowed(s),
    }
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
/// `&`, or is one quoted string (`PASSWORD="two words"`); keys inside a value are found too
/// (`Server=db;Password=…` in a connection string), and a secret's value is masked whole,
/// whatever keys it seems to hold. One pass, linear in the text.
fn mask_assignments(s: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0; // bytes of `s` already in `out`
    let mut masked_to = 0; // end of the last masked value
    for c in ASSIGNMENT_KEY.captures_iter(s) {
        let whole = c.get(0).expect("match");
        let key = &c[2];
        let start = whole.end();
        if start < masked_to || !is_secret_name(key) {
            continue;
        }
        let end = value_end(s, start);
        let val = &s[start..end];
        if val.is_empty() || val == MASK || is_padding(val) {
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
/// same line), else at the next blank or `&`.
fn value_end(s: &str, start: usize) -> usize {
    let rest = &s[start..];
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        // Scans only to the closing quote or the line's end, so that many quoted values on
        // one long line stay linear.
        if let Some(close) = rest[1..].find([q, '\n'])
            && rest.as_bytes()[1 + close] == q as u8
        {
            return start + close + 2;
        }
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

/// A short, non-secret fingerprint of a credential for logs, cache keys and the audit log: the
/// first 12 hex digits of its SHA-256 (enough to tell users apart, useless to recover the key).
pub fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
        assert_eq!(mask_document(pem, "ca.pem"), pem);
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
            {"id": "c", "env": ["A=1"]},
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
            json!({"id": "c", "env": [format!("A={MASK}")]})
        );
        // The original is untouched.
        assert_eq!(secret["items"][2]["env"][0], "A=1");
    }

    #[test]
    fn secrets_deep_in_a_value_are_masked_with_their_pointers() {
        let mut v = json!({
            "a": {"b": [{"c": {"apiToken": "t1", "plain": "p"}}]},
            "labels": {"com.example.db-password": "pw1", "app": "web"},
            "config": {"Env": ["X=1", "Y"], "Cmd": ["serve", "--token", "t2", "-v"]},
            "vars": [{"name": "SMTP_PASSWORD", "value": "pw2"}, {"name": "MODE", "value": "x"}],
            "list": [{"secret": "s1", "id": 1}, {"secret": "", "id": 2}],
            "log": "12:00 connecting to postgres://app:pw3@db/x with token=t3",
            "a/b~c": {"password": "pw4"},
        });
        let pointers = redact_for(&mut v, "container");
        let text = v.to_string();
        for secret in ["t1", "pw1", "X=1", "t2", "pw2", "s1", "pw3", "t3", "pw4"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        for kept in ["\"p\"", "web", "\"Y\"", "serve", "-v", "MODE", "\"x\""] {
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
            "[a-zA-Z_.:=@ \\-\"'/]{0,12}",
        ];
        let text = prop::collection::vec(word, 0..6).prop_map(|w| w.join(" "));
        proptest!(ProptestConfig::with_cases(2000), |(t in text)| {
            prop_assert_eq!(mask_text_with(&t, true), mask_text_with(&t, false));
        });
    }

    #[test]
    fn ordinary_values_are_untouched() {
        let mut v = json!({"name": "web-1", "image": "nginx:1.27", "status": "Up 2 hours", "ports": [{"privatePort": 80}]});
        let before = v.clone();
        assert!(redact_for(&mut v, "").is_empty());
        assert_eq!(v, before);
    }
}
