//! The search vocabulary: how people's words map to the catalog's words (docs/search.md),
//! merged layer by layer from the overlays.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Search vocabulary (see `docs/search.md`): how people's words map to the catalog's words.
/// Every layer adds to the ones before it; a later layer's phrase replaces an earlier one.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vocabulary {
    /// A word → other words it may mean (alternatives, weighted below the word typed).
    #[serde(default)]
    pub synonyms: BTreeMap<String, Vec<String>>,
    /// A word or words typed together → the words they stand for (they replace what was typed).
    #[serde(default)]
    pub phrases: BTreeMap<String, String>,
    /// Words that never name an action (`my`, `get`, `show`, `the`…); ignored unless a query
    /// has nothing else.
    #[serde(default)]
    pub function_words: Vec<String>,
    /// Words that start a qualifier (`on`, `in`, `from`…): the resource named after one ("on
    /// this server", "in the db container") says where, not what, and counts less.
    #[serde(default)]
    pub qualifiers: Vec<String>,
    /// Words that open the request after a context ("…, can you show me what it printed",
    /// "…, I would like to see…"): the words before the last one describe the situation, not
    /// what to do, and count less.
    #[serde(default)]
    pub requests: Vec<String>,
    /// A word that opens a yes/no question (`is`, `does`…) → the words of the actions that
    /// answer one (`status`, `has`): "is mfa turned on" asks for a state, not for a change.
    /// They count like a function word: enough to prefer the sibling that reads a state.
    #[serde(default)]
    pub questions: BTreeMap<String, Vec<String>>,
    /// Words that open a question about what is (`what`, `which`, `why`, `how`…), also after
    /// a lead-in of function words ("can you tell me which…"). A question (one of these, a
    /// yes/no opener of [`Vocabulary::questions`] first, or a question mark) is answered by
    /// reading: no changing action is ranked above the best read action.
    #[serde(default)]
    pub interrogatives: Vec<String>,
    /// Phrases that ask how or whether to do something (`how do i`, `how to`, `can i`): the
    /// request is to do it, so a query they open is not a question.
    #[serde(default)]
    pub procedures: Vec<String>,
    /// Words that negate what follows (`not`, `without`, `instead of`…): up to the end of the
    /// clause (a punctuation mark or at most [`Vocabulary::negations`]' span of words), what
    /// follows is not wanted ("a normal stop does not work, kill it") and counts less. Words in
    /// parentheses are an aside and count less too.
    #[serde(default)]
    pub negations: Vec<String>,
    /// The verb of the request → the action-name words (kinds of action) it asks for
    /// (`make: [create]`, `see: [get, list]`): the first such verb of the request decides
    /// between the actions of one resource (docs/search.md, "The verb decides").
    #[serde(default)]
    pub verbs: BTreeMap<String, Vec<String>>,
    /// A word that tells a symptom (`broken`, `stuck`, `crashing`) → the kinds of action that
    /// look into or mend it (`status`, `logs`, `test`): a request with no verb of its own ("the
    /// agent shows offline", "registries broken") asks for those (docs/search.md, "Long requests and symptoms").
    #[serde(default)]
    pub symptoms: BTreeMap<String, Vec<String>>,
    /// Keywords of each domain (filled from `domains.<name>.keywords`, after renames).
    #[serde(skip)]
    pub domain_keywords: BTreeMap<String, Vec<String>>,
}

impl Vocabulary {
    /// Adds a later layer's vocabulary.
    pub fn merge(&mut self, later: &Vocabulary) {
        for (word, alts) in &later.synonyms {
            let e = self.synonyms.entry(word.to_lowercase()).or_default();
            for a in alts {
                if !e.contains(a) {
                    e.push(a.clone());
                }
            }
        }
        for (word, asks) in &later.questions {
            let e = self.questions.entry(word.to_lowercase()).or_default();
            for a in asks {
                if !e.contains(a) {
                    e.push(a.clone());
                }
            }
        }
        for (mine, theirs) in [
            (&mut self.verbs, &later.verbs),
            (&mut self.symptoms, &later.symptoms),
        ] {
            for (word, kinds) in theirs {
                let e = mine.entry(word.to_lowercase()).or_default();
                for k in kinds {
                    if !e.contains(k) {
                        e.push(k.clone());
                    }
                }
            }
        }
        for (phrase, to) in &later.phrases {
            self.phrases.insert(phrase.to_lowercase(), to.clone());
        }
        for (mine, theirs) in [
            (&mut self.function_words, &later.function_words),
            (&mut self.qualifiers, &later.qualifiers),
            (&mut self.requests, &later.requests),
            (&mut self.interrogatives, &later.interrogatives),
            (&mut self.procedures, &later.procedures),
            (&mut self.negations, &later.negations),
        ] {
            for w in theirs {
                let w = w.to_lowercase();
                if !mine.contains(&w) {
                    mine.push(w);
                }
            }
        }
    }
}
