//! The search index behind `arcane_find_action`: plain words in, the best actions out.
//!
//! Two stages (see `docs/search.md`):
//! 1. **Text**: a tantivy index in RAM over every action — domain and action-name words (the ID
//!    split on `_`/`.`), title, description, usage note, parameter names — with English
//!    stemming (`en_stem`). The query is never parsed as tantivy syntax: it is split into plain
//!    words, each word becomes a group of alternatives (itself, its synonyms from [`SYNONYMS`],
//!    and, for an unknown word, the index's own words one edit away), and every alternative is
//!    a weighted term query on each field. BM25 scores the candidates.
//! 2. **Structure**: the candidates are re-ranked by how the query's words line up with the
//!    action's ID — words that name the domain, words that name the action (the verb), and,
//!    when the query names only the resource, a preference for its list action.
//!
//! Nothing here knows a specific action: the rules read the ID's shape and the catalog's words.

use std::collections::HashSet;

use anyhow::{Context, Result, ensure};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::catalog::{Action, Catalog};

/// Query words kept (after dropping stop words and repeats); the rest are ignored.
const MAX_WORDS: usize = 16;
/// Words at least this long (in characters) get typo tolerance.
const FUZZY_MIN_CHARS: usize = 4;

/// Weight of a synonym next to the word the user typed.
const SYNONYM_WEIGHT: f32 = 0.8;
/// Weight of a typo correction (a known word one edit away from an unknown one).
const TYPO_WEIGHT: f32 = 0.7;

/// Field weights of the text stage (BM25 per field, multiplied).
const W_DOMAIN: f32 = 2.0;
const W_NAME: f32 = 2.5;
const W_TITLE: f32 = 2.0;
const W_DESCRIPTION: f32 = 0.7;
const W_USAGE: f32 = 0.4;
const W_PARAMS: f32 = 0.3;

/// Weights of the final score (see `docs/search.md`).
/// The text score, relative to the best candidate's (0..1).
const W_TEXT: f32 = 1.0;
/// Share of the query's words found in the action's ID.
const W_COVER: f32 = 2.0;
/// Share of the ID's words the query names.
const W_PRECISION: f32 = 1.5;
/// A query that names only the resource prefers its list action (scaled by the cover).
const W_LIST: f32 = 0.5;
/// Share of the action's domain words the query names: the resource outweighs a verb.
const W_DOMAIN_HIT: f32 = 0.3;
/// Share of the query's words matching an ID word in the very form typed (not only the stem).
const W_SURFACE: f32 = 0.2;

/// Synonyms: general English and Docker vocabulary, one place. A query word (or phrase) on
/// the left; on the right what it also means here. A single word becomes an alternative of the
/// query word (weighted [`SYNONYM_WEIGHT`]); a phrase on the left, or several words on the
/// right, rewrite the query (the words on the right replace the phrase). Directional: add the
/// reverse entry when both ways hold.
const SYNONYMS: &[(&str, &[&str])] = &[
    // Verbs.
    ("remove", &["delete"]),
    ("rm", &["delete", "remove"]),
    ("rmi", &["delete image"]),
    ("delete", &["remove", "destroy"]),
    ("destroy", &["delete"]),
    ("erase", &["delete"]),
    ("drop", &["delete"]),
    ("deploy", &["up"]),
    ("launch", &["up", "start"]),
    ("up", &["deploy"]),
    // Compose: a project starts with `up` and stops with `down`.
    ("start", &["up"]),
    ("stop", &["down"]),
    ("create", &["add", "new"]),
    ("add", &["create"]),
    ("new", &["create"]),
    ("make", &["create"]),
    ("show", &["get", "list"]),
    ("display", &["get", "list"]),
    ("view", &["get", "list"]),
    ("inspect", &["get"]),
    ("describe", &["get"]),
    ("details", &["get"]),
    ("fetch", &["get"]),
    ("ls", &["list"]),
    ("enumerate", &["list"]),
    ("exec", &["run", "command"]),
    ("execute", &["exec", "run"]),
    ("shell", &["exec"]),
    ("terminal", &["exec"]),
    ("reboot", &["restart"]),
    ("resume", &["unpause", "start"]),
    ("suspend", &["pause"]),
    ("freeze", &["pause"]),
    ("halt", &["stop"]),
    ("terminate", &["kill", "stop"]),
    ("cleanup", &["prune"]),
    ("clean", &["prune"]),
    ("purge", &["prune"]),
    ("upgrade", &["update"]),
    ("modify", &["update"]),
    ("edit", &["update"]),
    ("change", &["update"]),
    ("rename", &["update"]),
    ("download", &["pull", "export"]),
    ("save", &["export"]),
    ("load", &["upload"]),
    ("import", &["upload"]),
    ("revert", &["rollback"]),
    ("undo", &["rollback"]),
    ("roll back", &["rollback"]),
    ("sign in", &["login"]),
    ("log in", &["login"]),
    ("sign out", &["logout"]),
    ("log out", &["logout"]),
    ("connection", &["test"]),
    ("connectivity", &["test"]),
    ("ping", &["test", "health"]),
    ("usage", &["stats"]),
    ("metrics", &["stats"]),
    ("resources", &["stats"]),
    ("status", &["state", "runtime"]),
    ("state", &["status"]),
    ("search", &["find"]),
    ("find", &["search"]),
    // Docker and Compose vocabulary.
    ("ps", &["list container"]),
    ("top", &["stats"]),
    ("compose", &["project"]),
    ("stacks", &["project"]),
    ("cve", &["vulnerability"]),
    ("cves", &["vulnerability"]),
    ("trivy", &["vulnerability scan"]),
    // Abbreviations.
    ("env", &["environment"]),
    ("envs", &["environment"]),
    ("repo", &["repository"]),
    ("repos", &["repository"]),
    ("config", &["configuration"]),
    ("cfg", &["config"]),
    ("creds", &["credential"]),
    ("var", &["variable"]),
    ("vars", &["variable"]),
    ("img", &["image"]),
    ("vol", &["volume"]),
    ("net", &["network"]),
    ("info", &["information"]),
    ("cert", &["certificate"]),
    ("certs", &["certificate"]),
    // The current user.
    ("who am i", &["me current user"]),
    ("whoami", &["me current user"]),
    ("my", &["me"]),
    ("mine", &["me"]),
    ("myself", &["me"]),
];

/// Words that carry no meaning in a search for an action.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "for", "to", "from", "with", "by", "into", "onto",
    "and", "or", "not", "is", "are", "be", "it", "its", "this", "that", "these", "those", "i",
    "we", "you", "please", "can", "could", "would", "should", "how", "do", "does", "what", "which",
    "some", "any", "there", "want", "need", "let",
];

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Canonical action ID.
    pub id: String,
    /// Relevance; only the order matters.
    pub score: f32,
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
    /// The action's name is `list`.
    list_verb: bool,
    /// The answer is a list.
    returns_list: bool,
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    domain: Field,
    name: Field,
    title: Field,
    description: Field,
    usage: Field,
    params: Field,
    ord: Field,
}

impl Fields {
    fn weighted(&self) -> [(Field, f32); 6] {
        [
            (self.domain, W_DOMAIN),
            (self.name, W_NAME),
            (self.title, W_TITLE),
            (self.description, W_DESCRIPTION),
            (self.usage, W_USAGE),
            (self.params, W_PARAMS),
        ]
    }
}

/// The search index of one catalog: immutable, `Send + Sync`, rebuilt with the catalog.
pub struct SearchIndex {
    #[allow(dead_code)]
    index: Index,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    entries: Vec<Entry>,
    /// `doc_map[segment_ord][doc_id]` → index into `entries`.
    doc_map: Vec<Vec<u32>>,
    /// Every stem in the index (to tell a typo from a known word).
    vocabulary: HashSet<String>,
    /// Stems of IDs and titles: what a typo is corrected to.
    corrections: Vec<String>,
    /// Stems of every action name's words: what a query word must be to count as a verb.
    verbs: HashSet<String>,
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
}

impl Group {
    /// The weight with which this group names `word`, and whether in the very form typed.
    fn matches(&self, word: &Word) -> Option<(f32, bool)> {
        self.alts
            .iter()
            .filter(|a| a.stem == word.stem)
            .map(|a| (a.weight, a.raw == word.raw))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
    }
}

impl SearchIndex {
    /// Builds an in-memory index over every action of the catalog.
    pub fn build(catalog: &Catalog) -> Result<SearchIndex> {
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

        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, 15_000_000)
            .context("creating the search index writer")?;
        let mut entries = Vec::with_capacity(catalog.actions.len());
        let mut verbs: HashSet<String> = HashSet::new();
        let mut corrections: HashSet<String> = HashSet::new();
        for (ord, a) in catalog.actions.iter().enumerate() {
            let params: Vec<String> = a.params.iter().map(|p| index_text(&p.name)).collect();
            let mut doc = TantivyDocument::default();
            doc.add_text(fields.domain, index_text(&a.domain));
            doc.add_text(fields.name, index_text(&a.name));
            doc.add_text(fields.title, index_text(&a.title));
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
            let entry = Entry {
                id: a.id.clone(),
                domain_words: words(&a.domain, &mut analyzer),
                name_words: words(&a.name, &mut analyzer),
                list_verb: a.name == "list",
                returns_list: a.list,
            };
            for w in &entry.name_words {
                verbs.insert(w.stem.clone());
            }
            for w in entry.domain_words.iter().chain(&entry.name_words) {
                corrections.insert(w.stem.clone());
            }
            corrections.extend(stems(&mut analyzer, &index_text(&a.title)));
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
            for (field, _) in fields.weighted() {
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
        let mut corrections: Vec<String> = corrections.into_iter().collect();
        corrections.sort();
        Ok(SearchIndex {
            index,
            reader,
            fields,
            analyzer,
            entries,
            doc_map,
            vocabulary,
            corrections,
            verbs,
        })
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
        let candidates = match self.text_scores(&groups) {
            Ok(c) => c,
            Err(e) => {
                // The query is a client's argument: log its size, not its words.
                tracing::warn!(error = %e, query_chars = query.chars().count(), "search failed");
                return Vec::new();
            }
        };
        let best = candidates.iter().map(|c| c.1).fold(0.0_f32, f32::max);
        let mut hits: Vec<Hit> = candidates
            .into_iter()
            .filter_map(|(entry, text)| {
                let e = &self.entries[entry];
                let action = catalog.get(&e.id)?;
                if !allow(action) {
                    return None;
                }
                let text = if best > 0.0 { text / best } else { 0.0 };
                let score = W_TEXT * text + self.structure(e, &groups);
                Some(Hit {
                    id: e.id.clone(),
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        hits.truncate(limit);
        hits
    }

    /// The query as groups of alternatives: plain words only, so no query syntax exists.
    fn parse(&self, query: &str) -> Vec<Group> {
        let mut analyzer = self.analyzer.clone();
        let mut words: Vec<String> = plain_words(query);
        rewrite_phrases(&mut words);
        let mut seen = HashSet::new();
        let mut groups = Vec::new();
        for word in words {
            if STOP_WORDS.contains(&word.as_str()) || !seen.insert(word.clone()) {
                continue;
            }
            let Some(s) = stem(&mut analyzer, &word) else {
                continue;
            };
            let mut alts = vec![Alt {
                stem: s.clone(),
                raw: word.clone(),
                weight: 1.0,
            }];
            for (_, syns) in SYNONYMS.iter().filter(|(k, _)| *k == word) {
                for syn in syns.iter().filter(|s| !s.contains(' ')) {
                    if let Some(stem) = stem(&mut analyzer, syn) {
                        push_alt(&mut alts, stem, syn.to_string(), SYNONYM_WEIGHT);
                    }
                }
            }
            if word.chars().count() >= FUZZY_MIN_CHARS && !self.vocabulary.contains(&s) {
                for c in self.corrections.iter().filter(|c| one_edit(&s, c)) {
                    push_alt(&mut alts, c.clone(), String::new(), TYPO_WEIGHT);
                }
            }
            groups.push(Group { alts });
            if groups.len() == MAX_WORDS {
                break;
            }
        }
        groups
    }

    /// Candidates with their text score: (entry index, BM25).
    fn text_scores(&self, groups: &[Group]) -> tantivy::Result<Vec<(usize, f32)>> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for g in groups {
            for alt in &g.alts {
                for (field, w) in self.fields.weighted() {
                    let term = Term::from_field_text(field, &alt.stem);
                    let q = TermQuery::new(term, IndexRecordOption::WithFreqs);
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new(q), w * alt.weight)),
                    ));
                }
            }
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = TopDocs::with_limit(self.entries.len().max(1)).order_by_score();
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

    /// The structure score: how the query's words line up with the action's ID.
    fn structure(&self, e: &Entry, groups: &[Group]) -> f32 {
        let n = groups.len() as f32;
        let mut used = vec![false; groups.len()];
        let mut cover = 0.0_f32;
        let mut surface = 0.0_f32;
        let mut domain_hit = 0.0_f32;
        let mut name_hit = false;
        // Domain words first: a word that names the resource is not also its verb.
        let words = e.domain_words.iter().map(|w| (w, true));
        for (word, in_domain) in words.chain(e.name_words.iter().map(|w| (w, false))) {
            let best = groups
                .iter()
                .enumerate()
                .filter(|(i, _)| !used[*i])
                .filter_map(|(i, g)| g.matches(word).map(|m| (i, m)))
                .max_by(|a, b| a.1.0.total_cmp(&b.1.0));
            if let Some((i, (w, exact))) = best {
                used[i] = true;
                cover += w;
                if exact {
                    surface += 1.0;
                }
                if in_domain {
                    domain_hit += w;
                } else {
                    name_hit = true;
                }
            }
        }
        let id_words = (e.domain_words.len() + e.name_words.len()).max(1) as f32;
        let mut score = W_COVER * cover / n
            + W_PRECISION * cover / id_words
            + W_DOMAIN_HIT * domain_hit / e.domain_words.len().max(1) as f32
            + W_SURFACE * surface / n;
        // The query names the resource and no verb (no word left is the name of any action):
        // the list action is what is meant.
        let noun_only = !name_hit
            && domain_hit > 0.0
            && groups
                .iter()
                .zip(&used)
                .filter(|(_, u)| !**u)
                .all(|(g, _)| !g.alts.iter().any(|a| self.verbs.contains(&a.stem)));
        if noun_only {
            let list = if e.list_verb {
                1.0
            } else if e.returns_list {
                0.5
            } else {
                0.0
            };
            score += W_LIST * list * cover / n;
        }
        score
    }
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

/// Applies the multi-word entries of [`SYNONYMS`]: a phrase on the left, or several words on
/// the right, replace the words typed.
fn rewrite_phrases(words: &mut Vec<String>) {
    for (from, to) in SYNONYMS {
        let Some(replacement) = to
            .iter()
            .find(|t| t.contains(' '))
            .copied()
            .or_else(|| from.contains(' ').then(|| to.first().copied()).flatten())
        else {
            continue;
        };
        let pattern: Vec<&str> = from.split(' ').collect();
        let mut i = 0;
        while i + pattern.len() <= words.len() {
            if words[i..i + pattern.len()]
                .iter()
                .zip(&pattern)
                .all(|(w, p)| w == p)
            {
                let new: Vec<String> = replacement.split(' ').map(str::to_string).collect();
                let len = new.len();
                words.splice(i..i + pattern.len(), new);
                i += len;
            } else {
                i += 1;
            }
        }
    }
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

/// Whether two words are one edit apart (insertion, deletion, substitution or transposition).
fn one_edit(a: &str, b: &str) -> bool {
    let (la, lb) = (a.chars().count(), b.chars().count());
    la.abs_diff(lb) <= 1 && lb >= FUZZY_MIN_CHARS - 1 && strsim::osa_distance(a, b) == 1
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
    fn phrases_are_rewritten() {
        let mut w: Vec<String> = ["who", "am", "i"].iter().map(|s| s.to_string()).collect();
        rewrite_phrases(&mut w);
        assert_eq!(w, vec!["me", "current", "user"]);
        let mut w: Vec<String> = ["docker", "ps"].iter().map(|s| s.to_string()).collect();
        rewrite_phrases(&mut w);
        assert_eq!(w, vec!["docker", "list", "container"]);
    }

    #[test]
    fn one_edit_apart() {
        assert!(one_edit("restrat", "restart"));
        assert!(one_edit("netwrok", "network"));
        assert!(!one_edit("restart", "restart"));
        assert!(!one_edit("abc", "xyz"));
    }
}
