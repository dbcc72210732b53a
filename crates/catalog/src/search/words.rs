//! Words as the search reads them: a query's plain words, stems, the parts of camelCase names,
//! and the shapes a typo or a word typed without vowels is matched by.

use tantivy::tokenizer::TextAnalyzer;

/// Query words kept (after phrases, function words and repeats); the rest are ignored.
pub(super) const MAX_WORDS: usize = 16;

/// A word in a form that describes a state (`stopped`, `running`), not an order.
pub(super) fn participle(word: &str) -> bool {
    word.len() > 4 && (word.ends_with("ed") || word.ends_with("ing"))
}

/// Text as indexed: the original words, plus the parts of camelCase words (`environmentId`
/// → `environmentId environment Id`). `_` and `.` already split (`en_stem` splits on every
/// non-alphanumeric character).
pub(super) fn index_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(text);
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let parts = camel_parts(word);
        if parts.len() > 1 {
            for p in parts {
                out.push(' ');
                out.push_str(p);
            }
        }
    }
    out
}

/// `environmentId` → [environment, Id]; `HTTPServer` → [HTTP, Server].
fn camel_parts(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (pos, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        if c.is_uppercase() && (prev.is_lowercase() || (prev.is_uppercase() && next_lower)) {
            parts.push(&word[start..pos]);
            start = pos;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// The query's plain words, lower case: every character that is not a letter or digit
/// separates words, so tantivy's query syntax (`"`, `:`, `(`, `*`, `^`, `~`…) cannot occur.
pub(super) fn plain_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4 * MAX_WORDS)
        .map(|w| w.to_lowercase())
        .collect()
}

/// The single stem of one word, if the analyzer keeps it.
pub(super) fn stem(analyzer: &mut TextAnalyzer, word: &str) -> Option<String> {
    stems(analyzer, word).into_iter().next()
}

pub(super) fn stems(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// Whether a letter is one a word typed in short drops (y stays: "actvty").
pub(super) fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// A word's consonants: its first letter, then its other letters but vowels, a letter that
/// repeats once the vowels are gone counted once ("secret" → "scrt", "address" → "adrs",
/// "status" → "sts", as "stts" typed is). Lower-case ASCII in, ASCII out.
pub(super) fn skeleton(word: &str) -> String {
    let mut out = String::new();
    for (i, c) in word.chars().enumerate() {
        if (i > 0 && is_vowel(c)) || out.ends_with(c) {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether two words are one edit apart (insertion, deletion, substitution or transposition).
pub(super) fn one_edit(a: &str, b: &str) -> bool {
    let (la, lb) = (a.chars().count(), b.chars().count());
    la.abs_diff(lb) <= 1 && lb >= 3 && strsim::osa_distance(a, b) == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_splits() {
        assert_eq!(camel_parts("environmentId"), vec!["environment", "Id"]);
        assert_eq!(camel_parts("HTTPServer"), vec!["HTTP", "Server"]);
        assert_eq!(camel_parts("plain"), vec!["plain"]);
        assert_eq!(camel_parts(""), vec![""]);
        assert!(index_text("containerId").contains("container Id"));
    }

    #[test]
    fn query_syntax_is_not_syntax() {
        assert_eq!(
            plain_words("id:\"x\" (a) AND*b^2 ~c"),
            vec!["id", "x", "a", "and", "b", "2", "c"]
        );
        assert!(plain_words("  \"\" :: () ").is_empty());
    }

    #[test]
    fn participles_describe_states() {
        assert!(participle("stopped") && participle("running") && participle("deployed"));
        assert!(!participle("stop") && !participle("run") && !participle("red"));
    }

    #[test]
    fn skeletons_drop_vowels_and_doubles() {
        assert_eq!(skeleton("secret"), "scrt");
        assert_eq!(skeleton("activ"), "actv");
        assert_eq!(skeleton("address"), "adrs");
        assert_eq!(skeleton("network"), "ntwrk");
        assert_eq!(skeleton("lst"), "lst");
    }

    #[test]
    fn one_edit_apart() {
        assert!(one_edit("restrat", "restart"));
        assert!(one_edit("netwrok", "network"));
        assert!(!one_edit("restart", "restart"));
        assert!(!one_edit("abc", "xyz"));
    }
}
