//! The catalog cache (`src/load/cache.rs`): a hit on unchanged files, a miss on any edit, a
//! broken or foreign entry ignored, an unwritable directory harmless, private entries, and a
//! cached catalog that serves exactly what the built one serves.

use std::path::{Path, PathBuf};

use crate::fixtures;
use crate::server_support::with_operator_overlays;

use arcane_catalog::{Catalog, ClientProfile, Policy};
use arcane_mcp::load::cache::{self, CatalogCache, Provenance};
use arcane_mcp::load::spec::SpecSource;
use arcane_mcp::surface::Surface;

/// A fresh overlay directory with one operator file, and a fresh cache directory.
fn setup() -> (tempfile::TempDir, PathBuf, CatalogCache) {
    let dir = tempfile::tempdir().unwrap();
    let overrides = dir.path().join("overrides");
    std::fs::create_dir(&overrides).unwrap();
    std::fs::write(
        overrides.join("mine.yaml"),
        "actions:\n  container.list:\n    title: My containers\n    keywords: [boxes aboard]\n",
    )
    .unwrap();
    let cache = CatalogCache::new(dir.path().join("cache"));
    (dir, overrides, cache)
}

fn entries(cache: &CatalogCache) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.dir())
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Everything a client can see of a catalog: the tool list of every surface and profile (with
/// output schemas, which come from the response schemas the public JSON leaves out), the
/// `catalog --json` view, and the names each action answers to.
fn served(cat: &Catalog) -> serde_json::Value {
    let mut tools = Vec::new();
    for surface in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        for profile in [ClientProfile::Standard, ClientProfile::Flat] {
            let policy = Policy::new(false, false, &[])
                .with_output_schemas(true)
                .with_profile(profile);
            tools.push(
                serde_json::to_value(arcane_mcp::surface::tools(surface, cat, &policy)).unwrap(),
            );
        }
    }
    let names: Vec<(String, Option<String>, Option<String>)> = cat
        .actions
        .iter()
        .map(|a| {
            (
                a.id.clone(),
                cat.resolve(&a.individual_tool_name()).map(|x| x.id.clone()),
                a.request
                    .operation_id
                    .as_deref()
                    .and_then(|op| cat.resolve(op))
                    .map(|x| x.id.clone()),
            )
        })
        .collect();
    let internals: Vec<_> = cat
        .actions
        .iter()
        .map(|a| {
            (
                &a.derived_id,
                &a.search.keywords,
                &a.search.asks,
                &a.search.operator_keywords,
                &a.output.response_schema,
            )
        })
        .collect();
    serde_json::json!({
        "tools": tools,
        "catalog": arcane_mcp::cmd::catalog::catalog_json(cat),
        "names": names,
        "internals": serde_json::to_value(internals).unwrap(),
        "vocabulary": format!("{:?}", cat.vocabulary),
        "presets": format!("{:?}", cat.presets),
        "resolvers": format!("{:?}", cat.resolvers),
        "hints": format!("{:?}", cat.error_hints),
        "unmatched": format!("{:?}", cat.unmatched_overlays),
        "applied": cat.applied_overlays,
    })
}

#[test]
fn the_cached_catalog_serves_what_the_built_one_serves() {
    let (_dir, overrides, _) = setup();
    let built = with_operator_overlays(&overrides).build().unwrap();
    let read = Catalog::from_stored(&built.to_stored()).unwrap();
    assert!(built.actions.len() > 300, "the 2.8.0 document is built");
    // The operator's keyword is told from the built-in ones, and the cache keeps it so.
    let list = built.get("container.list").unwrap();
    assert_eq!(list.search.operator_keywords, ["boxes aboard"]);
    assert!(list.search.keywords.len() > list.search.operator_keywords.len());
    assert_eq!(served(&read), served(&built));
    assert_eq!(read.generation, 0);
}

#[test]
fn a_second_start_reads_the_cache_and_an_overlay_edit_misses_it() {
    let (_dir, overrides, cache) = setup();
    let src = with_operator_overlays(&overrides);
    let (first, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Built);
    assert_eq!(
        entries(&cache).len(),
        1,
        "one entry written: {:?}",
        entries(&cache)
    );
    let (second, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Cache);
    assert_eq!(served(&second), served(&first));

    // An edit is another key: built from the files, and the edit shows.
    std::fs::write(
        overrides.join("mine.yaml"),
        "actions:\n  container.list:\n    title: Every container\n",
    )
    .unwrap();
    let (edited, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Built);
    assert_eq!(
        edited.get("container.list").unwrap().title,
        "Every container"
    );
    // A new file in the directory is an edit too.
    std::fs::write(overrides.join("more.yaml"), "actions: {}\n").unwrap();
    let (_, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Built);
    // Back to the first text: its entry is still there, and it is that catalog.
    std::fs::remove_file(overrides.join("more.yaml")).unwrap();
    std::fs::write(
        overrides.join("mine.yaml"),
        "actions:\n  container.list:\n    title: My containers\n    keywords: [boxes aboard]\n",
    )
    .unwrap();
    let (back, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Cache);
    assert_eq!(back.get("container.list").unwrap().title, "My containers");
}

#[test]
fn a_broken_file_fails_the_build_even_with_a_cache() {
    // A reload of a broken file must fail (the last good snapshot keeps serving): the cache
    // holds only catalogs of other texts, never an answer for this one.
    let (_dir, overrides, cache) = setup();
    let src = with_operator_overlays(&overrides);
    cache::load_or_build(&src, Some(&cache)).unwrap();
    std::fs::write(
        overrides.join("mine.yaml"),
        "actions:\n  container.list: [\n",
    )
    .unwrap();
    let err = cache::load_or_build(&src, Some(&cache)).unwrap_err();
    assert!(format!("{err:#}").contains("mine.yaml"), "{err:#}");
}

#[test]
fn a_corrupt_truncated_or_foreign_entry_is_ignored_and_rebuilt() {
    let (_dir, overrides, cache) = setup();
    let src = with_operator_overlays(&overrides);
    let (built, _) = cache::load_or_build(&src, Some(&cache)).unwrap();
    let entry = entries(&cache).pop().unwrap();
    let good = std::fs::read(&entry).unwrap();
    let newline = good.iter().position(|&b| b == b'\n').unwrap();
    let header = String::from_utf8(good[..newline].to_vec()).unwrap();
    let foreign_version = header.replace(
        &format!("\"version\":\"{}\"", env!("CARGO_PKG_VERSION")),
        "\"version\":\"0.0.0-other\"",
    );
    assert_ne!(
        foreign_version, header,
        "the header names the version: {header}"
    );
    let mut foreign = foreign_version.into_bytes();
    foreign.extend_from_slice(&good[newline..]);
    let corrupt: Vec<u8> = good
        .iter()
        .enumerate()
        .map(|(i, &b)| if i == good.len() / 2 { b'\x01' } else { b })
        .collect();
    for (what, bytes) in [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("corrupt", corrupt),
        ("empty", Vec::new()),
        ("no header", good[newline + 1..].to_vec()),
        ("another version", foreign),
        ("not JSON", b"\xff\xfe garbage\n\x00\x01".to_vec()),
    ] {
        std::fs::write(&entry, &bytes).unwrap();
        let (cat, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
        assert_eq!(how, Provenance::Built, "{what}");
        assert_eq!(served(&cat), served(&built), "{what}");
        // The rebuild wrote a good entry over it.
        let (_, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
        assert_eq!(how, Provenance::Cache, "{what}: rewritten");
    }
}

/// The cache is trusted like the overlay files: a private directory and private entries, and
/// an entry that others could have written is not read (the catalog is built instead).
#[cfg(unix)]
#[test]
fn entries_are_private_and_one_others_could_write_is_not_read() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_dir, overrides, cache) = setup();
    let src = with_operator_overlays(&overrides);
    cache::load_or_build(&src, Some(&cache)).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let chmod =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let entry = entries(&cache).pop().unwrap();
    assert_eq!(mode(cache.dir()), 0o700);
    assert_eq!(mode(&entry), 0o600);
    let (_, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Cache);

    // Writable by others: built from the files, and the rewrite is private again.
    chmod(&entry, 0o666);
    let (cat, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Built);
    assert_eq!(cat.get("container.list").unwrap().title, "My containers");
    assert_eq!(mode(&entry), 0o600);
    // A directory others can write into: nothing in it is read, however its entries look.
    chmod(cache.dir(), 0o777);
    for _ in 0..2 {
        let (_, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
        assert_eq!(how, Provenance::Built);
    }
    chmod(cache.dir(), 0o700);
    let (_, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Cache);
}

#[test]
fn an_unwritable_cache_directory_only_costs_the_cache() {
    let (dir, overrides, _) = setup();
    // A directory under a regular file cannot be made, whoever runs the test.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let cache = CatalogCache::new(file.join("cache"));
    let src = with_operator_overlays(&overrides);
    for _ in 0..2 {
        let (cat, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
        assert_eq!(how, Provenance::Built);
        assert_eq!(cat.get("container.list").unwrap().title, "My containers");
    }
}

#[test]
fn only_a_local_spec_is_cached() {
    let (_dir, overrides, cache) = setup();
    let mut src = with_operator_overlays(&overrides);
    assert!(cache::key(&src).is_some());
    // A document fetched from Arcane is known only after the fetch.
    src.spec = SpecSource {
        arcane_url: Some("http://127.0.0.1:9".into()),
        ..Default::default()
    };
    assert_eq!(cache::key(&src), None);
    assert!(entries(&cache).is_empty());
    // A missing overlay directory is no key either: the build reports it.
    let missing = with_operator_overlays(&overrides.join("gone"));
    assert_eq!(cache::key(&missing), None);
    assert!(cache::load_or_build(&missing, Some(&cache)).is_err());
    // A spec that is a pipe (`--spec <(…)`) is read once, by the build: hashing it would leave
    // the build nothing.
    #[cfg(unix)]
    {
        let pipe = overrides.parent().unwrap().join("spec.pipe");
        make_fifo(&pipe);
        let mut piped = with_operator_overlays(&overrides);
        piped.spec = SpecSource {
            explicit: Some(pipe.clone()),
            ..Default::default()
        };
        let spec = std::fs::read(fixtures::spec_v2()).unwrap();
        let writer = std::thread::spawn(move || std::fs::write(&pipe, spec));
        assert_eq!(cache::key(&piped), None, "not read: the build reads it");
        let (catalog, how) = cache::load_or_build(&piped, Some(&cache)).unwrap();
        writer.join().unwrap().unwrap();
        assert_eq!(how, Provenance::Built);
        assert!(catalog.get("container.list").is_some());
        assert!(entries(&cache).is_empty());
    }
}

#[test]
fn old_entries_are_pruned() {
    let (_dir, overrides, cache) = setup();
    let src = with_operator_overlays(&overrides);
    for i in 0..10 {
        std::fs::write(
            overrides.join("mine.yaml"),
            format!("actions:\n  container.list:\n    title: Containers {i}\n"),
        )
        .unwrap();
        cache::load_or_build(&src, Some(&cache)).unwrap();
    }
    let found = entries(&cache);
    assert!(
        (1..=8).contains(&found.len()),
        "at most 8 entries kept: {found:?}"
    );
    assert!(found.iter().all(|p| !p.to_string_lossy().ends_with(".tmp")));
    let (cat, how) = cache::load_or_build(&src, Some(&cache)).unwrap();
    assert_eq!(how, Provenance::Cache, "the newest entry is kept");
    assert_eq!(cat.get("container.list").unwrap().title, "Containers 9");
}

/// Starts the binary with its standard input closed (it announces itself, then ends) and
/// returns its log.
fn start_once(cache_args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .env("ARCANE_MCP_LOG", "info")
        .args(["--arcane-url", "http://127.0.0.1:9", "--api-key", "k"])
        .arg("--spec")
        .arg(fixtures::spec_v2())
        .args(cache_args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_binary_reads_its_cache_on_the_second_start() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let first = start_once(&["--catalog-cache-dir", cache_arg]);
    assert!(first.contains("catalog_cached=false"), "{first}");
    let second = start_once(&["--catalog-cache-dir", cache_arg]);
    assert!(second.contains("catalog_cached=true"), "{second}");
    assert!(second.contains("actions=354"), "{second}");
    // Turned off: neither read nor written.
    let off = dir.path().join("off");
    let log = start_once(&[
        "--catalog-cache-dir",
        off.to_str().unwrap(),
        "--no-catalog-cache",
    ]);
    assert!(log.contains("catalog_cached=false"), "{log}");
    assert!(!off.exists());
}

/// Makes a FIFO at `path`, readable and writable by its owner only (under umask 002 a FIFO
/// others may write is refused before it is opened).
#[cfg(unix)]
fn make_fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(path)
        .status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo is available");
}

/// The embedding files in `dir` that are regular files, by name, with their bytes.
fn embedding_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let wanted = name.starts_with("embeddings-") && name.ends_with(".bin");
            // Not a FIFO's: reading one would wait for a writer.
            if !wanted || !e.metadata().ok()?.is_file() {
                return None;
            }
            Some((name, std::fs::read(e.path()).ok()?))
        })
        .collect()
}

/// Starts the server with `spec` and the catalog cache in `cache_dir`, finds an action, and
/// returns its log once its embeddings are stored (`stores`) or, when nothing should be
/// stored, a moment after the answer.
fn search_once(cache_dir: &Path, spec: &Path, stores: bool) -> String {
    use std::io::{BufRead as _, Write as _};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .env("ARCANE_MCP_LOG", "arcane_mcp=debug")
        .args(["--arcane-url", "http://127.0.0.1:9", "--api-key", "k"])
        .arg("--spec")
        .arg(spec)
        .arg("--catalog-cache-dir")
        .arg(cache_dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The log, read as it comes: the store's line is its last step (the pruning included).
    let (stored_tx, stored_rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if line.contains("embeddings stored") {
                let _ = stored_tx.send(());
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    let mut stdin = child.stdin.take().unwrap();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "arcane_find_action", "arguments": {"query": "restart the web container"}}});
    writeln!(stdin, "{}", crate::process_support::INIT).unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, "{call}").unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 && !line.contains(r#""id":2"#) {
        line.clear();
    }
    assert!(line.contains("container.restart"), "{line}");
    if stores {
        // On a thread of its own after the index is built.
        let _ = stored_rx.recv_timeout(std::time::Duration::from_secs(120));
    } else {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    drop(stdin);
    child.wait().unwrap();
    log.join().unwrap()
}

/// The numbers a debug line of the log gives `field` (`vectors=11900`), in order.
fn logged(log: &str, message: &str, field: &str) -> Vec<usize> {
    log.lines()
        .filter(|l| l.contains(message))
        .filter_map(|l| {
            l.split(&format!("{field}="))
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// A stored embedding file's header (magic, stamp, dimensions) and vector count.
fn embeddings_header(bytes: &[u8]) -> (&[u8], u32) {
    let at = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize + 4;
    let count = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    (&bytes[..at], count)
}

/// The embedding vectors of the search are kept in the catalog cache, one file per catalog
/// reading: a first start computes and stores its index's vectors, a second reads them and
/// embeds nothing; a file of another build is ignored and written anew; another catalog
/// (whose asks are read with other words) has a file of its own, and the newest four files
/// are kept; a FIFO in a file's place is not waited on; temporary files a killed write left
/// are pruned.
#[test]
fn the_embeddings_are_kept_for_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (v2, v1) = (fixtures::spec_v2(), fixtures::spec_v1());
    let first = search_once(&cache, &v2, true);
    assert!(
        logged(&first, "search index built", "embedded")
            .iter()
            .sum::<usize>()
            > 0,
        "{first}"
    );
    let files = embedding_files(&cache);
    assert_eq!(files.len(), 1, "{first}");
    let (name, bytes) = files.into_iter().next().unwrap();
    assert!(bytes.starts_with(b"ARCEMBC2"));
    let (header, count) = embeddings_header(&bytes);
    assert!(count > 10_000, "every action and ask of one index: {count}");
    let stored = cache.join(&name);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&stored).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "only its owner reads it: {mode:o}");
    }
    let second = search_once(&cache, &v2, false);
    let read = logged(&second, "embeddings read from the catalog cache", "vectors");
    assert_eq!(read, [count as usize], "{second}");
    let embedded = logged(&second, "search index built", "embedded");
    assert!(
        !embedded.is_empty() && embedded.iter().all(|n| *n == 0),
        "{second}"
    );
    assert!(!second.contains("embeddings stored"), "{second}");
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
    // Bytes of another build: ignored, the index embeds everything and stores it again; the
    // temporary file of a write killed two hours ago goes, one being written now stays.
    let mut other = bytes.clone();
    other[12] ^= 1;
    std::fs::write(&stored, &other).unwrap();
    let stale = cache.join(format!(".{name}.4242.1.0.tmp"));
    let fresh = cache.join(format!(".{name}.4243.1.0.tmp"));
    for tmp in [&stale, &fresh] {
        std::fs::write(tmp, b"cut short").unwrap();
    }
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
        .unwrap();
    let third = search_once(&cache, &v2, true);
    assert!(third.contains("stored embeddings ignored"), "{third}");
    // It embedded rather than read. How many each build's line counts depends on whether a
    // search's own build raced the background one (they share the vectors) and on which lines
    // were written before the process was ended; the file stored again below holds them all.
    assert!(
        logged(&third, "search index built", "embedded")
            .iter()
            .sum::<usize>()
            > 0,
        "{third}"
    );
    assert!(!stale.exists() && fresh.exists(), "{third}");
    // Stored again with this build's stamp: the first start's bytes again.
    assert!(std::fs::read(&stored).unwrap() == bytes);
    // Another catalog (Arcane 1.11.2's document): its asks are read with other words, so it
    // reads nothing of 2.8's and stores a file of its own beside it.
    // Three files of other catalogs, one, two and three hours old: the newest four files are
    // kept, so the oldest goes.
    let planted: Vec<PathBuf> = (1..=3)
        .map(|hours| {
            let path = cache.join(format!("embeddings-{hours:016x}.bin"));
            std::fs::write(&path, b"ARCEMBC2").unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(
                    std::time::SystemTime::now() - std::time::Duration::from_secs(3600 * hours),
                )
                .unwrap();
            path
        })
        .collect();
    let fourth = search_once(&cache, &v1, true);
    assert!(
        !fourth.contains("embeddings read from the catalog cache"),
        "{fourth}"
    );
    assert!(!planted[2].exists(), "{fourth}");
    assert!(planted[0].exists() && planted[1].exists());
    for path in &planted[..2] {
        std::fs::remove_file(path).unwrap();
    }
    let files = embedding_files(&cache);
    assert_eq!(files.len(), 2, "{fourth}");
    assert_eq!(files[&name], bytes, "2.8's file is left as it was");
    let (_, theirs) = files.iter().find(|(n, _)| **n != name).unwrap();
    assert!(
        embeddings_header(theirs).0 != header,
        "stamped with its own reading"
    );
    // A FIFO in the file's place: not opened for reading (an open would wait for a writer).
    #[cfg(unix)]
    {
        std::fs::remove_file(&stored).unwrap();
        make_fifo(&stored);
        let fifth = search_once(&cache, &v2, true);
        assert!(fifth.contains("stored embeddings not read"), "{fifth}");
        assert!(std::fs::metadata(&stored).unwrap().is_file(), "{fifth}");
    }
}
