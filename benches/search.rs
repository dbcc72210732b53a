//! Search latency and index build time over the real catalog (Arcane 2.8.0).
//!
//! `cargo bench --bench search` (add `-- --measurement-time 2` for a quick run). The spec is
//! read from the repository's `third_party/arcane`, or from `ARCANE_SHARED_DIR`.
//! `search/eval-set` runs every query of `tests/search_eval.yaml` once per iteration: divide by
//! the number of queries for the mean time per query.

use std::hint::black_box;
use std::path::PathBuf;

use arcane_catalog::semantic::EmbeddingCache;
use arcane_catalog::{Action, Catalog};
use arcane_catalog::{SearchIndex, Weights};
use arcane_mcp::load::sources::Sources;
use criterion::{Criterion, criterion_group, criterion_main};

// The one finder of Arcane's documents, shared with the integration tests.
use arcane_test_support as fixtures;

const QUERIES: &[&str] = &[
    "restart container",
    "scale swarm service",
    "who am i",
    "containers",
    "restrat container",
    "scan image vulnerabilities for the latest nginx tag please",
    "what is eating my disk space",
    "the frontend container has been unresponsive for ten minutes and a normal stop does not \
     work, please terminate it immediately so I can start it again",
];

fn catalog() -> Catalog {
    Sources::of_spec(fixtures::spec_v2())
        .build()
        .expect("the catalog builds")
}

/// The queries of the evaluation set.
fn eval_queries() -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Set {
        queries: Vec<Query>,
    }
    #[derive(serde::Deserialize)]
    struct Query {
        q: String,
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/search_eval.yaml");
    let text = std::fs::read_to_string(path).expect("tests/search_eval.yaml is readable");
    let set: Set = yaml_serde::from_str(&text).expect("tests/search_eval.yaml parses");
    set.queries.into_iter().map(|q| q.q).collect()
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    c.bench_function("search/build", |b| {
        b.iter(|| SearchIndex::build(black_box(&catalog)).expect("builds"))
    });
    // A first build (or one after every action changed): every action is embedded.
    c.bench_function("search/build (cold: every action embedded)", |b| {
        b.iter(|| {
            let cache = EmbeddingCache::default();
            SearchIndex::build_cached(black_box(&catalog), Weights::default(), &cache)
                .expect("builds")
        })
    });
    let index = SearchIndex::build(&catalog).expect("builds");
    let lexical = SearchIndex::build_with(
        &catalog,
        Weights {
            semantic: 0.0,
            ..Weights::default()
        },
    )
    .expect("builds");
    let all = |_: &Action| true;
    // Each retriever alone, on the longest query: what the semantic side costs.
    let long = QUERIES[QUERIES.len() - 1];
    c.bench_function("search/lexical only/30-word request", |b| {
        b.iter(|| lexical.search(&catalog, black_box(long), 10, &all))
    });
    c.bench_function("search/semantic only/30-word request", |b| {
        b.iter(|| index.semantic_ranking(black_box(long), 10))
    });
    let read_only = |a: &Action| !a.safety.mutating;
    for q in QUERIES {
        let name: String = q.chars().take(60).collect();
        c.bench_function(&format!("search/query/{name}"), |b| {
            b.iter(|| index.search(&catalog, black_box(q), 10, &all))
        });
    }
    c.bench_function("search/query/restart container (read-only)", |b| {
        b.iter(|| index.search(&catalog, black_box("restart container"), 10, &read_only))
    });
    let queries = eval_queries();
    c.bench_function(
        &format!("search/eval-set ({} queries)", queries.len()),
        |b| {
            b.iter(|| {
                for q in &queries {
                    black_box(index.search(&catalog, black_box(q), 10, &all));
                }
            })
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
