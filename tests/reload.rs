//! Hot reload: an edited overlay or spec is picked up and served; a broken file leaves the
//! previous catalog serving and the error names file and line.

mod fixtures;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arcane_mcp::catalog::Catalog;
use arcane_mcp::reload::{Live, Sources, watch_sources};
use arcane_mcp::spec::SpecSource;

async fn wait_for<T: Clone + PartialEq>(
    rx: &mut tokio::sync::watch::Receiver<T>,
    what: &str,
) -> Duration {
    let start = Instant::now();
    let old = rx.borrow_and_update().clone();
    tokio::time::timeout(Duration::from_secs(20), async {
        while *rx.borrow_and_update() == old {
            rx.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within 20 s"));
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_are_served_and_broken_files_keep_the_previous_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let catalog_dir = dir.path().join("catalog");
    let overrides = dir.path().join("overrides");
    std::fs::create_dir_all(&catalog_dir).unwrap();
    std::fs::create_dir_all(&overrides).unwrap();
    std::fs::copy(fixtures::spec_v2(), catalog_dir.join("openapi.json")).unwrap();
    std::fs::write(
        overrides.join("ops.yaml"),
        "actions:\n  container.list:\n    title: Before\n",
    )
    .unwrap();
    let sources = Sources {
        spec: SpecSource {
            catalog_dir: Some(catalog_dir.clone()),
            ..Default::default()
        },
        overrides_dir: Some(overrides.clone()),
        catalog_dir: Some(catalog_dir.clone()),
    };
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut gen_rx = live.subscribe();
    let mut fail_rx = live.failures();
    assert_eq!(live.load().get("container.list").unwrap().title, "Before");

    // A call in flight holds its snapshot across the swap.
    let in_flight = live.load();

    // 1. An overlay edit is served.
    std::fs::write(
        overrides.join("ops.yaml"),
        "actions:\n  container.list:\n    title: After\n",
    )
    .unwrap();
    let overlay_latency = wait_for(&mut gen_rx, "reload after the overlay edit").await;
    assert_eq!(live.load().get("container.list").unwrap().title, "After");
    assert_eq!(in_flight.get("container.list").unwrap().title, "Before");

    // 2. A broken overlay: the error names the file and line; the previous catalog serves.
    std::fs::write(
        overrides.join("ops.yaml"),
        "actions:\n  container.list:\n    title: [unclosed\n",
    )
    .unwrap();
    wait_for(&mut fail_rx, "a reported failure").await;
    let (_, err) = fail_rx.borrow().clone();
    let err = err.unwrap();
    assert!(err.contains("ops.yaml:"), "{err}");
    assert_eq!(live.load().get("container.list").unwrap().title, "After");

    // 3. A spec edit is served (a new Arcane version dropped in).
    std::fs::write(overrides.join("ops.yaml"), "actions: {}\n").unwrap();
    wait_for(&mut gen_rx, "reload after fixing the overlay").await;
    let text = std::fs::read_to_string(fixtures::spec_v1()).unwrap();
    std::fs::remove_file(catalog_dir.join("openapi.json")).unwrap();
    std::fs::write(catalog_dir.join("openapi.yaml"), text).unwrap();
    let spec_latency = wait_for(&mut gen_rx, "reload after the spec change").await;
    let mut version = live.load().arcane_version.clone();
    // The delete and the create may land in two debounced batches.
    if version != "1.11.2" {
        wait_for(&mut gen_rx, "the second reload").await;
        version = live.load().arcane_version.clone();
    }
    assert_eq!(version, "1.11.2");
    eprintln!(
        "reload latency (debug build, file write → new catalog serving): overlay {} ms, spec {} ms",
        overlay_latency.as_millis(),
        spec_latency.as_millis()
    );
}
