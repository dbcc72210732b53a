//! Free text: the rules of [`mask_text`] in their order (held values, a URL's password, tokens
//! of a known shape, PEM keys, JSON escaped inside text, then the name-and-value rules of
//! `pairs.rs`), and whether a value looks like a credential by itself.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::known::{MASK, mask_known};
use crate::names::is_secret_name;
use crate::pairs::{
    CURL_USER, MYSQL_PASSWORD, REDIS_AUTH, mask_after, mask_assignments, mask_flags,
    mask_json_pairs, mask_keyword_values, mask_percent_pairs, scheme_before_mask,
    user_password_span, whole_span,
};

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

static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    // The password runs to the last `@` of the authority: a password with a raw `@`
    // (`u:p@ss@host`, which parsers read the same way) is masked whole.
    Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/?#@]*:)([^\s/?#]+)@").expect("valid regex")
});
/// A web URL whose user info is a single word: how access tokens are put in clone URLs
/// (`https://<token>@github.com/…`).
static URL_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(https?://)([^\s:/?#@]+)@").expect("valid regex"));

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

#[cfg(test)]
mod tests {
    use crate::names::{SECRET_FRAGMENTS, SECRET_WORDS};

    use super::*;

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
}
