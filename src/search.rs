//! TEMPORARY stand-in for the search index (issue: search engine, built on branch `search`).
//!
//! Same signatures as the real `src/search.rs`; the lead replaces this file with the tantivy
//! index on merge. It scores actions by how many query words appear in their ID, title and
//! description, which is enough for the server's wiring and its tests.

use anyhow::Result;

use crate::catalog::{Action, Catalog};

/// The search index over a catalog.
pub struct SearchIndex;

/// One match: a canonical action ID and its score (higher is better).
pub struct Hit {
    pub id: String,
    pub score: f32,
}

impl SearchIndex {
    /// Builds the index of a catalog.
    pub fn build(_catalog: &Catalog) -> Result<SearchIndex> {
        Ok(SearchIndex)
    }

    /// The best `limit` actions for `query` among those `allow` accepts, best first.
    pub fn search(
        &self,
        catalog: &Catalog,
        query: &str,
        limit: usize,
        allow: &dyn Fn(&Action) -> bool,
    ) -> Vec<Hit> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| {
                let w = w.to_ascii_lowercase();
                w.strip_suffix('s')
                    .filter(|s| s.len() > 2)
                    .map(str::to_string)
                    .unwrap_or(w)
            })
            .collect();
        let mut hits: Vec<Hit> = catalog
            .actions
            .iter()
            .filter(|a| allow(a))
            .filter_map(|a| {
                let id = a.id.to_ascii_lowercase();
                let text = format!("{} {}", a.title, a.description).to_ascii_lowercase();
                let score: f32 = words
                    .iter()
                    .map(|w| {
                        if a.domain == *w || a.name == *w {
                            3.0
                        } else if id.contains(w.as_str()) {
                            2.0
                        } else if text.contains(w.as_str()) {
                            1.0
                        } else {
                            0.0
                        }
                    })
                    .sum();
                (score > 0.0).then(|| Hit {
                    id: a.id.clone(),
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.truncate(limit);
        hits
    }
}
