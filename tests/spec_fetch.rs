//! The spec fetched from Arcane (`GET {ARCANE_URL}/api/openapi.json`), cached on disk, and the
//! stale cache used when Arcane cannot be reached.

mod fixtures;

use arcane_mcp::spec::SpecSource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetched_then_cached_then_served_from_the_cache() {
    arcane_mcp::http::ensure_crypto_provider();
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(fixtures::spec_v1()))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache").join("openapi.json");
    let source = SpecSource {
        arcane_url: Some(sim.base_url()),
        cache_path: Some(cache.clone()),
        ..Default::default()
    };
    let doc = tokio::task::spawn_blocking({
        let s = source.clone();
        move || s.load()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(doc.version(), "1.11.2");
    assert!(doc.origin.ends_with("/api/openapi.json"));
    assert!(cache.is_file(), "the fetched document is cached");
    sim.shutdown().await;

    // Arcane is gone: the cached copy serves.
    let doc = tokio::task::spawn_blocking({
        let s = source.clone();
        move || s.load()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(doc.version(), "1.11.2");

    // No cache either: a clear error naming what to set.
    let no_cache = SpecSource {
        cache_path: Some(dir.path().join("absent.json")),
        ..source
    };
    let err = tokio::task::spawn_blocking(move || no_cache.load())
        .await
        .unwrap()
        .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("ARCANE_URL") && msg.contains("--spec"),
        "{msg}"
    );
}
