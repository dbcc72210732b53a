//! Judging by name: whether a field, variable, header, label or flag name says its value is
//! secret, and what kind of text its value is (variables, a `.env` file, a document), remembered
//! per thread.

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
pub(crate) const SECRET_WORDS: &[&str] = &[
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
pub(crate) const SECRET_FRAGMENTS: &[&str] = &[
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

pub(crate) fn norm(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The words of a name: split at non-alphanumerics and camelCase humps, lower-cased.
pub(crate) fn words(name: &str) -> Vec<String> {
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

/// What a field name means to the redactor, decided once per name and thread.
#[derive(Clone, Copy)]
pub(crate) struct NameInfo {
    /// [`is_secret_name`].
    pub(crate) secret: bool,
    /// Where its value's kind of text is decided: variables, a `.env` file, a document.
    pub(crate) kind: KeyKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
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
pub(crate) fn name_info_cached(name: &str) -> NameInfo {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
