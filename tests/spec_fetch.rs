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
    // The fetch blocks (it runs its own runtime), so it runs off the async workers.
    let load =
        |s: SpecSource| async move { tokio::task::spawn_blocking(move || s.load()).await.unwrap() };
    let doc = load(source.clone()).await.unwrap();
    assert_eq!(doc.version(), "1.11.2");
    assert!(doc.origin.ends_with("/api/openapi.json"));
    assert!(cache.is_file(), "the fetched document is cached");
    sim.shutdown().await;

    // Arcane is gone: the cached copy serves.
    let doc = load(source.clone()).await.unwrap();
    assert_eq!(doc.version(), "1.11.2");

    // No cache either: a clear error naming what to set.
    let no_cache = SpecSource {
        cache_path: Some(dir.path().join("absent.json")),
        ..source
    };
    let err = load(no_cache).await.unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("ARCANE_URL") && msg.contains("--spec"),
        "{msg}"
    );
}
