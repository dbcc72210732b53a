//! Hot reload: an edited overlay or spec is picked up and served; a broken file leaves the
//! previous catalog serving and the error names file and line.

use crate::fixtures;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arcane_catalog::Catalog;
use arcane_mcp::load::reload::{Live, watch_sources};
use arcane_mcp::load::sources::Sources;
use arcane_mcp::load::spec::SpecSource;

/// Everything logged in this test binary (the watcher logs from its own thread, so the
/// subscriber is global); each test looks for lines naming its own temporary files.
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || LogWriter(writer.clone()))
            .with_max_level(tracing::Level::INFO)
            .try_init();
        buf
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines containing `needle`.
fn logged(needle: &str) -> Vec<String> {
    String::from_utf8_lossy(&logs().lock().unwrap())
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// A catalog directory with the 2.8.0 spec and an overlay directory, under a temporary dir.
fn setup(overlay: &str) -> (tempfile::TempDir, PathBuf, Sources) {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let catalog_dir = dir.path().join("catalog");
    let overrides = dir.path().join("overrides");
    std::fs::create_dir_all(&catalog_dir).unwrap();
    std::fs::create_dir_all(&overrides).unwrap();
    std::fs::copy(fixtures::spec_v2(), catalog_dir.join("openapi.json")).unwrap();
    std::fs::write(overrides.join("ops.yaml"), overlay).unwrap();
    let sources = Sources {
        spec: SpecSource {
            catalog_dir: Some(catalog_dir.clone()),
            ..Default::default()
        },
        overrides_dir: Some(overrides.clone()),
        catalog_dir: Some(catalog_dir),
    };
    (dir, overrides, sources)
}

fn title(live: &Live<Catalog>, id: &str) -> String {
    live.load().get(id).unwrap().title.clone()
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_report_unmatched_entries_and_what_changed() {
    let (_dir, overrides, sources) = setup("actions:\n  container.list:\n    title: Before\n");
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut gen_rx = live.subscribe();
    let file = overrides.join("ops.yaml");
    let file = std::fs::canonicalize(&file).unwrap_or(file);
    // A typo'd key: the reload still succeeds, and a warning names file:line and the closest IDs.
    std::fs::write(
        &file,
        "actions:\n  container.list:\n    title: After\n  container.restartt:\n    usage: gently\n",
    )
    .unwrap();
    wait_for(&mut gen_rx, "reload after the typo").await;
    let cat = live.load();
    assert_eq!(cat.generation, live.generation());
    assert_eq!(cat.unmatched_overlays.len(), 1);
    assert_eq!(cat.unmatched_overlays[0].line, 4);
    let name = file.file_name().unwrap().to_str().unwrap();
    let warned = logged("container.restartt");
    assert!(
        warned.iter().any(|l| l.contains("WARN")
            && l.contains(&format!("{name}:4:"))
            && l.contains("did you mean `container.restart`")),
        "{warned:?}"
    );
    // One info line per reload, with the generation and what changed.
    let line = format!("catalog reloaded (generation {})", cat.generation);
    let reloaded: Vec<String> = logged(&line)
        .into_iter()
        .filter(|l| l.contains(&file.display().to_string()))
        .collect();
    assert_eq!(reloaded.len(), 1, "{reloaded:?}");
    assert!(
        reloaded[0].contains("1 unmatched") && reloaded[0].contains("+0 [] -0 []"),
        "{reloaded:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_and_recreated_overlay_directory_is_watched_again() {
    let (_dir, overrides, sources) = setup("actions:\n  container.list:\n    title: One\n");
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut gen_rx = live.subscribe();
    let mut fail_rx = live.failures();

    std::fs::remove_dir_all(&overrides).unwrap();
    // The missing directory is a failed reload: the last catalog keeps serving.
    wait_for(
        &mut fail_rx,
        "the failure of the reload without the directory",
    )
    .await;
    assert_eq!(title(&live, "container.list"), "One");

    std::fs::create_dir(&overrides).unwrap();
    std::fs::write(
        overrides.join("ops.yaml"),
        "actions:\n  container.list:\n    title: Two\n",
    )
    .unwrap();
    wait_for(&mut gen_rx, "reload after the directory came back").await;
    // The directory may come back in two debounced batches (made, then written).
    if title(&live, "container.list") != "Two" {
        wait_for(&mut gen_rx, "the reload of the written file").await;
    }
    assert_eq!(title(&live, "container.list"), "Two");

    // Later edits inside the new directory are still seen.
    std::fs::write(
        overrides.join("ops.yaml"),
        "actions:\n  container.list:\n    title: Three\n",
    )
    .unwrap();
    wait_for(&mut gen_rx, "reload after an edit in the new directory").await;
    assert_eq!(title(&live, "container.list"), "Three");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_overlays_and_empty_specs_keep_the_last_good_catalog() {
    let (dir, overrides, sources) = setup("actions:\n  container.list:\n    title: Good\n");
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut fail_rx = live.failures();
    let before = live.load().actions.len();

    // 200 KB nested 100,000 deep: refused with file:line (not parsed for seconds).
    std::fs::write(
        overrides.join("deep.yaml"),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .unwrap();
    wait_for(&mut fail_rx, "the deep overlay's failure").await;
    let err = fail_rx.borrow().1.clone().unwrap();
    assert!(err.contains("deep.yaml:1: nested deeper than"), "{err}");
    std::fs::remove_file(overrides.join("deep.yaml")).unwrap();

    // A spec that parses but has no operations: refused, the 354 actions stay.
    let mut gen_rx = live.subscribe();
    wait_for(&mut gen_rx, "reload after removing the deep overlay").await;
    let spec = dir.path().join("catalog/openapi.json");
    std::fs::write(
        &spec,
        r#"{"openapi":"3.1.0","info":{"title":"Arcane","version":"2.8.0"},"paths":{}}"#,
    )
    .unwrap();
    wait_for(&mut fail_rx, "the empty spec's failure").await;
    let err = fail_rx.borrow().1.clone().unwrap();
    assert!(err.contains("has no operations"), "{err}");
    assert_eq!(live.load().actions.len(), before);
    assert_eq!(title(&live, "container.list"), "Good");
    let refused = logged("has no operations");
    assert!(
        refused
            .iter()
            .any(|l| l.contains("ERROR") && l.contains("keeps serving")),
        "{refused:?}"
    );

    // An older Arcane drops more than a quarter of the actions: served, with a loud warning.
    let text = std::fs::read_to_string(fixtures::spec_v1()).unwrap();
    std::fs::remove_file(&spec).unwrap();
    std::fs::write(dir.path().join("catalog/openapi.yaml"), text).unwrap();
    wait_for(&mut gen_rx, "reload to 1.11.2").await;
    if live.load().arcane_version != "1.11.2" {
        wait_for(&mut gen_rx, "the second reload").await;
    }
    assert_eq!(live.load().arcane_version, "1.11.2");
    let origin = dir.path().join("catalog/openapi.yaml");
    let loud = logged("DROPS MORE THAN A QUARTER");
    assert!(
        loud.iter()
            .any(|l| l.contains("WARN") && l.contains(&origin.display().to_string())),
        "{loud:?}"
    );
}

#[test]
fn change_counts_drops() {
    let v2 = Sources::of_spec(fixtures::spec_v2()).build().unwrap();
    let v1 = Sources::of_spec(fixtures::spec_v1()).build().unwrap();
    let down = arcane_mcp::load::reload::Change::between(&v2, &v1);
    assert!(down.drops_many());
    assert_eq!(down.actions, v1.actions.len());
    assert_eq!(
        v2.actions.len() + down.added.len() - down.removed.len(),
        v1.actions.len()
    );
    let up = arcane_mcp::load::reload::Change::between(&v1, &v2);
    assert!(!up.drops_many());
    assert!(!arcane_mcp::load::reload::Change::between(&v2, &v2).drops_many());
}

/// A prompt added by an operator's overlay is served after the reload; a broken prompt entry
/// fails the next one with FILE:LINE, and the last good prompts keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_prompt_entry_keeps_the_last_good_prompts() {
    let (_dir, overrides, sources) = setup("actions: {}\n");
    let live: Arc<Live<Catalog>> = Arc::new(Live::new(sources.build().unwrap()));
    let _guard = watch_sources(sources, live.clone(), |s| s.build()).unwrap();
    let mut gen_rx = live.subscribe();
    let mut fail_rx = live.failures();
    let built_in = live.load().prompts.len();
    std::fs::write(
        overrides.join("ops.yaml"),
        "prompts:\n  ours:\n    description: Ours\n    template: Read {{container.logs}}.\n",
    )
    .unwrap();
    wait_for(&mut gen_rx, "reload after the new prompt").await;
    assert_eq!(live.load().prompts.len(), built_in + 1);
    let reloaded = logged("prompts +[ours]");
    assert_eq!(reloaded.len(), 1, "{reloaded:?}");

    std::fs::write(
        overrides.join("ops.yaml"),
        "prompts:\n  ours:\n    description: Ours\n    template: Read {{container.logs}} of {{who}}.\n",
    )
    .unwrap();
    wait_for(&mut fail_rx, "a reported failure").await;
    let (_, err) = fail_rx.borrow().clone();
    let err = err.unwrap();
    assert!(
        err.contains("ops.yaml:4: prompt `ours`: the template uses `{{who}}`"),
        "{err}"
    );
    let cat = live.load();
    let ours = cat.prompts.iter().find(|p| p.name == "ours").unwrap();
    assert_eq!(ours.actions(), ["container.logs"]);
}
