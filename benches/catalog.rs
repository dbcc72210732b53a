//! Catalog build from the 2.8.0 spec, and hot-reload latency (file write → new catalog serving).
//!
//! Run: `cargo bench --bench catalog`. Reads the repository's `third_party/arcane` (or
//! `ARCANE_SHARED_DIR`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arcane_catalog::Layers;
use arcane_catalog::SpecDoc;
use arcane_catalog::{BuildInput, Catalog, build_catalog};
use arcane_mcp::load::reload::{Live, watch_sources};
use arcane_mcp::load::sources::Sources;
use criterion::{Criterion, criterion_group, criterion_main};

// The one finder of Arcane's documents, shared with the integration tests.
use arcane_test_support as fixtures;

fn spec_path() -> PathBuf {
    fixtures::spec_v2()
}

fn bench_build(c: &mut Criterion) {
    let path = spec_path();
    let text = std::fs::read_to_string(&path).expect("the 2.8.0 spec");
    c.bench_function("parse spec 2.8.0", |b| {
        b.iter(|| SpecDoc::parse(&text, "bench").unwrap())
    });
    let doc = SpecDoc::parse(&text, "bench").unwrap();
    c.bench_function("build catalog 2.8.0 (overlays included)", |b| {
        b.iter(|| {
            let layers = Layers::builtin().unwrap();
            build_catalog(BuildInput {
                spec: &doc,
                layers: &layers,
            })
            .unwrap()
        })
    });
    let sources = Sources::of_spec(path.clone());
    // What a start with unchanged files does instead (src/load/cache.rs): hash the files,
    // then read the stored catalog.
    let stored = sources.build().unwrap().to_stored();
    c.bench_function("catalog 2.8.0 from its stored form (cache hit)", |b| {
        b.iter(|| arcane_catalog::Catalog::from_stored(&stored).unwrap())
    });
    c.bench_function("hash the catalog's files (cache key)", |b| {
        b.iter(|| arcane_mcp::load::cache::key(&sources).unwrap())
    });
    c.bench_function("load + build catalog 2.8.0 from disk", |b| {
        b.iter(|| sources.build().unwrap())
    });
}

fn bench_reload(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let overrides = dir.path().join("overrides");
    std::fs::create_dir_all(&overrides).unwrap();
    let file = overrides.join("bench.yaml");
    std::fs::write(&file, "actions: {}\n").unwrap();
    let sources = Sources::of_spec(spec_path()).with_overrides(overrides.clone());
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut rx = live.subscribe();
    let mut n = 0u64;
    let mut group = c.benchmark_group("hot reload");
    group.sample_size(10);
    group.bench_function("overlay edit → new catalog serving", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                rx.borrow_and_update();
                let start = Instant::now();
                std::fs::write(
                    &file,
                    format!("actions:\n  container.list: {{title: \"T{n}\"}}\n"),
                )
                .unwrap();
                rt.block_on(async {
                    tokio::time::timeout(Duration::from_secs(10), rx.changed())
                        .await
                        .unwrap()
                        .unwrap();
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench_build, bench_reload);
criterion_main!(benches);
