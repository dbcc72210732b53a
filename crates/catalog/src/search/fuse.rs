//! One search: the lexical candidates (BM25 over the index, re-ranked by structure) and the
//! semantic side's (the query's meaning against each action's text and asks) fused into one
//! ranking, then the rules that decide the first result (a bare resource's list, a question's
//! read action).

use std::collections::{HashMap, HashSet};

use tantivy::Term;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;

use super::index::SearchIndex;
use super::query::Group;
use super::rank::Hit;
use crate::model::{Action, Catalog};
use crate::semantic;

/// The best text matches re-ranked by structure (at least four times the limit): the
/// structure pass costs per candidate, and an action no query word names in any field well
/// enough to be among these is not what was meant.
const CANDIDATES: usize = 96;

/// How deep in the lexical ranking a bare resource's list action is looked for (it ranks near
/// the top: the query names its resource and nothing else).
const CONVENTION_DEPTH: usize = 8;

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

impl SearchIndex {
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
        let focus = super::focus::focus(&self.lexicon, query);
        let query = &*focus.text;
        let groups = self.parse_focused(&focus);
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
        let packed = semantic::Packed::pack(&q);
        let text: Vec<f32> = self.vectors.iter().map(|v| v.dot(&packed)).collect();
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
            let packed = semantic::Packed::pack(&q);
            for (entry, v) in &self.ask_vectors {
                let c = v.dot(&packed);
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

    /// The semantic side's ranking alone (best first, at most `limit` action IDs): for tests,
    /// benchmarks and measuring the fusion. Empty when the semantic side knows none of the
    /// query's words or is off.
    pub fn semantic_ranking(&self, query: &str, limit: usize) -> Vec<String> {
        let focus = super::focus::focus(&self.lexicon, query);
        let query = &*focus.text;
        let groups = self.parse_focused(&focus);
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
