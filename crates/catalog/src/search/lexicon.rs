//! The vocabulary (`overrides/vocabulary.yaml`, `overrides/search.yaml`) compiled to stems, and
//! what it says of a query's words: phrases rewritten, synonyms, the situation told before the
//! request, negations and asides, questions.

use std::collections::{HashMap, HashSet};

use tantivy::tokenizer::TextAnalyzer;

use super::words::{plain_words, stem, stems};
use crate::vocabulary::Vocabulary;

/// Query words a vocabulary phrase may skip between its own words (function words only).
const PHRASE_GAP: usize = 2;

/// Words a query needs before the words told ahead of its request ("…, can you show me…")
/// count as the situation rather than the request.
const CONTEXT_WORDS: usize = 12;

/// Words after a negation that it covers at most (within its clause).
const NEGATION_SPAN: usize = 5;

/// Function words that may lead a question's interrogative ("can you tell me which…", "I
/// want to know how much…").
const QUESTION_LEAD_IN: usize = 5;

/// A query word: (form typed, stem, for a word of a rewritten phrase: (the phrase typed, its
/// stems)).
pub(super) type Token = (String, String, Option<(String, Vec<String>)>);

/// The vocabulary, compiled to stems.
#[derive(Debug, Default)]
pub(super) struct Lexicon {
    /// Stem of a word → (stem, form) of the words it may also mean.
    pub(super) synonyms: HashMap<String, Vec<(String, String)>>,
    /// (stems of the phrase, words it stands for), longest phrase first.
    pub(super) phrases: Vec<(Vec<String>, Vec<String>)>,
    /// Stems of function words.
    pub(super) function: HashSet<String>,
    /// Stems of words that start a qualifier.
    pub(super) qualifiers: HashSet<String>,
    /// Phrases (lower-cased words) that open the request after a context.
    pub(super) requests: Vec<Vec<String>>,
    /// Word opening a yes/no question (lower-cased) → stems of the words it asks for.
    pub(super) questions: HashMap<String, Vec<String>>,
    /// Words (lower-cased) that open a question about what is: what, which, why, how…
    pub(super) interrogatives: HashSet<String>,
    /// Phrases (lower-cased words) that ask how or whether to do something: "how do i".
    pub(super) procedures: Vec<Vec<String>>,
    /// Phrases (lower-cased words) that negate what follows: "not", "instead of".
    pub(super) negations: Vec<Vec<String>>,
    /// Stem of a request verb → (stem, form) of the action-name words it asks for.
    pub(super) verbs: HashMap<String, Vec<(String, String)>>,
    /// Stem of a symptom word → (stem, form) of the action-name words that look into it.
    pub(super) symptoms: HashMap<String, Vec<(String, String)>>,
}

impl Lexicon {
    /// The synonyms written for the very form typed (none reached through the stem).
    pub(super) fn typed_synonyms(&self, word: &str) -> &[(String, String)] {
        self.synonyms
            .get(word)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The synonyms of a word, by the form typed, else by its stem, else by the form typed
    /// without a plural `s` (the stemmer keeps some plurals: `cves`).
    pub(super) fn synonyms_of(&self, stem: &str, word: &str) -> &[(String, String)] {
        // The form typed first: words sharing a stem may differ in meaning (configure,
        // configuration).
        self.synonyms
            .get(word)
            .or_else(|| self.synonyms.get(stem))
            .or_else(|| word.strip_suffix('s').and_then(|w| self.synonyms.get(w)))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The words told as the situation before the request: in a query of at least
    /// [`CONTEXT_WORDS`] words, those before the last request opener ("can you", "I would like
    /// to") that are not repeated after it.
    pub(super) fn context(&self, words: &[String]) -> HashSet<String> {
        if words.len() < CONTEXT_WORDS {
            return HashSet::new();
        }
        let start = (1..words.len())
            .rev()
            .find(|&i| self.requests.iter().any(|r| words[i..].starts_with(r)));
        let Some(start) = start else {
            return HashSet::new();
        };
        let after: HashSet<&String> = words[start..].iter().collect();
        words[..start]
            .iter()
            .filter(|w| !after.contains(w))
            .cloned()
            .collect()
    }

    /// Words (lower-cased) negated or told aside: those after a negation up to the end of its
    /// clause (a punctuation mark, or [`NEGATION_SPAN`] words), and those in parentheses —
    /// unless the same word is also said outside one ("not the web container, the db
    /// container": *container* is still wanted).
    pub(super) fn negated(&self, query: &str) -> HashSet<String> {
        // Words with the index of their clause; parentheses are clauses of their own.
        let mut items: Vec<(String, usize, bool)> = Vec::new();
        let mut clause = 0;
        let mut depth = 0usize;
        let mut cur = String::new();
        for c in query.chars().chain(std::iter::once(' ')) {
            if c.is_alphanumeric() {
                cur.extend(c.to_lowercase());
                continue;
            }
            if !cur.is_empty() {
                items.push((std::mem::take(&mut cur), clause, depth > 0));
            }
            match c {
                '(' | '[' => {
                    depth += 1;
                    clause += 1;
                }
                ')' | ']' => {
                    depth = depth.saturating_sub(1);
                    clause += 1;
                }
                ',' | ';' | '.' | ':' | '!' | '?' => clause += 1,
                _ => {}
            }
        }
        let words: Vec<&str> = items.iter().map(|i| i.0.as_str()).collect();
        let mut out = vec![false; items.len()];
        for (i, item) in items.iter().enumerate() {
            if item.2 {
                out[i] = true;
            }
            for n in &self.negations {
                if words[i..].starts_with(&n.iter().map(String::as_str).collect::<Vec<_>>()) {
                    let from = i + n.len();
                    for j in from..(from + NEGATION_SPAN).min(items.len()) {
                        if items[j].1 != item.1 {
                            break;
                        }
                        out[j] = true;
                    }
                }
            }
        }
        let said: HashSet<&str> = items
            .iter()
            .zip(&out)
            .filter(|(_, n)| !**n)
            .map(|(i, _)| i.0.as_str())
            .collect();
        items
            .iter()
            .zip(&out)
            .filter(|(i, n)| **n && !said.contains(i.0.as_str()))
            .map(|(i, _)| i.0.clone())
            .collect()
    }

    pub(super) fn compile(v: &Vocabulary, analyzer: &mut TextAnalyzer) -> Lexicon {
        let mut lex = Lexicon {
            negations: v
                .negations
                .iter()
                .map(|p| plain_words(p))
                .filter(|p| !p.is_empty())
                .collect(),
            ..Lexicon::default()
        };
        for (map, words) in [(&mut lex.verbs, &v.verbs), (&mut lex.symptoms, &v.symptoms)] {
            for (word, kinds) in words {
                let Some(key) = stem(analyzer, &word.to_lowercase()) else {
                    continue;
                };
                let list = map.entry(key).or_default();
                for k in kinds {
                    let raw = k.to_lowercase();
                    if let Some(s) = stem(analyzer, &raw)
                        && !list.iter().any(|(e, _)| *e == s)
                    {
                        list.push((s, raw));
                    }
                }
            }
        }
        for (word, alts) in &v.synonyms {
            let word = word.to_lowercase();
            let Some(key) = stem(analyzer, &word) else {
                continue;
            };
            let mut list: Vec<(String, String)> = Vec::new();
            for alt in alts {
                let raw = alt.to_lowercase();
                if let Some(s) = stem(analyzer, &raw)
                    && s != key
                    && !list.iter().any(|(e, _)| *e == s)
                {
                    list.push((s, raw));
                }
            }
            // Keyed by the stem and, when the stemmer changes it, by the word itself.
            for k in [key, word] {
                let entry = lex.synonyms.entry(k).or_default();
                for item in &list {
                    if !entry.contains(item) {
                        entry.push(item.clone());
                    }
                }
            }
        }
        for (phrase, to) in &v.phrases {
            let from = stems(analyzer, phrase);
            let to: Vec<String> = plain_words(to);
            if !from.is_empty() {
                lex.phrases.push((from, to));
            }
        }
        lex.phrases
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        for w in &v.function_words {
            if let Some(s) = stem(analyzer, &w.to_lowercase()) {
                lex.function.insert(s);
            }
        }
        for w in &v.qualifiers {
            if let Some(s) = stem(analyzer, &w.to_lowercase()) {
                lex.qualifiers.insert(s);
            }
        }
        lex.requests = v
            .requests
            .iter()
            .map(|r| plain_words(r))
            .filter(|r| !r.is_empty())
            .collect();
        for (word, asks) in &v.questions {
            let asks: Vec<String> = asks.iter().filter_map(|a| stem(analyzer, a)).collect();
            lex.questions.insert(word.to_lowercase(), asks);
        }
        lex.interrogatives = v.interrogatives.iter().map(|w| w.to_lowercase()).collect();
        lex.procedures = v
            .procedures
            .iter()
            .map(|p| plain_words(p))
            .filter(|p| !p.is_empty())
            .collect();
        lex
    }

    /// Whether the query asks a question (what is, rather than what to do): a yes/no opener
    /// first ("is the swarm initialized", "does the backup contain…"), an interrogative after
    /// nothing but function words ("which containers…", "can you tell me why…", "how much
    /// disk…"), or a question mark — unless a procedure opens it ("how do i prune images",
    /// "can i delete this volume?") or, for a question mark, a request ("could you restart
    /// it?"): those ask for the action itself.
    pub(super) fn is_question(
        &self,
        query: &str,
        words: &[String],
        analyzer: &mut TextAnalyzer,
    ) -> bool {
        let opens =
            |i: usize, phrases: &[Vec<String>]| phrases.iter().any(|p| words[i..].starts_with(p));
        let Some(first) = words.first() else {
            return false;
        };
        if opens(0, &self.procedures) {
            return false;
        }
        if words.len() > 1 && self.questions.contains_key(first) {
            return true;
        }
        for (i, w) in words.iter().enumerate().take(QUESTION_LEAD_IN + 1) {
            if self.interrogatives.contains(w) {
                return !opens(i, &self.procedures) && i + 1 < words.len();
            }
            let function = stem(analyzer, w).is_some_and(|s| self.function.contains(&s));
            if !function || opens(i, &self.procedures) {
                break;
            }
        }
        query.contains('?') && !opens(0, &self.requests)
    }

    /// Replaces the vocabulary's phrases in the query by the words they stand for. A phrase
    /// may skip a few function words of the query between its own words ("free up some disk
    /// space" holds "free up … space").
    pub(super) fn rewrite(&self, tokens: &mut Vec<Token>, analyzer: &mut TextAnalyzer) {
        let mut i = 0;
        while i < tokens.len() {
            let hit = self.phrases.iter().find_map(|(from, to)| {
                if tokens[i].1 != from[0] || tokens[i].2.is_some() {
                    return None;
                }
                let mut j = i + 1;
                let mut gap = 0;
                for s in &from[1..] {
                    loop {
                        let t = tokens.get(j)?;
                        if t.2.is_some() {
                            return None;
                        }
                        if t.1 == *s {
                            break;
                        }
                        if gap == PHRASE_GAP || !self.function.contains(&t.1) {
                            return None;
                        }
                        gap += 1;
                        j += 1;
                    }
                    j += 1;
                }
                Some((j, to))
            });
            match hit {
                Some((end, to)) => {
                    let typed: Vec<&str> = tokens[i..end].iter().map(|t| t.0.as_str()).collect();
                    let typed = typed.join(" ");
                    let origin: Vec<String> = tokens[i..end].iter().map(|t| t.1.clone()).collect();
                    let new: Vec<Token> = to
                        .iter()
                        .filter_map(|w| {
                            stem(analyzer, w)
                                .map(|s| (w.clone(), s, Some((typed.clone(), origin.clone()))))
                        })
                        .collect();
                    let len = new.len();
                    tokens.splice(i..end, new);
                    // A phrase that stands for nothing (a feature request's opening) leaves
                    // the next word at `i`, to be read in turn.
                    i += len;
                }
                None => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tantivy::Index;
    use tantivy::schema::Schema;

    use super::*;

    fn analyzer() -> TextAnalyzer {
        Index::create_in_ram(Schema::builder().build())
            .tokenizers()
            .get("en_stem")
            .expect("en_stem exists")
    }

    fn lexicon(yaml: &str) -> (Lexicon, TextAnalyzer) {
        let v: Vocabulary = yaml_serde::from_str(yaml).expect("vocabulary parses");
        let mut a = analyzer();
        (Lexicon::compile(&v, &mut a), a)
    }

    fn rewritten(lex: &Lexicon, a: &mut TextAnalyzer, q: &str) -> Vec<String> {
        let mut tokens: Vec<Token> = plain_words(q)
            .into_iter()
            .filter_map(|w| stem(a, &w).map(|s| (w, s, None)))
            .collect();
        lex.rewrite(&mut tokens, a);
        tokens.into_iter().map(|t| t.0).collect()
    }

    #[test]
    fn phrases_are_rewritten() {
        let (lex, mut a) = lexicon(
            "phrases: {who am i: me, docker ps: list containers, free up space: prune, \
             force stop: kill}\nfunctionWords: [some, the, disk]",
        );
        assert_eq!(rewritten(&lex, &mut a, "who am i"), vec!["me"]);
        assert_eq!(
            rewritten(&lex, &mut a, "docker ps now"),
            vec!["list", "containers", "now"]
        );
        // Stems match ("forcing stopped"), and up to two function words may sit in between.
        assert_eq!(
            rewritten(&lex, &mut a, "forcing stopped the container"),
            vec!["kill", "the", "container"]
        );
        assert_eq!(
            rewritten(&lex, &mut a, "free up some disk space"),
            vec!["prune"]
        );
        // A content word in between breaks the phrase.
        assert_eq!(
            rewritten(&lex, &mut a, "free up image space"),
            vec!["free", "up", "image", "space"]
        );
    }

    #[test]
    fn synonyms_and_function_words_compile_to_stems() {
        let (lex, _) =
            lexicon("synonyms: {removing: [delete, Deletes]}\nfunctionWords: [My, showing]");
        assert_eq!(
            lex.synonyms.get("remov"),
            Some(&vec![("delet".to_string(), "delete".to_string())])
        );
        assert!(lex.function.contains("my") && lex.function.contains("show"));
    }

    /// A negation covers its clause (up to a punctuation mark, five words at most); words in
    /// parentheses are an aside; a word also said outside stays wanted.
    #[test]
    fn negations_cover_their_clause() {
        let (lex, _) = lexicon("negations: [not, instead of, don t]");
        let n = |q: &str| {
            let mut v: Vec<String> = lex.negated(q).into_iter().collect();
            v.sort();
            v
        };
        assert_eq!(
            n("a normal stop does not work, kill the container"),
            ["work"]
        );
        assert_eq!(n("don't delete it, just stop it"), ["delete"]);
        assert_eq!(
            n("restart the web container instead of the db container"),
            ["db"]
        );
        assert_eq!(
            n("list images (the old ones too)"),
            ["old", "ones", "the", "too"]
        );
        assert!(n("restart the web container").is_empty());
    }

    #[test]
    fn qualifiers_and_plural_synonyms_compile() {
        let (lex, _) = lexicon("synonyms: {cve: [vulnerability]}\nqualifiers: [On, from]");
        assert!(lex.qualifiers.contains("on") && lex.qualifiers.contains("from"));
        // The stemmer keeps `cves`; the plural finds the synonym by its typed form.
        assert_eq!(
            lex.synonyms_of("cves", "cves"),
            &[("vulner".to_string(), "vulnerability".to_string())]
        );
        assert!(lex.synonyms_of("zzz", "zzz").is_empty());
    }

    #[test]
    fn the_situation_before_a_request_is_context() {
        let (lex, _) = lexicon("requests: [can you, i would like to]");
        let words = plain_words(
            "the backend container restarts every few minutes since the deploy, can you show me \
             the container logs",
        );
        let context = lex.context(&words);
        assert!(
            context.contains("restarts") && context.contains("deploy"),
            "{context:?}"
        );
        // A word repeated in the request is not context.
        assert!(
            !context.contains("container") && !context.contains("logs"),
            "{context:?}"
        );
        // A short query has no context.
        assert!(
            lex.context(&plain_words("can you restart the container"))
                .is_empty()
        );
    }

    #[test]
    fn questions_and_typed_forms_compile() {
        let (lex, mut a) = lexicon(
            "questions: {Is: [status]}\nsynonyms: {configure: [update], configuration: [config]}",
        );
        assert_eq!(lex.questions["is"], ["status"]);
        let s = stem(&mut a, "configuration").unwrap();
        assert_eq!(s, stem(&mut a, "configure").unwrap());
        // The form typed decides between words that share a stem.
        assert_eq!(lex.synonyms_of(&s, "configuration")[0].1, "config");
        assert_eq!(lex.synonyms_of(&s, "configure")[0].1, "update");
    }

    #[test]
    fn questions_are_told_from_requests() {
        let (lex, mut a) = lexicon(
            "questions: {is: [status], does: [status], are: [status]}\n\
             interrogatives: [what, which, why, how, who, where, when]\n\
             procedures: [how do i, how to, can i, should i]\n\
             requests: [can you, could you, please, i want to]\n\
             functionWords: [can, could, you, tell, me, please, i, want, to, know, the, is, \
             are, does, do, what, which, why, how, who, where, when, it]",
        );
        let q = |text: &str, a: &mut TextAnalyzer| lex.is_question(text, &plain_words(text), a);
        for question in [
            "why won't the proxy come up",
            "which volumes are orphaned",
            "how many networks exist",
            "how much memory is the db using",
            "is the registry reachable",
            "does the stack have pending image updates",
            "can you tell me who created this api key",
            "please, where does the backup live",
            "I want to know what the scheduler ran last night",
            "image updates pending?",
            "Are   the nodes healthy",
        ] {
            assert!(q(question, &mut a), "{question:?} is a question");
        }
        for request in [
            "restart web",
            "delete the old images",
            "prune the images which nobody uses",
            "how do i free up disk space",
            "how to roll back a swarm service",
            "can i delete this volume?",
            "could you restart the proxy?",
            "please remove the stopped containers",
            "it is broken, restart it",
            "is",
            "why",
        ] {
            assert!(!q(request, &mut a), "{request:?} is a request");
        }
    }
}
