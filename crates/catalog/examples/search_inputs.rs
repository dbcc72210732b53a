//! Writes what the search's semantic side embeds, as JSON lines, for the script that fits the
//! embedding table (`scripts/distill_embeddings.py`, docs/search.md "Semantic retrieval"):
//! one line per action of the real catalog (Arcane 2.8.0's document and the built-in layers)
//! with the weighted words of its text and of each of its asks and keywords, read as the
//! search reads them; then one line per query of each evaluation file named on the command
//! line (for measuring a table outside the server).
//!
//! `cargo run -p arcane-catalog --example search_inputs -- OUT.jsonl [tests/search_eval_*.yaml…]`

use std::io::Write;

use arcane_catalog::{SearchIndex, action_words, implicit_asks};

#[path = "support/real_catalog.rs"]
mod real_catalog;

#[derive(serde::Deserialize)]
struct Query {
    query: String,
    expect: String,
    #[serde(default)]
    also: Vec<String>,
    style: String,
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: search_inputs OUT.jsonl [SET.yaml…]"))?;
    let catalog = real_catalog::real_catalog()?;
    let index = SearchIndex::build(&catalog)?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out)?);
    for a in &catalog.actions {
        let read = |texts: &[String]| -> Vec<serde_json::Value> {
            texts
                .iter()
                .map(|t| serde_json::json!({"text": t, "words": index.semantic_words(t)}))
                .collect()
        };
        let line = serde_json::json!({
            "action": a.id,
            "domain": a.domain,
            "name": a.name,
            "list": a.output.list,
            "changes": a.safety.mutating || a.safety.destructive,
            "words": action_words(&catalog, a),
            "asks": read(&a.search.asks),
            "keywords": read(&[a.search.keywords.clone(), implicit_asks(a)].concat()),
        });
        writeln!(w, "{line}")?;
    }
    for path in args {
        let set: Vec<Query> = yaml_serde::from_str(&std::fs::read_to_string(&path)?)?;
        for q in set {
            let mut want = vec![q.expect];
            want.extend(q.also);
            let line = serde_json::json!({
                "set": path,
                "query": q.query,
                "style": q.style,
                "want": want,
                "words": index.semantic_words(&q.query),
            });
            writeln!(w, "{line}")?;
        }
    }
    w.flush()?;
    Ok(())
}
