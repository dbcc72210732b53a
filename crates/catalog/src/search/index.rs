//! What a search index holds: the tantivy index over every action, what the structure stage
//! knows of each action, the words a query is read against, and the semantic vectors.

use std::collections::{HashMap, HashSet};

use tantivy::schema::Field;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader};

use super::lexicon::Lexicon;
use super::weights::Weights;
use crate::semantic::Packed;

/// The vectors of the entries' asks: `(entry, vector)`.
pub(super) type AskVectors = Vec<(usize, std::sync::Arc<Packed>)>;

/// A word of an action's ID: its stem and the form in the ID.
#[derive(Debug, Clone)]
pub(super) struct Word {
    pub(super) stem: String,
    pub(super) raw: String,
}

/// What the structure stage knows of one action.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) domain_words: Vec<Word>,
    pub(super) name_words: Vec<Word>,
    /// Keyword phrases of the action, as stems.
    pub(super) keywords: Vec<Vec<String>>,
    /// Stems of the description and usage note: an action of no single resource names the
    /// resources it acts on there ("removes unused containers, images, networks…").
    pub(super) prose: HashSet<String>,
    /// Per keyword: written with a participle ("what is running"), so a participle in the
    /// query matches it fully; any other keyword ("docker run") a participle matches by half.
    pub(super) keyword_states: Vec<bool>,
    /// Per keyword: from the operator's own overlay files ([`crate::model::SearchWords::operator_keywords`]).
    pub(super) operator_keywords: Vec<bool>,
    /// Index into [`SearchIndex::domain_keywords`].
    pub(super) domain: usize,
    /// Stems of the title (for the explanation of a match).
    pub(super) title: HashSet<String>,
    /// The action's name is `list`.
    pub(super) list_verb: bool,
    /// The answer is a list.
    pub(super) returns_list: bool,
    /// The action changes something (mutating or destructive): not an answer to a question.
    pub(super) changes: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Fields {
    pub(super) domain: Field,
    pub(super) name: Field,
    pub(super) title: Field,
    pub(super) keywords: Field,
    pub(super) description: Field,
    pub(super) usage: Field,
    pub(super) params: Field,
    pub(super) ord: Field,
}

impl Fields {
    pub(super) fn weighted(&self, w: &Weights) -> [(Field, f32); 7] {
        [
            (self.domain, w.f_domain),
            (self.name, w.f_name),
            (self.title, w.f_title),
            (self.keywords, w.f_keywords),
            (self.description, w.f_description),
            (self.usage, w.f_usage),
            (self.params, w.f_params),
        ]
    }
}

/// The search index of one catalog: immutable, `Send + Sync`, rebuilt with the catalog.
pub struct SearchIndex {
    #[allow(dead_code)]
    pub(super) index: Index,
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    pub(super) analyzer: TextAnalyzer,
    pub(super) weights: Weights,
    pub(super) lexicon: Lexicon,
    pub(super) entries: Vec<Entry>,
    /// Keyword phrases (stems) of each domain.
    pub(super) domain_keywords: Vec<Vec<Vec<String>>>,
    /// `doc_map[segment_ord][doc_id]` → index into `entries`.
    pub(super) doc_map: Vec<Vec<u32>>,
    /// Every stem in the index (to tell a typo from a known word).
    pub(super) vocabulary: HashSet<String>,
    /// Stems of IDs, titles and keywords: the words that can say which action is meant.
    pub(super) strong: HashSet<String>,
    /// The same, sorted: what a typo is corrected to.
    pub(super) corrections: Vec<(String, usize)>,
    /// The same by their consonants (`skeleton`), with the function words (marked `true`):
    /// what a word typed without vowels expands to.
    pub(super) skeletons: Vec<(String, String, bool)>,
    /// Stems of every action name's words: what a query word must be to count as a verb.
    pub(super) verbs: HashSet<String>,
    /// Stems that name a resource: domain words and one-word domain keywords.
    pub(super) resources: HashSet<String>,
    /// Stem → how many actions it names (ID words, keywords, domain keywords).
    pub(super) spread: HashMap<String, u32>,
    /// Each entry's semantic vector (normalised), in entry order.
    pub(super) vectors: Vec<std::sync::Arc<Packed>>,
    /// The vectors of the entries' asks, embedded as a query is: `(entry, vector)`.
    pub(super) ask_vectors: AskVectors,
    /// The [`crate::semantic::EmbeddingCache`] keys of every vector above (what a later start may
    /// read instead of embedding: [`SearchIndex::embedding_keys`]).
    pub(super) embedding_keys: Vec<u64>,
    /// The normalised mean of each entry's ask vectors (`None` for an action without asks).
    pub(super) ask_centres: Vec<Option<Vec<f32>>>,
    /// Token → how much it tells the asks of one action from those of others (0..1: 0 when
    /// every action's asks hold it, 1 when one action's do or none).
    pub(super) ask_idf: HashMap<u32, f32>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("actions", &self.entries.len())
            .field("vocabulary", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}
