//! Reading a query: each word becomes a group of alternatives (itself, its synonyms, a typo's
//! corrections, a short form's expansions, the request verb's kinds), weighted by what it says
//! (function words, qualifiers, the situation, negations, enumerations); and the query's words
//! for the semantic side.

use std::collections::HashSet;

use super::focus::Focus;
use super::index::SearchIndex;
use super::lexicon::Token;
use super::words::{MAX_WORDS, is_vowel, one_edit, participle, plain_words, skeleton, stem};
use crate::semantic;

/// Words at least this long (in characters) get typo tolerance.
const FUZZY_MIN_CHARS: usize = 3;

/// Resources named in one enumeration ("containers, images and networks") from which the
/// request is about all of them rather than one.
const ENUMERATION: usize = 3;

/// One alternative of a query word.
#[derive(Debug, Clone)]
pub(super) struct Alt {
    pub(super) stem: String,
    /// The form typed (empty for typo corrections).
    pub(super) raw: String,
    pub(super) weight: f32,
}

/// One query word with its alternatives (itself first).
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub(super) alts: Vec<Alt>,
    /// How much the word counts: 1 for a content word, less for a function word or a word
    /// found only in descriptions.
    pub(super) weight: f32,
    /// What the user typed for it (a rewritten phrase: the whole phrase).
    pub(super) typed: String,
    /// Part of a qualifier ("on this server"); its weight was lowered.
    pub(super) qualifier: bool,
    /// For a word of a rewritten phrase, the stems of the phrase typed (a keyword phrase may
    /// match them: "docker run snippet" after "docker run" became "create container").
    pub(super) origin: Vec<String>,
    pub(super) function: bool,
    /// One item of an enumeration of resources ("containers, images, networks and build
    /// cache"): the request is about all of them, so no single resource's action is named by
    /// it; the text (descriptions that name them together) decides.
    pub(super) listed: bool,
    /// Told as the situation before the request ("the backend container restarts…, can you
    /// show me what it printed"), negated ("does not work") or aside: it counts less, and
    /// names an ID word by half.
    pub(super) context: bool,
    /// The verb of the request: the first word, outside the situation and negations, that
    /// names an action-name word (itself, a synonym or a `verbs` kind).
    pub(super) lead: bool,
}

impl Group {
    /// How much an ID word this group names counts as named: a function word ("my" in
    /// `my_api_key`) counts half, so it tells siblings apart without pulling in its action.
    pub(super) fn precision_share(&self) -> f32 {
        if self.function || self.context {
            0.5
        } else {
            1.0
        }
    }

    /// The weight with which this group names a stem, and whether in the very form typed.
    pub(super) fn matches(&self, stem: &str, raw: &str) -> Option<(f32, bool)> {
        self.alts
            .iter()
            .filter(|a| a.stem == stem)
            .map(|a| (a.weight, a.raw == raw))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
    }
}

impl SearchIndex {
    /// A query's words for the semantic side, weighted as the lexical side weighs them
    /// (function words, qualifiers and the situation less; a synonym of the vocabulary — the
    /// operator's too — beside the word typed); a word the index does not know, which the
    /// lexical side drops, is what the meaning is for and counts [`Weights::unknown_word`].
    /// Also how many such words the query has.
    pub(super) fn query_words(&self, query: &str, groups: &[Group]) -> (Vec<(String, f32)>, usize) {
        let w = &self.weights;
        let mut unknown = 0;
        let mut words: Vec<(String, f32)> = Vec::new();
        let mut covered: HashSet<String> = HashSet::new();
        for g in groups {
            for (i, a) in g.alts.iter().enumerate() {
                let form = if a.raw.is_empty() { &a.stem } else { &a.raw };
                let weight = g.weight * if i == 0 { 1.0 } else { a.weight * w.synonym };
                for part in semantic::words(form) {
                    words.push((part, weight));
                }
            }
            // A rewritten phrase ("env vars" → variables) keeps the words typed beside what
            // they were rewritten to: the meaning reads both, as it reads a synonym beside its
            // word.
            let first = g
                .alts
                .first()
                .map(|a| semantic::words(if a.raw.is_empty() { &a.stem } else { &a.raw }));
            for typed in &g.origin {
                if first.as_ref().is_none_or(|f| !f.contains(typed)) {
                    words.push((typed.clone(), g.weight * w.synonym));
                }
            }
            covered.extend(semantic::words(&g.typed));
            covered.extend(g.origin.iter().cloned());
        }
        let mut analyzer = self.analyzer.clone();
        for word in plain_words(query).into_iter().take(2 * MAX_WORDS) {
            if covered.contains(&word) {
                continue;
            }
            let Some(s) = stem(&mut analyzer, &word) else {
                continue;
            };
            if covered.contains(&s)
                || self.lexicon.function.contains(&s)
                || self.vocabulary.contains(&s)
            {
                continue;
            }
            covered.insert(word.clone());
            words.push((word, w.unknown_word));
            unknown += 1;
        }
        (words, unknown)
    }

    /// A text's weighted words as the semantic side embeds it when it is a query or an ask
    /// ([`SearchIndex::query_words`]): public for the script that fits the embedding table to
    /// what the search embeds (`crates/catalog/examples/search_inputs.rs`).
    pub fn semantic_words(&self, text: &str) -> Vec<(String, f32)> {
        self.query_words(text, &self.parse(text)).0
    }

    /// Whether a query asks a question (what is, rather than what to do): then no changing
    /// action ranks above the best read action (`docs/search.md`, "Questions lead to reads").
    pub fn is_question(&self, query: &str) -> bool {
        let mut analyzer = self.analyzer.clone();
        self.lexicon
            .is_question(query, &plain_words(query), &mut analyzer)
    }

    /// The known stems a word typed without vowels stands for: those whose consonants
    /// ([`skeleton`]) are the longest start of the word's, what is left over an ending (a
    /// plural, "-ty", "-r"). Nothing for a word with a vowel after its first letter or one
    /// whose longest match is a function word ("pls", "shw"). Asked, as a typo's correction
    /// is, only for a word neither the index nor the language model knows ("try" is a word).
    fn expand_vowelless(&self, word: &str) -> Vec<&String> {
        const ENDINGS: [&str; 9] = ["", "s", "d", "r", "y", "ty", "ts", "ds", "rs"];
        if !word.chars().all(|c| c.is_ascii_lowercase()) || word.chars().skip(1).any(is_vowel) {
            return Vec::new();
        }
        let typed = skeleton(word);
        let n = typed.len();
        let Some(found) = (2..=n)
            .rev()
            .filter(|k| ENDINGS.contains(&&typed[*k..]))
            .map(|k| {
                let start = &typed[..k];
                let from = self
                    .skeletons
                    .partition_point(|(sk, _, _)| sk.as_str() < start);
                self.skeletons[from..]
                    .iter()
                    .take_while(|(sk, _, _)| sk == start)
                    .collect::<Vec<_>>()
            })
            .find(|found| !found.is_empty())
        else {
            return Vec::new();
        };
        if found.iter().any(|(_, _, function)| *function) {
            return Vec::new();
        }
        found.into_iter().map(|(_, stem, _)| stem).collect()
    }

    /// The query as groups of alternatives: plain words only, so no query syntax exists.
    pub(super) fn parse(&self, query: &str) -> Vec<Group> {
        self.parse_focused(&Focus::whole(query))
    }

    /// [`SearchIndex::parse`] of a focused query: the words of its situation (the sentences
    /// that do not ask, unless the asking ones say them too) count as told before the request.
    pub(super) fn parse_focused(&self, focus: &Focus) -> Vec<Group> {
        let query = &*focus.text;
        let mut analyzer = self.analyzer.clone();
        let w = &self.weights;
        let words = plain_words(query);
        // "is mfa turned on": a yes/no question asks for a state.
        let asks = words
            .first()
            .and_then(|w| Some((w.clone(), self.lexicon.questions.get(w)?)))
            .filter(|_| words.len() > 1);
        let context = self.lexicon.context(&words);
        let story: HashSet<String> = match words.get(focus.situation_from..) {
            Some(story) => {
                let goal: HashSet<&String> = words[..focus.situation_from].iter().collect();
                story
                    .iter()
                    .filter(|w| !goal.contains(w))
                    .cloned()
                    .collect()
            }
            None => HashSet::new(),
        };
        // Groups whose weight the story lowered (they are restored if the asking sentences
        // name no resource: "any idea why?" asks about what the story tells).
        let mut told: Vec<usize> = Vec::new();
        // Groups of symptom words.
        let mut symptoms: Vec<usize> = Vec::new();
        let negated = self.lexicon.negated(query);
        let mut tokens: Vec<Token> = words
            .into_iter()
            .filter_map(|word| stem(&mut analyzer, &word).map(|s| (word, s, None)))
            .collect();
        self.lexicon.rewrite(&mut tokens, &mut analyzer);

        let mut seen = HashSet::new();
        let mut groups: Vec<Group> = Vec::new();
        let mut content = 0;
        // Content words the index does not know.
        let mut unknown = 0;
        // Content words still to mark as a qualifier ("on this docker host": up to the noun).
        let mut qualifying = 0;
        for (word, s, phrase) in tokens {
            let (phrase, origin) = match phrase {
                Some((typed, origin)) => (Some(typed), origin),
                None => (None, Vec::new()),
            };
            if phrase.is_none() && self.lexicon.qualifiers.contains(&s) {
                qualifying = 3;
            }
            if !seen.insert(s.clone()) {
                continue;
            }
            let function = phrase.is_none() && self.lexicon.function.contains(&s);
            let mut alts = vec![Alt {
                stem: s.clone(),
                raw: word.clone(),
                weight: 1.0,
            }];
            // A participle ("running", "stopped") describes a state: the other senses of its
            // verb ("run" → exec) are not meant, only those written for the very form typed
            // ("unused", "dangling").
            if !function {
                let synonyms = if participle(&word) {
                    self.lexicon.typed_synonyms(&word)
                } else {
                    self.lexicon.synonyms_of(&s, &word)
                };
                for (stem, raw) in synonyms {
                    push_alt(&mut alts, stem.clone(), raw.clone(), w.synonym);
                }
                let len = word.chars().count();
                // A word the language model knows whole ("blog", "pods") is a word of its own,
                // not a misspelling of one the index knows ("logs"): the semantic side reads it.
                if len >= FUZZY_MIN_CHARS
                    && !self.vocabulary.contains(&s)
                    && !semantic::embedder().knows(&word)
                {
                    let stem_len = s.chars().count();
                    // A three-letter word is corrected only to a four-letter one ("pul").
                    let fixes = self
                        .corrections
                        .iter()
                        .filter(|(_, cl)| {
                            (len > FUZZY_MIN_CHARS || *cl > len)
                                && (cl.abs_diff(len) <= 1 || cl.abs_diff(stem_len) <= 1)
                        })
                        .map(|(c, _)| c)
                        .filter(|c| one_edit(&s, c) || one_edit(&word, c))
                        // "swrm scrts", "actvty lst": typed without vowels.
                        .chain(self.expand_vowelless(&word));
                    for c in fixes {
                        push_alt(&mut alts, c.clone(), String::new(), w.typo);
                        for (stem, raw) in self.lexicon.synonyms_of(c, c) {
                            push_alt(&mut alts, stem.clone(), raw.clone(), w.typo * w.synonym);
                        }
                    }
                }
            }
            // A symptom ("broken", "stuck") names the kinds that look into it, kept below
            // unless the request has no verb (below).
            let symptom = !function
                && self.lexicon.symptoms.contains_key(&s)
                && !alts.iter().any(|a| self.verbs.contains(&a.stem));
            if symptom {
                for (stem, raw) in self.lexicon.symptoms[&s].clone() {
                    push_alt(&mut alts, stem, raw, w.synonym);
                }
            }
            // A word the index does not know (a container's name, a version) says nothing
            // about which action is meant.
            if !alts.iter().any(|a| self.vocabulary.contains(&a.stem)) {
                unknown += usize::from(!function);
                continue;
            }
            let mut weight = if function {
                w.function_word
            } else if alts.iter().any(|a| self.strong.contains(&a.stem)) {
                1.0 - w.idf + w.idf * self.informativeness(&alts)
            } else {
                w.weak_word
            };
            // "…, can you show me what it printed": the situation told first counts less.
            let first = typed_first(phrase.as_deref().unwrap_or(&word));
            let situation = !function && (context.contains(first) || story.contains(first));
            if situation {
                weight *= w.qualifier;
                if !context.contains(first) {
                    told.push(groups.len());
                }
            }
            // "a normal stop does not work": what is negated or aside is not what is wanted.
            let aside = !function && negated.contains(first);
            if aside {
                weight *= w.negated;
            }
            let situation = situation || aside;
            let qualifier = !function && qualifying > 0;
            if qualifier {
                weight *= w.qualifier;
                let noun = alts.iter().any(|a| self.resources.contains(&a.stem));
                qualifying = if noun { 0 } else { qualifying - 1 };
            }
            if symptom {
                symptoms.push(groups.len());
            }
            groups.push(Group {
                alts,
                weight,
                typed: phrase.unwrap_or(word),
                qualifier,
                origin,
                function,
                listed: false,
                context: situation,
                lead: false,
            });
            if !function {
                content += 1;
                if content == MAX_WORDS {
                    break;
                }
            }
        }
        if let Some((opener, asks)) = asks {
            for s in asks {
                if self.vocabulary.contains(s) && seen.insert(s.clone()) {
                    groups.push(Group {
                        alts: vec![Alt {
                            stem: s.clone(),
                            raw: s.clone(),
                            weight: 1.0,
                        }],
                        weight: w.weak_word,
                        typed: opener.clone(),
                        qualifier: false,
                        origin: Vec::new(),
                        function: true,
                        listed: false,
                        context: false,
                        lead: false,
                    });
                }
            }
        }
        // The verb of the request decides between the actions of one resource: its kinds
        // (`verbs`) join its alternatives. A symptom's kinds count only in a request with no
        // verb ("registries broken"); otherwise the symptom is just its word.
        let is_lead = |g: &Group| {
            !g.function
                && !g.context
                && !g.qualifier
                && g.alts.iter().any(|a| {
                    self.verbs.contains(&a.stem) || self.lexicon.verbs.contains_key(&a.stem)
                })
        };
        let has_verb = groups
            .iter()
            .enumerate()
            .any(|(i, g)| !symptoms.contains(&i) && is_lead(g));
        if let Some(g) = groups.iter_mut().find(|g| is_lead(g)) {
            g.lead = true;
            let kinds: Vec<(String, String)> = g
                .alts
                .iter()
                .filter_map(|a| self.lexicon.verbs.get(&a.stem))
                .flatten()
                .cloned()
                .collect();
            for (stem, raw) in kinds {
                push_alt(&mut g.alts, stem, raw, w.synonym);
            }
        }
        let names_resource = |g: &Group| g.alts.iter().any(|a| self.resources.contains(&a.stem));
        if !told.is_empty()
            && !groups
                .iter()
                .any(|g| !g.context && !g.function && names_resource(g))
        {
            for i in told {
                let g = &mut groups[i];
                g.weight /= w.qualifier.max(f32::EPSILON);
                g.context = negated.contains(typed_first(&g.typed));
            }
        }
        // A qualifier says where only when something else says what: with no other resource
        // named ("what is running on this host"), it is the resource.
        if !groups.iter().any(|g| !g.qualifier && names_resource(g)) {
            for g in groups.iter_mut().filter(|g| g.qualifier) {
                g.weight /= w.qualifier.max(f32::EPSILON);
                g.qualifier = false;
            }
        }
        // An enumeration of three or more resources names none of them alone.
        let listed = enumerated(query);
        let is_listed = |g: &Group| listed.contains(&g.typed) && names_resource(g);
        if groups.iter().filter(|g| is_listed(g)).count() >= ENUMERATION {
            for g in groups.iter_mut() {
                g.listed = is_listed(g);
            }
        }
        if has_verb {
            for &i in symptoms.iter().rev() {
                let g = &mut groups[i];
                let s = g.alts[0].stem.clone();
                let kinds = &self.lexicon.symptoms[&s];
                g.alts
                    .retain(|a| a.stem == s || !kinds.iter().any(|(k, _)| *k == a.stem));
                if !g.alts.iter().any(|a| self.vocabulary.contains(&a.stem)) {
                    groups.remove(i);
                }
            }
        }
        // A query of function words only ("get", "show me"): they are all there is. With
        // unknown words besides ("frobnicate the flux capacitor"), nothing was understood.
        if groups.iter().all(|g| g.function) {
            if unknown > 0 {
                return Vec::new();
            }
            for g in &mut groups {
                g.weight = 1.0;
            }
        }
        groups
    }

    /// 1 for a word that names one action, towards 0 for one that names every action: by the
    /// most widespread of its alternatives (a synonym makes a word as general as its meaning).
    fn informativeness(&self, alts: &[Alt]) -> f32 {
        let n = self.entries.len() as f32 + 1.0;
        let df = alts
            .iter()
            .filter_map(|a| self.spread.get(&a.stem))
            .max()
            .copied()
            .unwrap_or(0) as f32;
        ((n / (df + 1.0)).ln() / n.ln()).clamp(0.0, 1.0)
    }
}

/// The first word of what was typed (a rewritten phrase is several words).
fn typed_first(typed: &str) -> &str {
    typed.split(' ').next().unwrap_or(typed)
}

/// The words of a query that stand next to an enumeration separator (a comma, `;`, `/`, `&`,
/// `+`, *and*, *or*, *plus*) between two words, or one word further after it ("images, *stopped*
/// containers"): the candidates for items of a list. The caller keeps the ones that name
/// resources.
fn enumerated(query: &str) -> HashSet<String> {
    let mut tokens: Vec<(String, bool)> = Vec::new();
    let mut word = String::new();
    for c in query.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            let sep = matches!(word.as_str(), "and" | "or" | "plus");
            tokens.push((std::mem::take(&mut word), sep));
        }
        if matches!(c, ',' | ';' | '/' | '&' | '+') {
            tokens.push((c.to_string(), true));
        }
        if tokens.len() > 4 * MAX_WORDS {
            break;
        }
    }
    let mut listed = HashSet::new();
    for (i, (_, sep)) in tokens.iter().enumerate() {
        if !sep || i == 0 {
            continue;
        }
        let before = &tokens[i - 1];
        let after: Vec<&(String, bool)> = tokens[i + 1..]
            .iter()
            .take(2)
            .take_while(|t| !t.1)
            .collect();
        if !before.1 && !after.is_empty() {
            listed.insert(before.0.clone());
            listed.extend(after.iter().map(|t| t.0.clone()));
        }
    }
    listed
}

fn push_alt(alts: &mut Vec<Alt>, stem: String, raw: String, weight: f32) {
    if !alts.iter().any(|a| a.stem == stem) {
        alts.push(Alt { stem, raw, weight });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerations_are_found_by_their_separators() {
        let l =
            enumerated("clean up everything unused: containers, images, networks and build cache");
        for w in ["containers", "images", "networks", "build"] {
            assert!(l.contains(w), "{w} in {l:?}");
        }
        assert!(!l.contains("unused") && !l.contains("clean"), "{l:?}");
        // One modifier may stand between the separator and the item.
        let l = enumerated("old images, stopped containers and unused volumes");
        assert!(l.contains("containers") && l.contains("volumes"), "{l:?}");
        assert!(enumerated("restart container").is_empty());
    }
}
