//! The spec fetched from Arcane (`GET {ARCANE_URL}/api/openapi.json`), cached on disk, and the
//! stale cache used when Arcane cannot be reached.

use crate::fixtures;

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

/// `catalog --spec NEW --diff live` compares with the spec the Arcane at ARCANE_URL serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_preview_against_the_live_arcane() {
    arcane_mcp::http::ensure_crypto_provider();
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(fixtures::spec_v1()))
        .await
        .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .env("ARCANE_URL", sim.base_url())
        .args(["catalog", "--json", "--diff", "live", "--spec"])
        .arg(fixtures::spec_v2())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["oldVersion"], "1.11.2");
    assert_eq!(v["newVersion"], "2.8.0");
    assert!(
        v["oldSpec"]
            .as_str()
            .unwrap()
            .ends_with("/api/openapi.json"),
        "{}",
        v["oldSpec"]
    );
    let n = |k: &str| v[k].as_array().unwrap().len() as u64;
    assert_eq!(
        v["unchanged"].as_u64().unwrap() + n("renamed") + n("added"),
        v["newActions"].as_u64().unwrap()
    );
    assert!(n("removed") > 0 && n("added") > n("removed"));
    sim.shutdown().await;

    // Without ARCANE_URL, `live` says what to set.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .args(["catalog", "--diff", "live", "--spec"])
        .arg(fixtures::spec_v2())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("set ARCANE_URL"));
}
