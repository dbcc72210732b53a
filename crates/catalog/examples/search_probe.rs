//! Prints, for each query on the command line, the first results of the lexical side alone, the
//! semantic side alone and the fused search over the real catalog (Arcane 2.8.0's document and
//! the built-in layers): how to read a miss (docs/search.md, "Measuring it"). `SEARCH_WEIGHTS`
//! sets other weights, as in the search tests.
//!
//! `cargo run -p arcane-catalog --example search_probe -- "env vars of the db container" …`

use arcane_catalog::{SearchIndex, Weights};

#[path = "support/real_catalog.rs"]
mod real_catalog;

fn main() -> anyhow::Result<()> {
    let catalog = real_catalog::real_catalog()?;
    let weights = Weights::from_env();
    let fused = SearchIndex::build_with(&catalog, weights)?;
    let lexical = SearchIndex::build_with(
        &catalog,
        Weights {
            semantic: 0.0,
            ..weights
        },
    )?;
    let top = |ix: &SearchIndex, q: &str| -> String {
        ix.search(&catalog, q, 4, &|_| true)
            .iter()
            .map(|h| format!("{} {:.2}", h.id, h.score))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for q in std::env::args().skip(1) {
        println!("{q}");
        let words: Vec<String> = fused
            .semantic_words(&q)
            .iter()
            .map(|(w, x)| format!("{w} {x:.2}"))
            .collect();
        println!("  words:    {}", words.join(", "));
        println!("  lexical:  {}", top(&lexical, &q));
        println!("  semantic: {}", fused.semantic_ranking(&q, 4).join(", "));
        println!("  fused:    {}", top(&fused, &q));
    }
    Ok(())
}
