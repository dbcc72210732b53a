//! Text documents (a `.env` file, compose text, a downloaded configuration): their `KEY=VALUE`
//! and `KEY: VALUE` lines judged as variables, then the free-text rules over the whole.

use std::borrow::Cow;

use crate::known::MASK;
use crate::names::is_secret_name;
use crate::pairs::{closing_in, is_padding};
use crate::text::{looks_like_credential, mask_text};

/// Masks the secrets inside one string; `None` when nothing changed. `doc`: a document (a
/// `.env` file, compose text) whose `KEY=VALUE` / `KEY: VALUE` lines are judged as variables
/// ([`mask_lines`]).
pub(crate) fn mask_string(s: &str, doc: bool) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_padding_is_not_a_value() {
        // Certificate lines end in `=`; a hump such as `xKeyZ` must not make them variables.
        let pem =
            "-----BEGIN CERTIFICATE-----\nMIIBxKeyZtokenAbc==\nQUJD=\n-----END CERTIFICATE-----\n";
        assert_eq!(mask_document(pem), pem);
        assert_eq!(mask_text("x API_KEY== y"), "x API_KEY== y");
    }
}
