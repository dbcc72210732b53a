//! Building a search index: the tantivy documents of every action, the words a query is read
//! against, and the vectors of the actions and their asks (taken from the embedding cache when
//! an earlier build made them), with the keys and the stamp they are stored under.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use anyhow::{Context, Result, ensure};
use tantivy::directory::RamDirectory;
use tantivy::schema::{FAST, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{TextAnalyzer, TokenizerManager};
use tantivy::{Index, ReloadPolicy, TantivyDocument};

use super::index::{AskVectors, Entry, Fields, SearchIndex, Word};
use super::lexicon::Lexicon;
use super::weights::Weights;
use super::words::{index_text, participle, plain_words, skeleton, stem, stems};
use crate::model::{Action, Catalog};
use crate::semantic;

/// Mixed into an ask's cache key: an ask and an action text of the same words are embedded
/// with different weights and must not share a vector.
const ASK_KEY: u64 = 0x6173_6b73_2d76_3031;

/// The index writer's memory budget: it sizes the term table (a third of it, rounded down to a
/// power of two buckets), which grows when a larger catalog needs it.
const WRITER_BUDGET: usize = 1 << 20;

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
        // The index's own tokenizers are tantivy's defaults: the analyzer a query is read with
        // is the one its documents were written with.
        let mut analyzer = TokenizerManager::default()
            .get("en_stem")
            .context("tantivy has no en_stem tokenizer")?;
        let lexicon = Lexicon::compile(&catalog.vocabulary, &mut analyzer);

        let mut domain_names: HashMap<&str, usize> = HashMap::new();
        let mut domain_keywords: Vec<Vec<Vec<String>>> = Vec::new();
        // One segment written on this thread: tantivy's IndexWriter starts threads, allocates a
        // 10,000-document channel and a term table sized by its 15 MB minimum budget, most of a
        // start's heap peak for a few hundred short documents (docs/measurements.md).
        let mut writer = Index::builder()
            .schema(sb.build())
            .single_segment_index_writer::<TantivyDocument>(RamDirectory::create(), WRITER_BUDGET)
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
            let mut keyword_text = a.search.keywords.join(" ; ");
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
            for k in &a.search.keywords {
                let Some(p) =
                    phrases_of(std::slice::from_ref(k), &mut analyzer, &lexicon.function).pop()
                else {
                    continue;
                };
                if p.iter().any(|s| !domain_words.iter().any(|d| d.stem == *s)) {
                    keyword_states.push(plain_words(k).iter().any(|w| participle(w)));
                    operator_keywords.push(a.search.operator_keywords.contains(k));
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
                returns_list: a.output.list,
                changes: a.safety.mutating || a.safety.destructive,
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
        let index = writer.finalize().context("writing the search index")?;

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
        // By token: the last entry counted, and how many entries' asks hold it. Counted only
        // when the weights use it: reading every ask's words was half a warm start's build.
        let count = self.weights.ask_idf > 0.0;
        let mut df: Vec<(usize, u32)> = vec![(usize::MAX, 0); if count { e.tokens() } else { 0 }];
        let mut with_asks = 0_u32;
        let mut pieces: HashMap<String, Vec<u32>> = HashMap::new();
        for (entry, a) in catalog.actions.iter().enumerate() {
            let before = out.len();
            let implicit = implicit_asks(a);
            // An action keyword (the operator's too) is a short request of its own.
            for ask in a
                .search
                .asks
                .iter()
                .chain(&a.search.keywords)
                .chain(&implicit)
            {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                ask.hash(&mut h);
                let key = h.finish() ^ reading ^ ASK_KEY;
                self.embedding_keys.push(key);
                let v = cache.get_or(key, || {
                    e.embed(&self.semantic_words(ask), &|id| e.rarity(id))
                });
                if v.is_zero() {
                    continue;
                }
                out.push((entry, v));
                if !count {
                    continue;
                }
                semantic::for_each_word(ask, |w| {
                    // The same words recur across the asks: each is split once.
                    if !pieces.contains_key(w) {
                        pieces.insert(w.to_string(), e.pieces(w));
                    }
                    for &id in &pieces[w] {
                        if let Some(d) = df.get_mut(id as usize)
                            && d.0 != entry
                        {
                            *d = (entry, d.1 + 1);
                        }
                    }
                });
            }
            if out.len() > before {
                with_asks += 1;
            }
        }
        let n = (with_asks as f32).max(2.0);
        let idf = df
            .into_iter()
            .enumerate()
            .filter(|(_, (_, d))| *d > 0)
            .map(|(id, (_, d))| (id as u32, ((n / d as f32).ln() / n.ln()).clamp(0.0, 1.0)))
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
            (&a.domain, &a.name, &a.title, &a.search.keywords).hash(&mut h);
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
}

/// Keyword phrases as stems, without function words (they never match: see `match_phrase` in
/// `rank.rs`).
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

/// Each action's semantic vector (of [`action_words`]), and its cache key, in action order.
/// Taken from [`semantic::EmbeddingCache`] when an earlier build embedded the same text, so a
/// reload re-embeds only the actions that changed.
fn embed_actions(
    catalog: &Catalog,
    cache: &semantic::EmbeddingCache,
) -> (Vec<std::sync::Arc<semantic::Packed>>, Vec<u64>) {
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
        (&a.search.keywords.join(" "), 1.5),
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

/// The normalised mean of each entry's ask vectors ([`Weights::ask_centroid`]).
fn centres(asks: &AskVectors, entries: usize) -> Vec<Option<Vec<f32>>> {
    let mut sums: Vec<Option<Vec<f32>>> = vec![None; entries];
    for (entry, v) in asks {
        v.add_to(sums[*entry].get_or_insert_with(|| vec![0.0; v.len()]));
    }
    for sum in sums.iter_mut().flatten() {
        semantic::normalise(sum);
    }
    sums
}
