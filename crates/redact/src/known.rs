//! Masking by value: the credentials the process holds (its own, a caller's key over HTTP),
//! found in any of their encodings; the mask every rule writes (here, at the bottom, since every
//! other module writes it); a credential's fingerprint.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde_json::Value;

/// What replaces a masked value, everywhere.
pub const MASK: &str = "********";

/// A short, non-secret fingerprint of a credential for logs, cache keys and the audit log: the
/// first 12 hex digits of its SHA-256 (enough to tell users apart, useless to recover the key).
pub fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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
/// ([`KnownSecrets`]); nothing else. [`mask_text`](crate::mask_text) does this first; this alone is for text
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
    use serde_json::json;

    use crate::json::redacted;
    use crate::text::mask_text;

    use super::*;

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
}
