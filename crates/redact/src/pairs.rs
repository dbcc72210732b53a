//! A secret's name and its value written in text: command-line flags, `KEY=VALUE` words, keys of
//! JSON written in text, prose (`password hunter2`), pairs percent-encoded once more, and the
//! programs whose password flag has no secret name (`curl -u`, `redis-cli -a`, `mysql -p`).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::known::MASK;
use crate::names::{is_secret_name, norm};

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
pub(crate) fn mask_keyword_values(t: &str) -> Cow<'_, str> {
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

pub(crate) fn mask_percent_pairs(t: &str) -> Cow<'_, str> {
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
pub(crate) static CURL_USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"\b(?:curl|wget)\b[^\n]*?[\s"'](?:-[uU][ \t]*|--(?:user|proxy-user|http-user)(?:[ \t]+|=))"#,
        r#"(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"'\-][^\s"']*)"#,
    ))
    .expect("valid regex")
});
/// `redis-cli -a password` after `redis-cli` on the line (`--pass` is a secret-named flag).
pub(crate) static REDIS_AUTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\bredis-cli\b[^\n]*?[\s"']-a[ \t]+(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s"'\-][^\s"']*)"#,
    )
    .expect("valid regex")
});
/// MySQL's and MariaDB's clients' `-pPASSWORD` (the password written against the flag; `-p`
/// alone asks for it), after the program's name on the line.
pub(crate) static MYSQL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\b(?:mysql[a-z]*|mariadb(?:-[a-z]+)?)\b[^\n]*?[\s"']-p(?P<val>[^\s"']+)"#)
        .expect("valid regex")
});

/// Masks, in each match of `rule`, the part of its `val` group that `span` picks (a range of
/// the value; `None` to keep it).
pub(crate) fn mask_after<'t>(
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
pub(crate) fn whole_span(v: &str) -> Option<std::ops::Range<usize>> {
    Some(unquoted(v))
}

/// The password of `user:password` (after the first `:`), inside its quotes; `None` without
/// one (`curl -u user` asks for it).
pub(crate) fn user_password_span(v: &str) -> Option<std::ops::Range<usize>> {
    let r = unquoted(v);
    let colon = v[r.clone()].find(':')?;
    Some(r.start + colon + 1..r.end)
}

fn unquoted(v: &str) -> std::ops::Range<usize> {
    let quoted = v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    if quoted { 1..v.len() - 1 } else { 0..v.len() }
}

/// Whether the value just read after `key` is the scheme word of an `Authorization` credential
/// that [`AUTH_SCHEME`] masked (`rest` follows the value: blanks, then the mask).
pub(crate) fn scheme_before_mask(key: &str, rest: &str) -> bool {
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
pub(crate) fn mask_flags(t: &str) -> Cow<'_, str> {
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

/// Masks the value of each secret-named key of JSON or a literal written in text
/// ([`JSON_PAIR`]), in the quotes it was written with.
pub(crate) fn mask_json_pairs(t: &str) -> Cow<'_, str> {
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

/// Masks the value of each secret-named `KEY=VALUE` word. A value runs to the next blank or
/// `&`, or is one quoted string (`PASSWORD="two words"`), or, when the key starts a quoted
/// string (`"DB_PASSWORD=x y"` in a JSON list, `-e"K=V"`), runs to that string's end; keys
/// inside a value are found too (`Server=db;Password=…` in a connection string), and a
/// secret's value is masked whole, whatever keys it seems to hold. One pass, linear in the
/// text.
pub(crate) fn mask_assignments(s: &str) -> Cow<'_, str> {
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
pub(crate) fn is_padding(v: &str) -> bool {
    v.trim_end_matches('\r').bytes().all(|b| b == b'=')
}

/// Where in `line` the closing quote `q` is (for `"`, the first not escaped by a backslash).
pub(crate) fn closing_in(line: &str, q: char) -> Option<usize> {
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
