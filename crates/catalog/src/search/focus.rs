//! A request as a person writes it (an issue's body, a question with its story): the evidence
//! — links, paths, versions, code and quoted error messages — is set aside, and the sentence
//! that asks comes first, the others read as its situation (docs/search.md, "Long requests and symptoms").

use std::borrow::Cow;

use super::lexicon::Lexicon;
use super::words::plain_words;

/// A query made ready to read: its text (the asking sentences first) and the index of its
/// first plain word that belongs to the situation (`usize::MAX`: none does).
pub(super) struct Focus<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) situation_from: usize,
}

impl<'a> Focus<'a> {
    /// A text read whole, as it is (an ask, or a query with nothing to set apart).
    pub(super) fn whole(text: impl Into<Cow<'a, str>>) -> Focus<'a> {
        Focus {
            text: text.into(),
            situation_from: usize::MAX,
        }
    }
}

/// Words a text needs before its sentences are told apart into the request and its situation
/// (a short request is one sentence however it is punctuated).
const STORY_WORDS: usize = 12;

/// A quoted span of at most this many words, with no colon, names something (a button, a
/// page, a setting); a longer one is a message.
const NAME_WORDS: usize = 4;

/// Reads `query` as a person wrote it: evidence aside ([`set_evidence_aside`]); then, in a text
/// of several sentences of which some ask (a question mark, a request or procedure phrase of
/// the vocabulary) and some do not, the asking ones first and the rest the situation.
pub(super) fn focus(lexicon: &Lexicon, query: &str) -> Focus<'static> {
    let text = set_evidence_aside(query);
    let parts = sentences(&text);
    if parts.len() < 2 || plain_words(&text).len() < STORY_WORDS {
        return Focus::whole(text);
    }
    let asks: Vec<bool> = parts.iter().map(|s| asks(lexicon, s)).collect();
    if asks.iter().all(|a| *a) || !asks.iter().any(|a| *a) {
        return Focus::whole(text);
    }
    let (mut goal, mut story) = (String::new(), String::new());
    for (s, a) in parts.iter().zip(&asks) {
        let to = if *a { &mut goal } else { &mut story };
        to.push_str(s.trim());
        to.push(' ');
    }
    let situation_from = plain_words(&goal).len();
    Focus {
        text: Cow::Owned(format!("{goal}{story}")),
        situation_from,
    }
}

/// Whether a sentence asks: it ends with a question mark, or holds a request phrase ("could
/// you", "I would like to") or a procedure phrase ("how do I", "is there a way to").
fn asks(lexicon: &Lexicon, sentence: &str) -> bool {
    if sentence.trim_end().ends_with('?') {
        return true;
    }
    let words = plain_words(sentence);
    (0..words.len()).any(|i| {
        lexicon
            .requests
            .iter()
            .chain(&lexicon.procedures)
            .any(|p| words[i..].starts_with(p))
    })
}

/// The sentences of a text: each ends at `.`, `?` or `!` before a space, or at a line break
/// (a dot inside a word — `compose.yaml`, `e.g` — ends none).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if c == '\n' || (matches!(c, '.' | '?' | '!') && next_is_space) {
            let end = i + c.len_utf8();
            if !text[start..end].trim().is_empty() {
                out.push(&text[start..end]);
            }
            start = end;
        }
    }
    if !text[start..].trim().is_empty() {
        out.push(&text[start..]);
    }
    out
}

/// Evidence is not what is asked for: code (between backticks) and quoted messages become
/// asides (in parentheses, which the search counts less), and so do file paths (what they
/// name is a clue, not the request); a short quoted name or command stays as words; links and
/// version numbers are dropped (a sentence's closing mark kept).
fn set_evidence_aside(query: &str) -> String {
    let mut spans = String::with_capacity(query.len() + 8);
    let mut rest = query;
    while let Some(open) = rest.find(['`', '"', '\u{201c}']) {
        let quote = rest[open..].chars().next().unwrap_or('"');
        let run = if quote == '`' {
            rest[open..].chars().take_while(|c| *c == '`').count()
        } else {
            1
        };
        let inner_start = open + run * quote.len_utf8();
        let close = match quote {
            '`' => rest[inner_start..].find('`'),
            _ => rest[inner_start..].find(['"', '\u{201d}']),
        };
        let Some(close) = close else {
            break;
        };
        let inner = &rest[inner_start..inner_start + close];
        let after = rest[inner_start + close..]
            .char_indices()
            .find(|(_, c)| !matches!(c, '`' | '"' | '\u{201d}'))
            .map_or(rest.len(), |(i, _)| inner_start + close + i);
        spans.push_str(&rest[..open]);
        let name = !inner.contains(':') && inner.split_whitespace().count() <= NAME_WORDS;
        if name {
            spans.push_str(inner);
        } else {
            // Its own brackets would end the aside early.
            let flat: String = inner
                .chars()
                .map(|c| {
                    if matches!(c, '(' | ')' | '[' | ']') {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            spans.push_str(" (");
            spans.push_str(&flat);
            spans.push_str(") ");
        }
        rest = &rest[after..];
    }
    spans.push_str(rest);
    let mut out = String::with_capacity(spans.len());
    for (i, line) in spans.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let kept: Vec<String> = line
            .split(' ')
            .map(|token| match evidence(token) {
                Some(Evidence::Dropped) => closing_mark(token).to_string(),
                Some(Evidence::Path) => format!(
                    "({}){}",
                    token
                        .trim_end_matches(['.', '?', '!', ',', ';', ':'])
                        .replace(['(', ')', '[', ']'], " "),
                    closing_mark(token)
                ),
                None => token.to_string(),
            })
            .collect();
        out.push_str(&kept.join(" "));
    }
    out
}

enum Evidence {
    /// A link or a version number.
    Dropped,
    /// A file path.
    Path,
}

/// What kind of evidence a token is, if any.
fn evidence(token: &str) -> Option<Evidence> {
    let t = token
        .trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | ',' | ';' | '\'' | '<' | '>'));
    let t = t.trim_end_matches(['.', '?', '!', ':']);
    if t.contains("://") || t.starts_with("www.") {
        return Some(Evidence::Dropped);
    }
    let rooted = ["/", "~/", "./", "\\\\"].iter().any(|p| t.starts_with(p));
    if (rooted && t.len() > 1) || t.matches('/').count() >= 2 {
        return Some(Evidence::Path);
    }
    // 1.11.2, v2.1.0, 17.03.1-ce: digits, a dot, digits.
    let v = t.strip_prefix(['v', 'V']).unwrap_or(t);
    let mut parts = v.splitn(2, '.');
    let major = parts.next().unwrap_or_default();
    let minor: String = parts
        .next()
        .unwrap_or_default()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let version =
        !major.is_empty() && major.chars().all(|c| c.is_ascii_digit()) && !minor.is_empty();
    version.then_some(Evidence::Dropped)
}

/// What a dropped token leaves: the mark that closed its sentence, if any.
fn closing_mark(token: &str) -> &str {
    match token.trim_end_matches([')', ']', '\'', '"']).chars().last() {
        Some('?') => "?",
        Some('!') => "!",
        Some('.') => ".",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_set_aside() {
        let t = set_evidence_aside(
            "upgrade from 1.11.2 to v1.11.3 fails, see https://x.io/a/b and /var/lib/docker/overlay2/.",
        );
        assert!(!t.contains("11") && !t.contains("http"), "{t}");
        assert!(
            t.contains("upgrade from") && t.trim_end().ends_with('.'),
            "{t}"
        );
        assert!(t.contains("(/var/lib/docker/overlay2/)."), "{t}");
        // A quoted message is an aside; a quoted name stays words; code is an aside.
        let t = set_evidence_aside(
            "clicking \"Add Sync\" says \"Failed to create GitOps sync: bad (x)\" and `docker ps` \
             hangs; ```docker compose -f a.yml up -d --build```",
        );
        assert!(t.contains("clicking Add Sync says"), "{t}");
        assert!(
            t.contains(" (Failed to create GitOps sync: bad  x ) "),
            "{t}"
        );
        assert!(t.contains("and docker ps hangs"), "{t}");
        assert!(
            t.contains(" (docker compose -f a.yml up -d --build) "),
            "{t}"
        );
        // Words with a slash or a dot inside stay.
        let t = set_evidence_aside("start/stop the compose.yaml stack, e.g. web");
        assert_eq!(t, "start/stop the compose.yaml stack, e.g. web");
        // An unclosed quote is left as typed.
        assert_eq!(set_evidence_aside("say \"hi"), "say \"hi");
    }

    #[test]
    fn sentences_end_at_their_marks() {
        assert_eq!(
            sentences("How do I prune? I tried v1.2 of compose.yaml. It failed!\nthen"),
            vec![
                "How do I prune?",
                " I tried v1.2 of compose.yaml.",
                " It failed!",
                "\n",
                "then"
            ]
            .into_iter()
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
        );
    }
}
