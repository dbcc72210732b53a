//! The search index behind `arcane_find_action`: plain words in, the best actions out.
//!
//! Two stages (see `docs/search.md`):
//! 1. **Text**: a tantivy index in RAM over every action — domain and action-name words (the ID
//!    split on `_`/`.`), title, search keywords (from overlays), description, usage note,
//!    parameter names — with English stemming (`en_stem`). The query is never parsed as tantivy
//!    syntax: it is split into plain words; phrases of the vocabulary are rewritten ("force
//!    stop" → kill); function words (my, get, show…) are weighed down; every remaining word
//!    becomes a group of alternatives (itself, its synonyms, and, for an unknown word, the
//!    index's own words one edit away), and every alternative is a weighted term query on each
//!    field. BM25 scores the candidates.
//! 2. **Structure**: the candidates are re-ranked by how the query's words line up with the
//!    action's ID and keyword phrases — words that name the resource (domain), words that name
//!    the action (the verb), and, when the query names only the resource, a preference for its
//!    list action.
//!
//! Nothing here knows a specific action or word: the rules read the ID's shape, the catalog's
//! words and the vocabulary of the overlays (`overrides/vocabulary.yaml`, `overrides/search.yaml`).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use anyhow::{Context, Result, ensure};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::model::{Action, Catalog};
use crate::semantic;
use crate::vocabulary::Vocabulary;

/// Query words kept (after phrases, function words and repeats); the rest are ignored.
const MAX_WORDS: usize = 16;
/// Words at least this long (in characters) get typo tolerance.
const FUZZY_MIN_CHARS: usize = 3;
/// The best text matches re-ranked by structure (at least four times the limit): the
/// structure pass costs per candidate, and an action no query word names in any field well
/// enough to be among these is not what was meant.
const CANDIDATES: usize = 96;
/// Query words a vocabulary phrase may skip between its own words (function words only).
const PHRASE_GAP: usize = 2;
/// How deep in the lexical ranking a bare resource's list action is looked for (it ranks near
/// the top: the query names its resource and nothing else).
const CONVENTION_DEPTH: usize = 8;

/// Resources named in one enumeration ("containers, images and networks") from which the
/// request is about all of them rather than one.
const ENUMERATION: usize = 3;

/// Words a query needs before the words told ahead of its request ("…, can you show me…")
/// count as the situation rather than the request.
const CONTEXT_WORDS: usize = 12;

/// Words after a negation that it covers at most (within its clause).
const NEGATION_SPAN: usize = 5;

/// Function words that may lead a question's interrogative ("can you tell me which…", "I
/// want to know how much…").
const QUESTION_LEAD_IN: usize = 5;
/// The vectors of the entries' asks: `(entry, vector)`.
type AskVectors = Vec<(usize, std::sync::Arc<[f32]>)>;

/// Mixed into an ask's cache key: an ask and an action text of the same words are embedded
/// with different weights and must not share a vector.
const ASK_KEY: u64 = 0x6173_6b73_2d76_3031;

/// The weights of the ranking. [`Weights::default`] holds the measured values; see
/// `docs/search.md` for how they were measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Field weights of the text stage (BM25 per field, multiplied).
    pub f_domain: f32,
    pub f_name: f32,
    pub f_title: f32,
    pub f_keywords: f32,
    pub f_description: f32,
    pub f_usage: f32,
    pub f_params: f32,
    /// The text score, relative to the best candidate's (0..1).
    pub text: f32,
    /// Share of the query's words the action's ID or keywords explain.
    pub cover: f32,
    /// Share of the ID's words the query names.
    pub precision: f32,
    /// Share of the domain's words the query names: the resource outweighs a verb.
    pub domain_hit: f32,
    /// Share of the query's words matching an ID word in the very form typed.
    pub surface: f32,
    /// A query that names only the resource prefers its list action (scaled by the cover).
    pub list: f32,
    /// A keyword phrase of the action (or its domain) counts this much of an ID word.
    pub keyword: f32,
    /// A synonym next to the word typed.
    pub synonym: f32,
    /// A typo correction (a known word one edit away from an unknown one).
    pub typo: f32,
    /// A function word (my, get, show…) next to a content word.
    pub function_word: f32,
    /// A word of a qualifier ("on this server"): where, not what.
    pub qualifier: f32,
    /// A word found only in descriptions, usage notes or parameter names (never in an ID,
    /// title or keyword): it says little about which action is meant.
    pub weak_word: f32,
    /// How much a word's spread counts (0: not at all, 1: fully): a word that names one action
    /// ("overloaded", "kill") says more than one that names thirty ("container", "server").
    pub idf: f32,
    /// A word negated or told aside ("does not work", "(it is the db)") counts this much.
    pub negated: f32,
    /// The verb of the request naming the action's name word: how much it adds (× its share of
    /// the query), so it decides between the actions of one resource.
    pub verb: f32,
    /// How much the semantic side counts against the lexical one. With [`Weights::rrf_k`] 0,
    /// the fused score is the lexical score plus this × the cosine of query and action; with a
    /// positive `rrf_k`, reciprocal rank fusion: `1/(k + lexical rank) + semantic/(k + semantic
    /// rank)`. 0 turns the semantic side off.
    pub semantic: f32,
    /// The `k` of reciprocal rank fusion; 0 for the weighted sum.
    pub rrf_k: f32,
    /// Actions the semantic side adds to the lexical candidates (its best ones).
    pub semantic_pool: usize,
    /// A query word no field of the index knows ("pods", "slack"): dropped by the lexical side,
    /// it counts this much on the semantic side.
    pub unknown_word: f32,
    /// How much an action's best-matching ask (overlay `asks`: a whole request people make for
    /// it) counts in its cosine against the action's own text: `(1 − asks) × text + asks × ask`.
    pub asks: f32,
    /// How much the centre of an action's asks counts against its closest ask in its ask
    /// cosine: `(1 − ask_centroid) × closest + ask_centroid × centre`, the centre being the
    /// normalised mean of the action's ask vectors. The closest ask finds a request worded as
    /// one of them; the centre is what they have in common, which a request worded like none
    /// of them still shares (docs/search.md, "Asks").
    pub ask_centroid: f32,
    /// The least an action's ask cosine is, as a share of its closest ask's: a request worded
    /// nearly as one of its asks (an operator's taught request, say) is found by that ask
    /// alone, however far the action's other asks are from it. With `ask_centroid` 0.67 and
    /// this 0.5, it decides only where the centre's cosine is below about a quarter of the
    /// closest ask's (docs/search.md, "Asks").
    pub ask_alone: f32,
    /// The semantic weight when the lexical side's best action explains every word of the
    /// query ("gitops sync", "inspect container details"): between it and [`Weights::semantic`]
    /// by the share of the query that best action leaves unexplained. The meaning decides where
    /// the words did not.
    pub sure_semantic: f32,
    /// How the semantic weight grows with the unexplained share `u`: `sure_semantic +
    /// (semantic − sure_semantic) × u^unsure_power`. Above 1, a query the words explain
    /// mostly ("what it said in the web container", an operator's keyword matched) keeps
    /// close to the sure weight, and the meaning takes over as the words explain less.
    pub unsure_power: f32,
    /// The asks' weight ([`Weights::asks`]) when the lexical side's best action explains every
    /// word of the query; between it and `asks` as for [`Weights::sure_semantic`].
    pub sure_asks: f32,
    /// How much a query's word counts against the asks by how few actions' asks hold it
    /// (0: not at all, its rarity alone; 1: its rarity × its ask IDF).
    pub ask_idf: f32,
}

impl Weights {
    /// The defaults with the knobs `SEARCH_WEIGHTS` names changed (`"semantic=12,asks=0.8"`):
    /// how the search tests and benchmarks measure other weights without a rebuild. Panics on
    /// a malformed value or an unknown name (only tests call it).
    pub fn from_env() -> Weights {
        let mut w = Weights::default();
        let Ok(spec) = std::env::var("SEARCH_WEIGHTS") else {
            return w;
        };
        for pair in spec.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("SEARCH_WEIGHTS: {pair:?} is not name=value"));
            let v: f32 = v
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("SEARCH_WEIGHTS: {v:?} is not a number"));
            match k.trim() {
                "semantic" => w.semantic = v,
                "rrf_k" => w.rrf_k = v,
                "semantic_pool" => w.semantic_pool = v as usize,
                "unknown_word" => w.unknown_word = v,
                "verb" => w.verb = v,
                "negated" => w.negated = v,
                "asks" => w.asks = v,
                "ask_centroid" => w.ask_centroid = v,
                "ask_alone" => w.ask_alone = v,
                "sure_semantic" => w.sure_semantic = v,
                "unsure_power" => w.unsure_power = v,
                "sure_asks" => w.sure_asks = v,
                "ask_idf" => w.ask_idf = v,
                other => panic!("SEARCH_WEIGHTS: unknown weight {other:?}"),
            }
        }
        w
    }
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            f_domain: 2.0,
            f_name: 2.5,
            f_title: 2.0,
            f_keywords: 1.5,
            f_description: 0.7,
            f_usage: 0.4,
            f_params: 0.3,
            text: 1.0,
            cover: 2.0,
            precision: 1.5,
            domain_hit: 0.3,
            surface: 0.2,
            list: 0.5,
            keyword: 0.9,
            synonym: 0.8,
            typo: 0.7,
            function_word: 0.25,
            qualifier: 0.5,
            weak_word: 0.5,
            idf: 0.5,
            negated: 0.25,
            verb: 0.5,
            semantic: 64.0,
            rrf_k: 0.0,
            semantic_pool: 24,
            unknown_word: 1.0,
            asks: 0.9,
            ask_centroid: 0.67,
            ask_alone: 0.5,
            sure_semantic: 8.0,
            unsure_power: 2.0,
            sure_asks: 0.7,
            ask_idf: 0.0,
        }
    }
}

/// The lead (share of its score) the best hit needs over the next one to be clearly the one
/// meant; calibrated on the sets A to G, each ranked with the table trained without it
/// (docs/search.md, "Confidence").
pub const CLEAR_LEAD: f32 = 0.08;

/// Whether the best hit is a weak match: there is none, or it is not clearly better than the
/// next one (a changing action a question ruled out is no rival: [`Hit::passed_over`]). How
/// much of the query it explains is not asked: with the semantic side, a request whose words
/// name no action is found as often as one whose words do, and counting coverage flagged more
/// right first results than wrong ones (docs/search.md, "Confidence").
pub fn is_weak(hits: &[Hit]) -> bool {
    is_weak_with(hits, CLEAR_LEAD)
}

/// [`is_weak`] with another lead (for calibrating [`CLEAR_LEAD`]).
pub fn is_weak_with(hits: &[Hit], lead: f32) -> bool {
    let Some((first, rest)) = hits.split_first() else {
        return true;
    };
    rest.iter()
        .find(|h| !h.passed_over)
        .is_some_and(|next| first.score - next.score < lead * first.score.abs())
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Canonical action ID.
    pub id: String,
    /// Relevance; only the order matters.
    pub score: f32,
    /// The query's words (as typed; a rewritten phrase as typed) that this action's ID,
    /// keywords or title match, in query order: why it was found.
    pub matched: Vec<String>,
    /// Share (0..1) of the query's meaningful words that the action's ID, keywords or title
    /// match. A low value on the best hit means the query was not understood well.
    pub coverage: f32,
    /// A changing action a question's best read action was moved above ("Questions lead to
    /// reads"): ruled out by the question, so not a rival the first result must lead.
    pub passed_over: bool,
}

/// A word of an action's ID: its stem and the form in the ID.
#[derive(Debug, Clone)]
struct Word {
    stem: String,
    raw: String,
}

/// What the structure stage knows of one action.
#[derive(Debug, Clone)]
struct Entry {
    id: String,
    domain_words: Vec<Word>,
    name_words: Vec<Word>,
    /// Keyword phrases of the action, as stems.
    keywords: Vec<Vec<String>>,
    /// Stems of the description and usage note: an action of no single resource names the
    /// resources it acts on there ("removes unused containers, images, networks…").
    prose: HashSet<String>,
    /// Per keyword: written with a participle ("what is running"), so a participle in the
    /// query matches it fully; any other keyword ("docker run") a participle matches by half.
    keyword_states: Vec<bool>,
    /// Per keyword: from the operator's own overlay files ([`Action::operator_keywords`]).
    operator_keywords: Vec<bool>,
    /// Index into [`SearchIndex::domain_keywords`].
    domain: usize,
    /// Stems of the title (for the explanation of a match).
    title: HashSet<String>,
    /// The action's name is `list`.
    list_verb: bool,
    /// The answer is a list.
    returns_list: bool,
    /// The action changes something (mutating or destructive): not an answer to a question.
    changes: bool,
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    domain: Field,
    name: Field,
    title: Field,
    keywords: Field,
    description: Field,
    usage: Field,
    params: Field,
    ord: Field,
}

impl Fields {
    fn weighted(&self, w: &Weights) -> [(Field, f32); 7] {
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

/// A query word: (form typed, stem, for a word of a rewritten phrase: (the phrase typed, its
/// stems)).
type Token = (String, String, Option<(String, Vec<String>)>);

/// The vocabulary, compiled to stems.
#[derive(Debug, Default)]
struct Lexicon {
    /// Stem of a word → (stem, form) of the words it may also mean.
    synonyms: HashMap<String, Vec<(String, String)>>,
    /// (stems of the phrase, words it stands for), longest phrase first.
    phrases: Vec<(Vec<String>, Vec<String>)>,
    /// Stems of function words.
    function: HashSet<String>,
    /// Stems of words that start a qualifier.
    qualifiers: HashSet<String>,
    /// Phrases (lower-cased words) that open the request after a context.
    requests: Vec<Vec<String>>,
    /// Word opening a yes/no question (lower-cased) → stems of the words it asks for.
    questions: HashMap<String, Vec<String>>,
    /// Words (lower-cased) that open a question about what is: what, which, why, how…
    interrogatives: HashSet<String>,
    /// Phrases (lower-cased words) that ask how or whether to do something: "how do i".
    procedures: Vec<Vec<String>>,
    /// Phrases (lower-cased words) that negate what follows: "not", "instead of".
    negations: Vec<Vec<String>>,
    /// Stem of a request verb → (stem, form) of the action-name words it asks for.
    verbs: HashMap<String, Vec<(String, String)>>,
}

/// The search index of one catalog: immutable, `Send + Sync`, rebuilt with the catalog.
pub struct SearchIndex {
    #[allow(dead_code)]
    index: Index,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    weights: Weights,
    lexicon: Lexicon,
    entries: Vec<Entry>,
    /// Keyword phrases (stems) of each domain.
    domain_keywords: Vec<Vec<Vec<String>>>,
    /// `doc_map[segment_ord][doc_id]` → index into `entries`.
    doc_map: Vec<Vec<u32>>,
    /// Every stem in the index (to tell a typo from a known word).
    vocabulary: HashSet<String>,
    /// Stems of IDs, titles and keywords: the words that can say which action is meant.
    strong: HashSet<String>,
    /// The same, sorted: what a typo is corrected to.
    corrections: Vec<(String, usize)>,
    /// The same by their consonants (`skeleton`), with the function words (marked `true`):
    /// what a word typed without vowels expands to.
    skeletons: Vec<(String, String, bool)>,
    /// Stems of every action name's words: what a query word must be to count as a verb.
    verbs: HashSet<String>,
    /// Stems that name a resource: domain words and one-word domain keywords.
    resources: HashSet<String>,
    /// Stem → how many actions it names (ID words, keywords, domain keywords).
    spread: HashMap<String, u32>,
    /// Each entry's semantic vector (normalised), in entry order.
    vectors: Vec<std::sync::Arc<[f32]>>,
    /// The vectors of the entries' asks, embedded as a query is: `(entry, vector)`.
    ask_vectors: AskVectors,
    /// The [`semantic::EmbeddingCache`] keys of every vector above (what a later start may
    /// read instead of embedding: [`SearchIndex::embedding_keys`]).
    embedding_keys: Vec<u64>,
    /// The normalised mean of each entry's ask vectors (`None` for an action without asks).
    ask_centres: Vec<Option<Vec<f32>>>,
    /// Token → how much it tells the asks of one action from those of others (0..1: 0 when
    /// every action's asks hold it, 1 when one action's do or none).
    ask_idf: HashMap<u32, f32>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("actions", &self.entries.len())
            .field("vocabulary", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}

/// One alternative of a query word.
#[derive(Debug, Clone)]
struct Alt {
    stem: String,
    /// The form typed (empty for typo corrections).
    raw: String,
    weight: f32,
}

/// One query word with its alternatives (itself first).
#[derive(Debug, Clone)]
struct Group {
    alts: Vec<Alt>,
    /// How much the word counts: 1 for a content word, less for a function word or a word
    /// found only in descriptions.
    weight: f32,
    /// What the user typed for it (a rewritten phrase: the whole phrase).
    typed: String,
    /// Part of a qualifier ("on this server"); its weight was lowered.
    qualifier: bool,
    /// For a word of a rewritten phrase, the stems of the phrase typed (a keyword phrase may
    /// match them: "docker run snippet" after "docker run" became "create container").
    origin: Vec<String>,
    function: bool,
    /// One item of an enumeration of resources ("containers, images, networks and build
    /// cache"): the request is about all of them, so no single resource's action is named by
    /// it; the text (descriptions that name them together) decides.
    listed: bool,
    /// Told as the situation before the request ("the backend container restarts…, can you
    /// show me what it printed"), negated ("does not work") or aside: it counts less, and
    /// names an ID word by half.
    context: bool,
    /// The verb of the request: the first word, outside the situation and negations, that
    /// names an action-name word (itself, a synonym or a `verbs` kind).
    lead: bool,
}

impl Group {
    /// How much an ID word this group names counts as named: a function word ("my" in
    /// `my_api_key`) counts half, so it tells siblings apart without pulling in its action.
    fn precision_share(&self) -> f32 {
        if self.function || self.context {
            0.5
        } else {
            1.0
        }
    }

    /// The weight with which this group names a stem, and whether in the very form typed.
    fn matches(&self, stem: &str, raw: &str) -> Option<(f32, bool)> {
        self.alts
            .iter()
            .filter(|a| a.stem == stem)
            .map(|a| (a.weight, a.raw == raw))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
    }
}

/// A query's cosines with every action (entry order): with the action's text, and with its
/// closest asks (`None` for an action without asks).
struct Meaning {
    text: Vec<f32>,
    asks: Vec<Option<f32>>,
    /// How many of the query's words no field of the index knows (the lexical side drops them).
    unknown: f32,
}

impl Meaning {
    /// Per action `(1 − asks) × text + asks × ask` ([`Weights::asks`]); an action without asks
    /// keeps its text's cosine.
    fn mixed(&self, asks: f32) -> Vec<f32> {
        self.text
            .iter()
            .zip(&self.asks)
            .map(|(t, a)| a.map_or(*t, |a| (1.0 - asks) * t + asks * a))
            .collect()
    }
}

/// How the query lines up with one action.
struct Fit {
    score: f32,
    /// Groups the ID or keywords explain.
    used: Vec<bool>,
    /// The query names the action's resource and no verb: by convention, its list is meant.
    noun_only: bool,
    /// The query holds every word of one of the operator's keywords for the action.
    operator_keyword: bool,
}

impl SearchIndex {
    /// Builds an in-memory index over every action of the catalog, with the measured weights.
    pub fn build(catalog: &Catalog) -> Result<SearchIndex> {
        Self::build_with(catalog, Weights::default())
    }

    /// Builds an index with other weights (for measuring them).
    pub fn build_with(catalog: &Catalog, weights: Weights) -> Result<SearchIndex> {
        Self::build_cached(catalog, weights, semantic::EmbeddingCache::global())
    }

    /// Builds an index taking the action vectors an earlier build computed from `cache` (the
    /// process-wide one for [`SearchIndex::build`]): a reload re-embeds only what changed.
    pub fn build_cached(
        catalog: &Catalog,
        weights: Weights,
        cache: &semantic::EmbeddingCache,
    ) -> Result<SearchIndex> {
        let mut sb = Schema::builder();
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("en_stem")
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let fields = Fields {
            domain: sb.add_text_field("domain", text.clone()),
            name: sb.add_text_field("name", text.clone()),
            title: sb.add_text_field("title", text.clone()),
            keywords: sb.add_text_field("keywords", text.clone()),
            description: sb.add_text_field("description", text.clone()),
            usage: sb.add_text_field("usage", text.clone()),
            params: sb.add_text_field("params", text),
            ord: sb.add_u64_field("ord", FAST),
        };
        let index = Index::create_in_ram(sb.build());
        let mut analyzer = index
            .tokenizers()
            .get("en_stem")
            .context("tantivy has no en_stem tokenizer")?;
        let lexicon = Lexicon::compile(&catalog.vocabulary, &mut analyzer);

        let mut domain_names: HashMap<&str, usize> = HashMap::new();
        let mut domain_keywords: Vec<Vec<Vec<String>>> = Vec::new();
        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, 15_000_000)
            .context("creating the search index writer")?;
        let mut entries = Vec::with_capacity(catalog.actions.len());
        let mut verbs: HashSet<String> = HashSet::new();
        let mut strong: HashSet<String> = HashSet::new();
        let mut spread: HashMap<String, u32> = HashMap::new();
        let mut resources: HashSet<String> = HashSet::new();
        for (ord, a) in catalog.actions.iter().enumerate() {
            let domain = *domain_names.entry(a.domain.as_str()).or_insert_with(|| {
                let phrases = catalog
                    .vocabulary
                    .domain_keywords
                    .get(&a.domain)
                    .map(|ks| phrases_of(ks, &mut analyzer, &lexicon.function))
                    .unwrap_or_default();
                domain_keywords.push(phrases);
                domain_keywords.len() - 1
            });
            let mut keyword_text = a.keywords.join(" ; ");
            if let Some(ks) = catalog.vocabulary.domain_keywords.get(&a.domain) {
                keyword_text.push_str(" ; ");
                keyword_text.push_str(&ks.join(" ; "));
            }
            let params: Vec<String> = a.params.iter().map(|p| index_text(&p.name)).collect();
            let mut doc = TantivyDocument::default();
            doc.add_text(fields.domain, index_text(&a.domain));
            doc.add_text(fields.name, index_text(&a.name));
            doc.add_text(fields.title, index_text(&a.title));
            doc.add_text(fields.keywords, &keyword_text);
            doc.add_text(fields.description, index_text(&a.description));
            doc.add_text(fields.usage, index_text(&a.usage));
            doc.add_text(fields.params, params.join(" "));
            doc.add_u64(fields.ord, ord as u64);
            writer.add_document(doc)?;

            let words = |s: &str, analyzer: &mut TextAnalyzer| -> Vec<Word> {
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .filter_map(|w| {
                        let raw = w.to_lowercase();
                        stem(analyzer, &raw).map(|stem| Word { stem, raw })
                    })
                    .collect()
            };
            let title: HashSet<String> = stems(&mut analyzer, &index_text(&a.title))
                .into_iter()
                .collect();
            let prose: HashSet<String> = stems(&mut analyzer, &a.description)
                .into_iter()
                .chain(stems(&mut analyzer, &a.usage))
                .collect();
            let domain_words = words(&a.domain, &mut analyzer);
            // A keyword of only the domain's words ("all containers" once "all" is a function
            // word) would make every query about the resource name this action.
            let mut keywords = Vec::new();
            let mut keyword_states = Vec::new();
            let mut operator_keywords = Vec::new();
            for k in &a.keywords {
                let Some(p) =
                    phrases_of(std::slice::from_ref(k), &mut analyzer, &lexicon.function).pop()
                else {
                    continue;
                };
                if p.iter().any(|s| !domain_words.iter().any(|d| d.stem == *s)) {
                    keyword_states.push(plain_words(k).iter().any(|w| participle(w)));
                    operator_keywords.push(a.operator_keywords.contains(k));
                    keywords.push(p);
                }
            }
            let entry = Entry {
                id: a.id.clone(),
                domain_words,
                name_words: words(&a.name, &mut analyzer),
                keywords,
                keyword_states,
                operator_keywords,
                domain,
                title,
                prose,
                list_verb: a.name == "list",
                returns_list: a.list,
                changes: a.mutating || a.destructive,
            };
            for w in &entry.name_words {
                verbs.insert(w.stem.clone());
            }
            for w in entry.domain_words.iter().chain(&entry.name_words) {
                strong.insert(w.stem.clone());
            }
            resources.extend(entry.domain_words.iter().map(|w| w.stem.clone()));
            resources.extend(
                domain_keywords[domain]
                    .iter()
                    .filter(|k| k.len() == 1)
                    .map(|k| k[0].clone()),
            );
            strong.extend(entry.title.iter().cloned());
            strong.extend(entry.keywords.iter().flatten().cloned());
            strong.extend(domain_keywords[domain].iter().flatten().cloned());
            let named: HashSet<&String> = entry
                .domain_words
                .iter()
                .chain(&entry.name_words)
                .map(|w| &w.stem)
                .chain(entry.keywords.iter().flatten())
                .chain(domain_keywords[domain].iter().flatten())
                .collect();
            for s in named {
                *spread.entry(s.clone()).or_insert(0) += 1;
            }
            entries.push(entry);
        }
        writer.commit().context("committing the search index")?;
        drop(writer);

        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .context("opening the search index")?;
        let searcher = reader.searcher();
        let mut doc_map = Vec::new();
        let mut vocabulary = HashSet::new();
        let mut mapped = 0;
        for segment in searcher.segment_readers() {
            let ords = segment.fast_fields().u64("ord")?;
            let map: Vec<u32> = (0..segment.max_doc())
                .map(|doc| ords.first(doc).unwrap_or(u64::MAX) as u32)
                .collect();
            mapped += map.len();
            doc_map.push(map);
            for (field, _) in fields.weighted(&weights) {
                let inverted = segment.inverted_index(field)?;
                let mut terms = inverted.terms().stream()?;
                while terms.advance() {
                    if let Ok(t) = std::str::from_utf8(terms.key()) {
                        vocabulary.insert(t.to_string());
                    }
                }
            }
        }
        ensure!(
            mapped == entries.len(),
            "the search index holds {mapped} documents for {} actions",
            entries.len()
        );
        // Function words are not words an action is found by.
        strong.retain(|s| !lexicon.function.contains(s));
        let mut corrections: Vec<(String, usize)> = strong
            .iter()
            .map(|s| (s.clone(), s.chars().count()))
            .collect();
        corrections.sort();
        // Function words are in it too, marked: "pls", "shw" are please and show, not pull and
        // ssh, and stand for nothing.
        let mut skeletons: Vec<(String, String, bool)> = strong
            .iter()
            .map(|s| (skeleton(s), s.clone(), false))
            .chain(
                lexicon
                    .function
                    .iter()
                    .map(|s| (skeleton(s), s.clone(), true)),
            )
            .filter(|(k, _, _)| k.chars().count() >= 2)
            .collect();
        skeletons.sort();
        let (vectors, embedding_keys) = embed_actions(catalog, cache);
        let mut built = SearchIndex {
            index,
            reader,
            fields,
            analyzer,
            weights,
            lexicon,
            entries,
            domain_keywords,
            doc_map,
            vocabulary,
            strong,
            corrections,
            skeletons,
            verbs,
            spread,
            resources,
            vectors,
            embedding_keys,
            ask_vectors: Vec::new(),
            ask_centres: Vec::new(),
            ask_idf: HashMap::new(),
        };
        (built.ask_vectors, built.ask_idf) = built.embed_asks(catalog, cache);
        built.ask_centres = centres(&built.ask_vectors, built.entries.len());
        Ok(built)
    }

    /// Every ask's vector, embedded as a query is (its words weighed as a query's are, with
    /// the vocabulary's synonyms beside them), so an ask and a query that say the same thing
    /// in the same words meet. Taken from `cache` when an earlier build embedded the same text
    /// with the same vocabulary ([`SearchIndex::reading_key`]): reading an ask as a query costs
    /// more than the rest of a build.
    /// Also each token's ask IDF ([`Weights::ask_idf`]), over the asks' plain words.
    fn embed_asks(
        &mut self,
        catalog: &Catalog,
        cache: &semantic::EmbeddingCache,
    ) -> (AskVectors, HashMap<u32, f32>) {
        let e = semantic::embedder();
        let reading = self.reading_key(catalog);
        let mut out = Vec::new();
        // Token → the last entry counted, and how many entries' asks hold it.
        let mut df: HashMap<u32, (usize, u32)> = HashMap::new();
        let mut with_asks = 0_u32;
        for (entry, a) in catalog.actions.iter().enumerate() {
            let before = out.len();
            let implicit = implicit_asks(a);
            // An action keyword (the operator's too) is a short request of its own.
            for ask in a.asks.iter().chain(&a.keywords).chain(&implicit) {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                ask.hash(&mut h);
                let key = h.finish() ^ reading ^ ASK_KEY;
                self.embedding_keys.push(key);
                let v = cache.get_or(key, || {
                    e.embed(&self.semantic_words(ask), &|id| e.rarity(id))
                });
                if v.iter().all(|x| *x == 0.0) {
                    continue;
                }
                for w in semantic::words(ask) {
                    for id in e.pieces(&w) {
                        let d = df.entry(id).or_insert((usize::MAX, 0));
                        if d.0 != entry {
                            *d = (entry, d.1 + 1);
                        }
                    }
                }
                out.push((entry, v));
            }
            if out.len() > before {
                with_asks += 1;
            }
        }
        let n = (with_asks as f32).max(2.0);
        let idf = df
            .into_iter()
            .map(|(id, (_, d))| (id, ((n / d.max(1) as f32).ln() / n.ln()).clamp(0.0, 1.0)))
            .collect();
        (out, idf)
    }

    /// A hash of what reading an ask as a query depends on that an operator sets: the
    /// vocabulary and the weights. The words the index knows and how many actions name each
    /// change a reading only at its margins (a typo corrected, a word's weight) and change with
    /// every action withdrawn or described anew: keyed by them, every reload would read all the
    /// asks again (a second in a debug build), so an ask keeps the reading of the first build
    /// with its vocabulary.
    fn reading_key(&self, catalog: &Catalog) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{:?}", catalog.vocabulary).hash(&mut h);
        format!("{:?}", self.weights).hash(&mut h);
        h.finish()
    }

    /// Everything the reading of an ask depends on beyond its words, as one number: the
    /// vocabulary and weights of [`SearchIndex::reading_key`] and the text the index is built
    /// from (every action's fields: the words a query is corrected to and weighed by). Vectors
    /// a start stored are read by a later start only under the same number (the catalog
    /// cache's `embeddings-{reading}.bin`), so a start ranks as a fresh build of its catalog would.
    pub fn reading_stamp(catalog: &Catalog) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{:?}", catalog.vocabulary).hash(&mut h);
        format!("{:?}", Weights::default()).hash(&mut h);
        for a in &catalog.actions {
            (&a.domain, &a.name, &a.title, &a.keywords).hash(&mut h);
            (&a.description, &a.usage).hash(&mut h);
            for p in &a.params {
                p.name.hash(&mut h);
            }
        }
        h.finish()
    }

    /// The cache keys of the vectors this index holds (its actions' and its asks'): what the
    /// catalog cache stores for the next start.
    pub fn embedding_keys(&self) -> &[u64] {
        &self.embedding_keys
    }

    /// Best matches for plain words, best first, at most `limit`, skipping actions for which
    /// `allow` returns false (read-only mode and exclusions withdraw actions). Never errors on
    /// any user text (quotes, colons, parentheses, unicode): tantivy query-syntax characters are
    /// neutralized. An empty/blank query returns no hits.
    pub fn search(
        &self,
        catalog: &Catalog,
        query: &str,
        limit: usize,
        allow: &dyn Fn(&Action) -> bool,
    ) -> Vec<Hit> {
        if limit == 0 {
            return Vec::new();
        }
        let groups = self.parse(query);
        if groups.is_empty() {
            return Vec::new();
        }
        let candidates = match self.text_scores(&groups, CANDIDATES.max(4 * limit)) {
            Ok(c) => c,
            Err(e) => {
                // The query is a client's argument: log its size, not its words.
                tracing::warn!(error = %e, query_chars = query.chars().count(), "search failed");
                return Vec::new();
            }
        };
        let best = candidates.iter().map(|c| c.1).fold(0.0_f32, f32::max);
        let w = &self.weights;
        let meaning = self.meaning(query, &groups);
        let mut text_of: HashMap<usize, f32> = candidates.into_iter().collect();
        // The semantic side's best actions join the lexical candidates: an action the query
        // names in no word of its own ("pods" for containers) is found by meaning alone.
        if let Some(m) = &meaning {
            let cos = m.mixed(w.asks);
            let mut by_meaning: Vec<usize> = (0..self.entries.len()).collect();
            by_meaning.sort_by(|a, b| cos[*b].total_cmp(&cos[*a]));
            for e in by_meaning.into_iter().take(w.semantic_pool) {
                text_of.entry(e).or_insert(0.0);
            }
        }
        // Candidates the query names by a keyword of the operator's, said whole, and those it
        // names only as a resource (a bare resource's convention, below).
        let mut keyword_said: HashSet<usize> = HashSet::new();
        let mut noun_only: HashSet<usize> = HashSet::new();
        let mut scored: Vec<(usize, f32)> = text_of
            .into_iter()
            .filter_map(|(entry, text)| {
                let e = &self.entries[entry];
                if !allow(catalog.get(&e.id)?) {
                    return None;
                }
                let text = if best > 0.0 { text / best } else { 0.0 };
                let fit = self.fit(e, &groups);
                if fit.operator_keyword {
                    keyword_said.insert(entry);
                }
                if fit.noun_only {
                    noun_only.insert(entry);
                }
                Some((entry, w.text * text + fit.score))
            })
            .collect();
        let by_score = |v: &mut Vec<(usize, f32)>| {
            v.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then_with(|| self.entries[a.0].id.cmp(&self.entries[b.0].id))
            })
        };
        // The lexical leader a bare resource's convention keeps first (below).
        let mut convention = None;
        if let Some(m) = &meaning {
            by_score(&mut scored);
            // How much of the query the words alone leave unexplained (a word no field knows,
            // which the lexical side drops, is unexplained): where the lexical leader explains
            // every word, the meaning only reorders near ties.
            let total: f32 = groups
                .iter()
                .filter(|g| !g.function)
                .map(|g| g.weight)
                .sum();
            let unsure = scored.first().map_or(1.0, |(entry, _)| {
                let covered = self.explain(&self.entries[*entry], &groups).1 * total;
                let all = total + m.unknown;
                if all > 0.0 { 1.0 - covered / all } else { 1.0 }
            });
            // A query of a resource's words alone ("gitops sync", "volume backup", "image")
            // says no action: the convention that its list is meant decides the first result,
            // not what the asks of the resource's other actions happen to share with its name;
            // the meaning orders the rest. The list is the best lexical candidate that the
            // query names only as a resource and explains whole, when there is one.
            if m.unknown == 0.0 {
                convention = scored.iter().take(CONVENTION_DEPTH).find_map(|(entry, _)| {
                    let e = &self.entries[*entry];
                    (e.list_verb && noun_only.contains(entry) && self.explain(e, &groups).1 >= 1.0)
                        .then_some(*entry)
                });
            }
            let semantic =
                w.sure_semantic + (w.semantic - w.sure_semantic) * unsure.powf(w.unsure_power);
            let cos = m.mixed(w.sure_asks + (w.asks - w.sure_asks) * unsure);
            if w.rrf_k > 0.0 {
                let mut sem: Vec<(usize, f32)> = scored.iter().map(|&(e, _)| (e, cos[e])).collect();
                by_score(&mut sem);
                let mut fused: HashMap<usize, f32> = HashMap::new();
                for (rank, (e, _)) in scored.iter().enumerate() {
                    *fused.entry(*e).or_default() += 1.0 / (w.rrf_k + rank as f32 + 1.0);
                }
                for (rank, (e, _)) in sem.iter().enumerate() {
                    *fused.entry(*e).or_default() += semantic / (w.rrf_k + rank as f32 + 1.0);
                }
                scored = fused.into_iter().collect();
            } else {
                // An operator's keyword is their word for the action in their deployment, and
                // an ask of its own: the query holding all its words says that ask word for
                // word, so the action's ask cosine is at least what an ask said word for word
                // gets ([`Weights::ask_alone`]), wherever the meaning of the built-in asks
                // leans. (The built-in keywords get no such floor: with it, single words such
                // as "login" or "hang" pulled 14 of the tuning sets' 1,680 queries wrong.)
                let a = w.sure_asks + (w.asks - w.sure_asks) * unsure;
                for (e, score) in &mut scored {
                    let c = if keyword_said.contains(e) {
                        cos[*e].max((1.0 - a) * m.text[*e] + a * w.ask_alone)
                    } else {
                        cos[*e]
                    };
                    *score += semantic * c;
                }
            }
        }
        by_score(&mut scored);
        if let Some(entry) = convention
            && let Some(pos) = scored.iter().position(|(e, _)| *e == entry)
        {
            lift_to_top(&mut scored, pos);
        }
        // A question ("why does my container keep exiting", "how much disk is used") is
        // answered by reading: no changing action ranks above the best read action. Every
        // action before the first read one changes something, so that one moves to the top.
        let mut passed = 0;
        if self.is_question(query)
            && let Some(pos) = scored.iter().position(|(e, _)| !self.entries[*e].changes)
        {
            lift_to_top(&mut scored, pos);
            passed = pos;
        }
        scored.truncate(limit);
        scored
            .into_iter()
            .enumerate()
            .map(|(i, (entry, score))| {
                let e = &self.entries[entry];
                let (matched, coverage) = self.explain(e, &groups);
                Hit {
                    id: e.id.clone(),
                    score,
                    matched,
                    coverage,
                    passed_over: (1..=passed).contains(&i),
                }
            })
            .collect()
    }

    /// The query's meaning against every action's, or `None` when the semantic side is off or
    /// knows none of the query's words ([`SearchIndex::query_words`]).
    fn meaning(&self, query: &str, groups: &[Group]) -> Option<Meaning> {
        let w = &self.weights;
        if w.semantic <= 0.0 {
            return None;
        }
        let (words, unknown) = self.query_words(query, groups);
        let e = semantic::embedder();
        let q = e.embed(&words, &|id| e.rarity(id));
        if q.iter().all(|x| *x == 0.0) {
            return None;
        }
        let text: Vec<f32> = self.vectors.iter().map(|v| semantic::dot(&q, v)).collect();
        let mut asks: Vec<Option<f32>> = vec![None; text.len()];
        if !self.ask_vectors.is_empty() {
            // Against the asks, a word that many actions' asks hold ("container", or "web"
            // as the name in examples) says little about which action is asked for.
            let q = if w.ask_idf > 0.0 {
                e.embed(&words, &|id| {
                    let idf = self.ask_idf.get(&id).copied().unwrap_or(1.0);
                    e.rarity(id) * (1.0 - w.ask_idf + w.ask_idf * idf)
                })
            } else {
                q
            };
            let mut best: Vec<Option<f32>> = vec![None; text.len()];
            for (entry, v) in &self.ask_vectors {
                let c = semantic::dot(&q, v);
                let b = &mut best[*entry];
                *b = Some(b.map_or(c, |b| b.max(c)));
            }
            let k = w.ask_centroid;
            for ((a, b), centre) in asks.iter_mut().zip(best).zip(&self.ask_centres) {
                *a = b.map(|b| match centre {
                    Some(c) => {
                        let mix = (1.0 - k) * b + k * semantic::dot(&q, c);
                        // The floor holds up a request close to one ask; a closest ask that
                        // points away from the request (a negative cosine) holds up nothing.
                        if b > 0.0 {
                            mix.max(w.ask_alone * b)
                        } else {
                            mix
                        }
                    }
                    None => b,
                });
            }
        }
        Some(Meaning {
            text,
            asks,
            unknown: unknown as f32,
        })
    }

    /// A query's words for the semantic side, weighted as the lexical side weighs them
    /// (function words, qualifiers and the situation less; a synonym of the vocabulary — the
    /// operator's too — beside the word typed); a word the index does not know, which the
    /// lexical side drops, is what the meaning is for and counts [`Weights::unknown_word`].
    /// Also how many such words the query has.
    fn query_words(&self, query: &str, groups: &[Group]) -> (Vec<(String, f32)>, usize) {
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

    /// The semantic side's ranking alone (best first, at most `limit` action IDs): for tests,
    /// benchmarks and measuring the fusion. Empty when the semantic side knows none of the
    /// query's words or is off.
    pub fn semantic_ranking(&self, query: &str, limit: usize) -> Vec<String> {
        let groups = self.parse(query);
        let Some(meaning) = self.meaning(query, &groups) else {
            return Vec::new();
        };
        let cos = meaning.mixed(self.weights.asks);
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by(|a, b| cos[*b].total_cmp(&cos[*a]));
        order
            .into_iter()
            .take(limit)
            .map(|e| self.entries[e].id.clone())
            .collect()
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
    fn parse(&self, query: &str) -> Vec<Group> {
        let mut analyzer = self.analyzer.clone();
        let w = &self.weights;
        let words = plain_words(query);
        // "is mfa turned on": a yes/no question asks for a state.
        let asks = words
            .first()
            .and_then(|w| Some((w.clone(), self.lexicon.questions.get(w)?)))
            .filter(|_| words.len() > 1);
        let context = self.lexicon.context(&words);
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
            let situation = !function && context.contains(first);
            if situation {
                weight *= w.qualifier;
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
        // (`verbs`) join its alternatives.
        if let Some(g) = groups.iter_mut().find(|g| {
            !g.function
                && !g.context
                && !g.qualifier
                && g.alts.iter().any(|a| {
                    self.verbs.contains(&a.stem) || self.lexicon.verbs.contains_key(&a.stem)
                })
        }) {
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
        // A qualifier says where only when something else says what: with no other resource
        // named ("what is running on this host"), it is the resource.
        let names_resource = |g: &Group| g.alts.iter().any(|a| self.resources.contains(&a.stem));
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

    /// Candidates with their text score, at most `cap`: (entry index, BM25).
    fn text_scores(&self, groups: &[Group], cap: usize) -> tantivy::Result<Vec<(usize, f32)>> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for g in groups {
            // An enumerated resource names no action: only the prose that lists it counts.
            let fields = self.fields.weighted(&self.weights);
            let fields = if g.listed { &fields[4..] } else { &fields[..] };
            for alt in &g.alts {
                for &(field, fw) in fields {
                    let term = Term::from_field_text(field, &alt.stem);
                    let q = TermQuery::new(term, IndexRecordOption::WithFreqs);
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new(q), fw * alt.weight * g.weight)),
                    ));
                }
            }
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = TopDocs::with_limit(cap.clamp(1, self.entries.len().max(1))).order_by_score();
        let found = searcher.search(&query, &top)?;
        Ok(found
            .into_iter()
            .filter_map(|(score, addr)| {
                let e = *self
                    .doc_map
                    .get(addr.segment_ord as usize)?
                    .get(addr.doc_id as usize)?;
                ((e as usize) < self.entries.len()).then_some((e as usize, score))
            })
            .collect())
    }

    /// The structure score: how the query's words line up with the action's ID and keywords.
    ///
    /// Each query word gets at most one role for an action: it names the resource (a domain
    /// word, a domain keyword, or a qualifier such as "compose" in "compose project"), or the
    /// action (a name word or an action keyword phrase). An action keyword phrase may reuse the
    /// resource's words ("status of container").
    fn fit(&self, e: &Entry, groups: &[Group]) -> Fit {
        let w = &self.weights;
        let n: f32 = groups
            .iter()
            .map(|g| g.weight)
            .sum::<f32>()
            .max(f32::EPSILON);
        let mut role: Vec<Role> = groups
            .iter()
            .map(|g| if g.listed { Role::Listed } else { Role::None })
            .collect();
        let mut cover = 0.0_f32;
        let mut surface = 0.0_f32;
        let mut domain_match = 0.0_f32;
        let mut domain_words = 0.0_f32;
        let mut name_match = 0.0_f32;
        // Name matches by an order, not a participle ("deployed" in "stacks that are deployed").
        let mut ordered = false;
        let mut lead = 0.0_f32;
        let mut name_words = 0.0_f32;
        let d_len = e.domain_words.len().max(1) as f32;
        let n_len = e.name_words.len().max(1) as f32;
        // Domain words first: a word that names the resource is not also its verb.
        for word in &e.domain_words {
            if let Some((i, aw, exact)) = best_group(groups, &role, &word.stem, &word.raw) {
                role[i] = Role::Domain;
                cover += aw * groups[i].weight;
                domain_match += aw * groups[i].weight;
                domain_words += aw * groups[i].precision_share();
                surface += f32::from(u8::from(exact));
            }
        }
        let domain_named = domain_match >= d_len * w.synonym;
        for word in &e.name_words {
            // Once the resource is named, another word for it ("compose" in "list compose
            // projects") qualifies the resource; it does not name the action.
            let found = best_group(groups, &role, &word.stem, &word.raw)
                .filter(|(i, _, _)| !(domain_named && self.names_domain(&groups[*i], e)));
            if let Some((i, aw, exact)) = found {
                // "the paused container": a participle describes the resource's state.
                let state = participle(&groups[i].typed) && !participle(&word.raw);
                let aw = if state { aw * 0.5 } else { aw };
                ordered |= !state;
                if groups[i].lead && !state {
                    lead += aw * groups[i].weight;
                }
                role[i] = Role::Name;
                cover += aw * groups[i].weight;
                name_match += aw * groups[i].weight;
                name_words += aw * groups[i].precision_share();
                surface += f32::from(u8::from(exact));
            }
        }
        // Keyword phrases: the domain's stand for the domain's words, the action's for its name.
        if domain_match < d_len {
            for phrase in &self.domain_keywords[e.domain] {
                if let Some((m, fresh)) =
                    match_phrase(phrase, groups, &mut role, Role::Domain, false)
                {
                    cover += w.keyword * fresh;
                    let share = w.keyword * m / phrase.len() as f32;
                    domain_match = domain_match.max(d_len * share);
                    domain_words = domain_words.max(d_len * share);
                }
            }
        }
        let mut operator_keyword = false;
        for ((phrase, states), operator) in e
            .keywords
            .iter()
            .zip(&e.keyword_states)
            .zip(&e.operator_keywords)
        {
            let halve = !states;
            if let Some((m, fresh)) = match_phrase(phrase, groups, &mut role, Role::Keyword, halve)
            {
                operator_keyword |= *operator;
                cover += w.keyword * fresh;
                let share = w.keyword * m / phrase.len() as f32;
                name_match = name_match.max(n_len * share);
                name_words = name_words.max(n_len * share);
                ordered = true;
                // An action's keyword says which action, and so half says which resource
                // ("is the server overloaded" is about the host's stats).
                domain_words = domain_words.max(d_len * share / 2.0);
            }
        }
        // An enumeration of resources ("containers, images and networks") is explained by an
        // action of none of them whose prose names them, like a description-only word.
        for (i, g) in groups.iter().enumerate() {
            if g.listed
                && !self.names_domain(g, e)
                && g.alts.iter().any(|a| e.prose.contains(&a.stem))
            {
                cover += w.weak_word * g.weight;
                role[i] = Role::Keyword;
            }
        }
        // Words left that name the resource again qualify it.
        if domain_match > 0.0 {
            for (i, g) in groups.iter().enumerate() {
                if role[i] == Role::None && self.names_domain(g, e) {
                    role[i] = Role::Domain;
                    cover += w.synonym * g.weight;
                }
            }
        }
        let mut score = w.cover * cover / n
            + w.precision * (domain_words + name_words) / (d_len + n_len)
            + w.domain_hit * domain_match / d_len
            + w.surface * surface / n
            + w.verb * lead / n;
        // The query names the resource and no verb (no content word left is the name of any
        // action, a state such as "running" aside): the list action is what is meant.
        let noun_only = !ordered
            && domain_match > 0.0
            && groups
                .iter()
                .zip(&role)
                .filter(|(g, r)| **r == Role::None && !g.function && !participle(&g.typed))
                .all(|(g, _)| !g.alts.iter().any(|a| self.verbs.contains(&a.stem)));
        if noun_only {
            let list = if e.list_verb {
                1.0
            } else if e.returns_list {
                0.5
            } else {
                0.0
            };
            score += w.list * list * cover / n;
        }
        Fit {
            score,
            noun_only,
            operator_keyword,
            used: role
                .iter()
                .map(|r| !matches!(r, Role::None | Role::Listed))
                .collect(),
        }
    }

    /// Whether a query word names the action's resource: a domain word or a one-word domain
    /// keyword among its alternatives.
    fn names_domain(&self, g: &Group, e: &Entry) -> bool {
        g.alts.iter().any(|a| {
            e.domain_words.iter().any(|d| d.stem == a.stem)
                || self.domain_keywords[e.domain]
                    .iter()
                    .any(|k| k.len() == 1 && k[0] == a.stem)
        })
    }

    /// Why an action matched: the words its ID, keywords or title explain, and their share.
    fn explain(&self, e: &Entry, groups: &[Group]) -> (Vec<String>, f32) {
        let fit = self.fit(e, groups);
        let mut matched = Vec::new();
        let mut covered = 0.0_f32;
        let mut total = 0.0_f32;
        for (g, used) in groups.iter().zip(&fit.used) {
            if !g.function {
                total += g.weight;
            }
            let in_title = g.alts.iter().any(|a| e.title.contains(&a.stem));
            if *used || in_title {
                if !g.function {
                    covered += g.weight;
                }
                if !matched.contains(&g.typed) {
                    matched.push(g.typed.clone());
                }
            }
        }
        let coverage = if total > 0.0 {
            covered / total
        } else if matched.is_empty() {
            0.0
        } else {
            1.0
        };
        (matched, coverage)
    }
}

impl Lexicon {
    /// The synonyms written for the very form typed (none reached through the stem).
    fn typed_synonyms(&self, word: &str) -> &[(String, String)] {
        self.synonyms
            .get(word)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The synonyms of a word, by the form typed, else by its stem, else by the form typed
    /// without a plural `s` (the stemmer keeps some plurals: `cves`).
    fn synonyms_of(&self, stem: &str, word: &str) -> &[(String, String)] {
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
    fn context(&self, words: &[String]) -> HashSet<String> {
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
    fn negated(&self, query: &str) -> HashSet<String> {
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

    fn compile(v: &Vocabulary, analyzer: &mut TextAnalyzer) -> Lexicon {
        let mut lex = Lexicon {
            negations: v
                .negations
                .iter()
                .map(|p| plain_words(p))
                .filter(|p| !p.is_empty())
                .collect(),
            ..Lexicon::default()
        };
        for (verb, kinds) in &v.verbs {
            let Some(key) = stem(analyzer, &verb.to_lowercase()) else {
                continue;
            };
            let list = lex.verbs.entry(key).or_default();
            for k in kinds {
                let raw = k.to_lowercase();
                if let Some(s) = stem(analyzer, &raw)
                    && !list.iter().any(|(e, _)| *e == s)
                {
                    list.push((s, raw));
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
    fn is_question(&self, query: &str, words: &[String], analyzer: &mut TextAnalyzer) -> bool {
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
    fn rewrite(&self, tokens: &mut Vec<Token>, analyzer: &mut TextAnalyzer) {
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
                    i += len.max(1);
                }
                None => i += 1,
            }
        }
    }
}

/// Keyword phrases as stems.
/// Keyword phrases as stems, without function words (they never match: see [`match_phrase`]).
fn phrases_of(
    keywords: &[String],
    analyzer: &mut TextAnalyzer,
    function: &HashSet<String>,
) -> Vec<Vec<String>> {
    keywords
        .iter()
        .map(|k| {
            let mut p = stems(analyzer, k);
            p.retain(|s| !function.contains(s));
            p
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// What a query word does for one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    None,
    /// Names the resource (domain word, domain keyword, qualifier).
    Domain,
    /// Names the action (a word of its name).
    Name,
    /// Part of a matched keyword phrase of the action.
    Keyword,
    /// An item of an enumeration of resources: names no single action.
    Listed,
}

/// The best group not yet given a role that names a stem: (group, alternative weight, typed
/// in the very form of the ID word).
fn best_group(
    groups: &[Group],
    role: &[Role],
    stem: &str,
    raw: &str,
) -> Option<(usize, f32, bool)> {
    groups
        .iter()
        .enumerate()
        .filter(|(i, _)| role[*i] == Role::None)
        .filter_map(|(i, g)| g.matches(stem, raw).map(|(aw, exact)| (i, aw, exact)))
        .max_by(|a, b| (a.1 * groups[a.0].weight).total_cmp(&(b.1 * groups[b.0].weight)))
}

/// A word in a form that describes a state (`stopped`, `running`), not an order.
fn participle(word: &str) -> bool {
    word.len() > 4 && (word.ends_with("ed") || word.ends_with("ing"))
}

/// Whether every word of a keyword phrase is named by a content group; if so, the groups that
/// had no role take `as_role` and (summed alternative weight, summed match weight of those
/// groups) is returned. A
/// phrase may reuse words that already have a role ("status of container" holds the word that
/// names the domain); only new words add to the cover. A word of a rewritten phrase also
/// matches by what was typed.
fn match_phrase(
    phrase: &[String],
    groups: &[Group],
    role: &mut [Role],
    as_role: Role,
    halve_participles: bool,
) -> Option<(f32, f32)> {
    let mut picked: Vec<(usize, f32, f32)> = Vec::with_capacity(phrase.len());
    for s in phrase {
        let best = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.function && !g.listed)
            .filter_map(|(i, g)| {
                // A group matches one word of the phrase, except a rewritten phrase, which
                // stands for every word typed ("environment variables" → `variables`).
                let again = picked.iter().any(|p| p.0 == i);
                let alt = g
                    .alts
                    .iter()
                    .filter(|a| a.stem == *s)
                    .map(|a| a.weight)
                    .reduce(f32::max);
                let origin = g.origin.iter().any(|o| o == s).then_some(1.0_f32);
                let m = match (alt, origin) {
                    _ if again => origin,
                    (Some(a), Some(o)) => Some(a.max(o)),
                    (a, o) => a.or(o),
                };
                // "the running containers": a participle describes a state; it does not ask
                // for what a keyword without one stands for ("docker run").
                let state = halve_participles && participle(&g.typed);
                let m = m.map(|m| if state { m * 0.5 } else { m });
                m.map(|m| (i, m, m * g.weight))
            })
            .max_by(|a, b| {
                // Prefer a word without a role, then the stronger match.
                (role[a.0] == Role::None, a.2)
                    .partial_cmp(&(role[b.0] == Role::None, b.2))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })?;
        picked.push(best);
    }
    let mut fresh = 0.0;
    for (i, _, m) in &picked {
        if role[*i] == Role::None {
            fresh += m;
            role[*i] = as_role;
        }
    }
    Some((picked.iter().map(|p| p.1).sum(), fresh))
}

/// Each action's semantic vector (of [`action_words`]), and its cache key, in action order.
/// Taken from [`semantic::EmbeddingCache`] when an earlier build embedded the same text, so a
/// reload re-embeds only the actions that changed.
fn embed_actions(
    catalog: &Catalog,
    cache: &semantic::EmbeddingCache,
) -> (Vec<std::sync::Arc<[f32]>>, Vec<u64>) {
    let e = semantic::embedder();
    catalog
        .actions
        .iter()
        .map(|a| {
            let words = action_words(catalog, a);
            let key = semantic::key_of(&words);
            (
                cache.get_or(key, || e.embed(&words, &|id| e.rarity(id))),
                key,
            )
        })
        .unzip()
}

/// The weighted words an action's semantic vector is made of ([`embed_actions`]): its ID words
/// and title weigh most, then its keywords (the operator's too) and its domain's, its
/// description, usage note and parameter names. Each field weighs its share whatever its length
/// (a long description does not drown the title). Public for the script that fits the
/// embedding table to what the search embeds (`crates/catalog/examples/search_inputs.rs`).
pub fn action_words(catalog: &Catalog, a: &Action) -> Vec<(String, f32)> {
    let domain_keywords = catalog
        .vocabulary
        .domain_keywords
        .get(&a.domain)
        .map(|k| k.join(" "))
        .unwrap_or_default();
    let params: Vec<&str> = a.params.iter().map(|p| p.name.as_str()).collect();
    let fields: [(&str, f32); 7] = [
        (&format!("{} {}", a.domain, a.name), 2.0),
        (&a.title, 2.0),
        (&a.keywords.join(" "), 1.5),
        (&domain_keywords, 0.5),
        (&a.description, 1.0),
        (&a.usage, 0.5),
        (&params.join(" "), 0.3),
    ];
    let mut words: Vec<(String, f32)> = Vec::new();
    for (text, weight) in fields {
        let ws = semantic::words(text);
        let share = weight / (ws.len().max(1) as f32).sqrt();
        words.extend(ws.into_iter().map(|w| (w, share)));
    }
    words
}

/// The requests an action is asked by that its overlays need not say: a request that names
/// only the resource ("gitops sync", "volume backup") asks for its list, the lexical side's
/// list preference said as an ask, so the meaning of a bare resource agrees with it.
pub fn implicit_asks(a: &Action) -> Vec<String> {
    if a.name == "list" {
        vec![a.domain.replace('_', " ")]
    } else {
        Vec::new()
    }
}

/// Moves the hit at `pos` to the top at the score of the hit it passes (a rule, not the
/// scores, put it first: the weak-match notice still compares it with that hit, unless the
/// rule marks it passed over). Nothing moves when `pos` is 0.
fn lift_to_top(scored: &mut Vec<(usize, f32)>, pos: usize) {
    if pos > 0 {
        let (entry, _) = scored.remove(pos);
        let top = scored[0].1;
        scored.insert(0, (entry, top));
    }
}

/// The normalised mean of each entry's ask vectors ([`Weights::ask_centroid`]).
fn centres(asks: &AskVectors, entries: usize) -> Vec<Option<Vec<f32>>> {
    let mut sums: Vec<Option<Vec<f32>>> = vec![None; entries];
    for (entry, v) in asks {
        let sum = sums[*entry].get_or_insert_with(|| vec![0.0; v.len()]);
        for (s, x) in sum.iter_mut().zip(v.iter()) {
            *s += x;
        }
    }
    for sum in sums.iter_mut().flatten() {
        semantic::normalise(sum);
    }
    sums
}

/// Text as indexed: the original words, plus the parts of camelCase words (`environmentId`
/// → `environmentId environment Id`). `_` and `.` already split (`en_stem` splits on every
/// non-alphanumeric character).
fn index_text(text: &str) -> String {
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
fn plain_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4 * MAX_WORDS)
        .map(|w| w.to_lowercase())
        .collect()
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

/// The single stem of one word, if the analyzer keeps it.
fn stem(analyzer: &mut TextAnalyzer, word: &str) -> Option<String> {
    stems(analyzer, word).into_iter().next()
}

fn stems(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// Whether a letter is one a word typed in short drops (y stays: "actvty").
fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// A word's consonants: its first letter, then its other letters but vowels, a letter that
/// repeats once the vowels are gone counted once ("secret" → "scrt", "address" → "adrs",
/// "status" → "sts", as "stts" typed is). Lower-case ASCII in, ASCII out.
fn skeleton(word: &str) -> String {
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
fn one_edit(a: &str, b: &str) -> bool {
    let (la, lb) = (a.chars().count(), b.chars().count());
    la.abs_diff(lb) <= 1 && lb >= 3 && strsim::osa_distance(a, b) == 1
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn participles_describe_states() {
        assert!(participle("stopped") && participle("running") && participle("deployed"));
        assert!(!participle("stop") && !participle("run") && !participle("red"));
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

    fn group(stems: &[&str], weight: f32, function: bool) -> Group {
        Group {
            alts: stems
                .iter()
                .map(|s| Alt {
                    stem: s.to_string(),
                    raw: s.to_string(),
                    weight: 1.0,
                })
                .collect(),
            weight,
            typed: stems[0].to_string(),
            qualifier: false,
            origin: Vec::new(),
            function,
            listed: false,
            context: false,
            lead: false,
        }
    }

    #[test]
    fn keyword_phrases_need_every_word() {
        let groups = [
            group(&["forc"], 1.0, false),
            group(&["stop"], 1.0, false),
            group(&["contain"], 0.8, false),
            group(&["the"], 0.25, true),
        ];
        let phrase = ["forc".to_string(), "stop".to_string()];
        let mut role = [Role::None; 4];
        let (m, fresh) = match_phrase(&phrase, &groups, &mut role, Role::Keyword, false).unwrap();
        assert_eq!((m, fresh), (2.0, 2.0));
        assert_eq!(role, [Role::Keyword, Role::Keyword, Role::None, Role::None]);
        // Words that already name the resource may be reused, but add nothing to the cover.
        let mut role = [Role::None, Role::None, Role::Domain, Role::None];
        let status = ["stop".to_string(), "contain".to_string()];
        let (m, fresh) = match_phrase(&status, &groups, &mut role, Role::Keyword, false).unwrap();
        assert_eq!((m, fresh), (2.0, 1.0));
        // A missing word, or one that is only a function word, fails the phrase.
        let mut role = [Role::None; 4];
        let missing = ["forc".to_string(), "kill".to_string()];
        assert!(match_phrase(&missing, &groups, &mut role, Role::Keyword, false).is_none());
        let function = ["the".to_string()];
        assert!(match_phrase(&function, &groups, &mut role, Role::Keyword, false).is_none());
        assert_eq!(role, [Role::None; 4]);
    }

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
