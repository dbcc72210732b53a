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
//! Beside them the semantic side compares the query's meaning with each action's text and asks,
//! and the two rankings are fused.
//!
//! Nothing here knows a specific action or word: the rules read the ID's shape, the catalog's
//! words and the vocabulary of the overlays (`overrides/vocabulary.yaml`, `overrides/search.yaml`).
//!
//! The files, lowest first (each imports only those above it): `weights.rs` (the ranking's
//! weights), `words.rs` (words, stems, typo shapes), `lexicon.rs` (the vocabulary compiled, and
//! what it says of a query), `focus.rs` (a long request: evidence aside, the asking sentence
//! first), `index.rs` (what an index holds), `query.rs` (a query read into
//! groups of alternatives), `build.rs` (building an index, its vectors and cache keys),
//! `rank.rs` (the structure stage and the weak-match rule), `fuse.rs` (one search: both sides
//! fused).

mod build;
mod focus;
mod fuse;
mod index;
mod lexicon;
mod query;
mod rank;
mod weights;
mod words;

pub use build::{action_words, implicit_asks};
pub use index::SearchIndex;
pub use rank::{CLEAR_LEAD, Hit, is_weak, is_weak_with};
pub use weights::Weights;
