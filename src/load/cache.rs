//! The catalog cache: built catalogs kept on disk, keyed by a hash of everything a build reads,
//! so that a start whose files did not change skips parsing the document, scanning the overlay
//! files and deriving the actions (most of the startup: docs/measurements.md).
//!
//! The key is a SHA-256 over the cache's format version, this binary's version, size and
//! modification time, the built-in overlay and declaration files, the spec file's path and
//! bytes (or the built-in document's name and compressed bytes), and the name and bytes of every YAML file in the catalog and overlay directories.
//! Reading the files costs little; parsing them is what a hit saves. Any change to an input is
//! another key, so a stale entry is never read; an entry that cannot be read or parsed, or was
//! written by another format or version, is ignored (debug log) and the catalog is built.
//! Entries are written to a temporary file and renamed into place, and a directory that cannot
//! be written only costs the cache.
//!
//! An entry is a catalog: it decides what every action sends, so it is trusted like the overlay
//! files. On Unix the directory is created `0700` and entries `0600`, and an entry is read only
//! when it and its directory belong to the user running the server and nobody else can write
//! them (a shared or world-writable directory is used for nothing but rebuilding).
//!
//! Beside the catalogs, files hold the search's embedding vectors (`embeddings-{reading}.bin`):
//! the index of a catalog is built on its own thread after the start, and reading the vectors
//! an earlier start computed makes that build a tenth of its cold time (docs/search.md, "Off
//! the startup path"). A file holds the vectors of one catalog's index and is named and stamped
//! with that catalog's reading (an ask's vector depends on the words the index holds), so
//! configurations sharing the directory (the demo and a real server, two Arcane versions) keep
//! one file each; the newest four are kept. A file is written by a build that embedded
//! something new, and read once per process, under the same ownership checks as the catalogs.
//!
//! Only a spec read from a local regular file (or built into the binary: the demo's) is cached:
//! a document fetched from Arcane is known only after the fetch, which costs more than the
//! build it would save, and a pipe (`--spec <(…)`) can be read once, by the build. `check`, `catalog` and
//! `catalog --diff` build from the files ([`Sources::build`]), as they exist to report what the
//! files hold.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use arcane_catalog::semantic::EmbeddingCache;
use arcane_catalog::{Catalog, Layers};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::ServeArgs;
use crate::load::dirs;
use crate::load::sources::Sources;

/// Changes whenever the stored form of a catalog changes, so that older entries are ignored.
const FORMAT: u32 = 9;
/// Entries kept in the directory (the newest ones); older entries are deleted after a write.
const KEEP: usize = 8;
/// An entry larger than this is not read (a catalog of Arcane's 2.8 document is about 2 MB).
const MAX_ENTRY_BYTES: u64 = 64 * 1024 * 1024;
/// The stored embedding vectors' files (beside the catalogs, one per catalog reading:
/// `embeddings-{reading}.bin`), how many are kept (the newest; about 3 MB each for Arcane
/// 2.8's catalog), and the most of one that is read (the cache holds at most 32,768 vectors of
/// 268 bytes).
const EMBEDDINGS: &str = "embeddings-";
const KEEP_EMBEDDINGS: usize = 4;
const MAX_EMBEDDINGS_BYTES: u64 = 10 * 1024 * 1024;
/// A file is hashed only when at most this large; a larger one is not cached (the build
/// refuses it with its own message).
const MAX_INPUT_BYTES: u64 = 32 * 1024 * 1024;

/// A directory of cached catalogs.
#[derive(Debug, Clone)]
pub struct CatalogCache {
    dir: PathBuf,
}

/// Where a catalog came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Read from a cache entry of the files' hash.
    Cache,
    /// Built from the files.
    Built,
}

/// The first line of an entry: what wrote it, and for which inputs.
#[derive(Serialize, Deserialize, PartialEq)]
struct Header {
    format: u32,
    version: String,
    key: String,
}

impl CatalogCache {
    /// The catalog cache the settings name: `None` with `--no-catalog-cache` or without a
    /// cache directory.
    pub fn from_args(args: &ServeArgs) -> Option<CatalogCache> {
        if args.no_catalog_cache {
            return None;
        }
        let dir = args
            .catalog_cache_dir
            .clone()
            .or_else(|| Some(dirs::cache_home()?.join("catalogs")))?;
        Some(CatalogCache::new(dir))
    }

    pub fn new(dir: PathBuf) -> CatalogCache {
        CatalogCache { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("catalog-{key}.json"))
    }

    /// The cached catalog of `key`, if an entry of this format and version exists and parses.
    pub fn load(&self, key: &str) -> Option<Catalog> {
        let path = self.path(key);
        if !only_mine(&path) {
            return None;
        }
        let bytes = match open_regular(&path).and_then(|f| read_capped_from(f, MAX_ENTRY_BYTES)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                tracing::debug!(path = %path.display(), "catalog cache entry too large; ignored");
                return None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "cannot read the catalog cache entry; building");
                return None;
            }
        };
        let Some(newline) = bytes.iter().position(|&b| b == b'\n') else {
            tracing::debug!(path = %path.display(), "catalog cache entry has no header; ignored");
            return None;
        };
        let expected = header(key);
        match serde_json::from_slice::<Header>(&bytes[..newline]) {
            Ok(h) if h == expected => {}
            _ => {
                tracing::debug!(path = %path.display(), "catalog cache entry of another format or version; ignored");
                return None;
            }
        }
        match Catalog::from_stored(&bytes[newline + 1..]) {
            Ok(catalog) => Some(catalog),
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "corrupt catalog cache entry; ignored");
                None
            }
        }
    }

    /// Writes `catalog` as the entry of `key` (temporary file + rename) and prunes old entries.
    /// A failure is logged at debug level only: the cache is an optimization.
    pub fn store(&self, key: &str, catalog: &Catalog) {
        if let Err(e) = self.try_store(key, catalog) {
            tracing::debug!(dir = %self.dir.display(), error = %e, "cannot write the catalog cache; the next start builds again");
        }
    }

    fn try_store(&self, key: &str, catalog: &Catalog) -> std::io::Result<()> {
        use std::io::Write as _;
        let header = serde_json::to_vec(&header(key)).map_err(std::io::Error::other)?;
        self.write_whole(&self.path(key), |f| {
            let mut out = std::io::BufWriter::new(f);
            out.write_all(&header)?;
            out.write_all(b"\n")?;
            catalog.write_stored(&mut out)?;
            out.flush()
        })?;
        self.prune();
        Ok(())
    }

    /// Writes the file `path` of the directory whole: `write` fills a new private temporary
    /// file, which is then renamed into place (a reader sees the old file or the new one,
    /// never part of one); on a failure the temporary file is removed. No fsync: a file cut
    /// short by a crash fails to parse, or its length check, and is written again.
    fn write_whole<T>(
        &self,
        path: &Path,
        write: impl FnOnce(std::fs::File) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        create_private_dir(&self.dir)?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = self.dir.join(format!(".{name}.{}.tmp", unique()));
        let done = private_file(&tmp)
            .and_then(write)
            .and_then(|t| std::fs::rename(&tmp, path).map(|()| t));
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }

    fn embeddings_path(&self, reading: u64) -> PathBuf {
        self.dir.join(format!("{EMBEDDINGS}{reading:016x}.bin"))
    }

    /// Adds the embedding vectors an earlier start stored to the process-wide cache the search
    /// index is built from; once per process and directory (a reload's index finds them in
    /// memory). `reading` is the catalog's [`arcane_catalog::SearchIndex::reading_stamp`]: vectors stored for
    /// another catalog are not read (its asks were read with other words). Anything
    /// unreadable, of another build, table or catalog, not a regular file, or another user's is
    /// ignored (debug log).
    pub fn load_embeddings(&self, reading: u64) {
        // Held while the file is read: a second build of the index waits for the vectors
        // rather than computing them beside the read.
        static LOADED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.contains(&self.dir) {
            return;
        }
        loaded.push(self.dir.clone());
        let path = self.embeddings_path(reading);
        if !only_mine(&path) {
            return;
        }
        let file = match open_regular(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "stored embeddings not read");
                return;
            }
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if len > MAX_EMBEDDINGS_BYTES {
            tracing::debug!(path = %path.display(), "stored embeddings too large; ignored");
            return;
        }
        let mut input = std::io::BufReader::new(file);
        match EmbeddingCache::global().read_from(&mut input, len, &embeddings_stamp(reading)) {
            Ok(n) => tracing::debug!(vectors = n, "embeddings read from the catalog cache"),
            Err(why) => {
                tracing::debug!(path = %path.display(), why, "stored embeddings ignored")
            }
        }
    }

    /// Writes the vectors of `keys` (an index's:
    /// [`arcane_catalog::SearchIndex::embedding_keys`]) for the next start of the catalog whose
    /// reading is `reading`, to that reading's file (temporary file + rename), then prunes; a
    /// failure costs only the next start's time (debug log).
    pub fn store_embeddings(&self, reading: u64, keys: &[u64]) {
        let written = self.write_whole(&self.embeddings_path(reading), |f| {
            EmbeddingCache::global().write_to(
                &mut std::io::BufWriter::new(f),
                &embeddings_stamp(reading),
                keys,
            )
        });
        self.prune();
        // Logged last: the store is done (a test waits for this line).
        match written {
            Ok(n) => tracing::debug!(vectors = n, "embeddings stored in the catalog cache"),
            Err(e) => {
                tracing::debug!(error = %e, "cannot store the embeddings; the next start embeds again")
            }
        }
    }

    /// Deletes all but the newest [`KEEP`] catalog entries and [`KEEP_EMBEDDINGS`] embedding
    /// files (other settings or versions sharing the directory keep theirs while they are in
    /// use), and the temporary files of writes that a crash or a kill cut short (those older
    /// than [`STALE_TMP`]: a write in progress takes well under a second).
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        let (mut catalogs, mut embeddings) = (Vec::new(), Vec::new());
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Some(modified) = e.metadata().ok().and_then(|m| m.modified().ok()) else {
                continue;
            };
            if name.starts_with("catalog-") && name.ends_with(".json") {
                catalogs.push((modified, e.path()));
            } else if name.starts_with(EMBEDDINGS) && name.ends_with(".bin") {
                embeddings.push((modified, e.path()));
            } else if (name.starts_with(".catalog-") || name.starts_with(&format!(".{EMBEDDINGS}")))
                && name.ends_with(".tmp")
                && now.duration_since(modified).unwrap_or_default() > STALE_TMP
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
        for (mut found, keep) in [(catalogs, KEEP), (embeddings, KEEP_EMBEDDINGS)] {
            found.sort_by_key(|e| std::cmp::Reverse(e.0));
            for (_, path) in found.into_iter().skip(keep) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// A temporary file's name part no other write shares: the process (a container's server is
/// often process 1 at every start, so the time too: a file a killed write left cannot block the
/// next start's) and the process's count of writes (two writers of one file never share a
/// temporary file).
fn unique() -> String {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{}.{nanos}.{n}", std::process::id())
}

/// How old a temporary file of the cache is when [`CatalogCache::prune`] deletes it.
const STALE_TMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// The stamp of stored embedding vectors: the build's, and the reading of the catalog whose
/// index stored them.
fn embeddings_stamp(reading: u64) -> String {
    format!("{} reading {reading:016x}", build_stamp())
}

/// Opens `path` for reading only if it is a regular file: neither a symbolic link (not
/// followed) nor a FIFO or device, whose open or read could block a start for ever.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOFOLLOW,
    );
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Creates the cache directory (and missing parents) readable and writable by its owner only.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// A new file readable and writable by its owner only (the rename keeps the mode).
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Whether an entry may be read: it and its directory belong to the user running the server
/// and neither is writable by group or others. A missing entry is not reported (a plain miss).
#[cfg(unix)]
fn only_mine(entry: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let check = |path: &Path| match std::fs::metadata(path) {
        Ok(m) if m.uid() == me && m.mode() & 0o022 == 0 => Some(true),
        Ok(_) => {
            tracing::debug!(path = %path.display(), "catalog cache entry or directory is another user's or writable by others; not read");
            Some(false)
        }
        Err(_) => None,
    };
    let dir = entry.parent().unwrap_or(Path::new("."));
    check(dir).unwrap_or(false) && check(entry).unwrap_or(false)
}

#[cfg(not(unix))]
fn only_mine(_: &Path) -> bool {
    true
}

/// What tells this server's build from others: the cache's format, the version, and — since
/// the version stays the same across builds of one release — the executable's size and time (a
/// build whose model changed never reads another build's entries).
fn build_stamp() -> String {
    let mut stamp = format!("format {FORMAT} version {}", env!("CARGO_PKG_VERSION"));
    if let Some(meta) = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
    {
        stamp.push_str(&format!(" size {}", meta.len()));
        if let Ok(since) = meta
            .modified()
            .map(|t| t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default())
        {
            stamp.push_str(&format!(" modified {}", since.as_nanos()));
        }
    }
    stamp
}

fn header(key: &str) -> Header {
    Header {
        format: FORMAT,
        version: env!("CARGO_PKG_VERSION").to_string(),
        key: key.to_string(),
    }
}

/// Reads at most `cap` bytes of a file; `None` when it is larger.
fn read_capped(path: &Path, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    read_capped_from(std::fs::File::open(path)?, cap)
}

/// [`read_capped`] of an open file.
fn read_capped_from(file: std::fs::File, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// The hash of everything a build of `sources` reads, or `None` when it cannot be cached (a
/// spec fetched from Arcane, a file that cannot be read: the build then reports it).
pub fn key(sources: &Sources) -> Option<String> {
    let mut h = Sha256::new();
    let part = |h: &mut Sha256, bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(&mut h, build_stamp().as_bytes());
    for (name, bytes) in Layers::builtin_files() {
        part(&mut h, name.as_bytes());
        part(&mut h, bytes);
    }
    if let Some(builtin) = sources.spec.builtin_used() {
        part(&mut h, b"builtin spec");
        part(&mut h, builtin.name.as_bytes());
        part(&mut h, builtin.identity);
    } else {
        let spec = sources.spec.local_file()?;
        // A pipe (`--spec <(…)`) can be read once, and that read is the build's: hashing it
        // first would leave the build nothing.
        if !std::fs::metadata(&spec).is_ok_and(|m| m.is_file()) {
            return None;
        }
        part(&mut h, b"spec");
        part(&mut h, spec.display().to_string().as_bytes());
        part(&mut h, &read_capped(&spec, MAX_INPUT_BYTES).ok()??);
    }
    for (tag, dir) in [
        ("catalog", &sources.catalog_dir),
        ("overrides", &sources.overrides_dir),
    ] {
        let Some(dir) = dir else { continue };
        part(&mut h, tag.as_bytes());
        if tag == "catalog" && !dir.is_dir() {
            // A missing catalog directory is allowed (no declarations).
            continue;
        }
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        paths.sort();
        for path in paths {
            part(&mut h, path.display().to_string().as_bytes());
            if path.is_file() {
                part(&mut h, &read_capped(&path, MAX_INPUT_BYTES).ok()??);
            }
        }
    }
    Some(
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
    )
}

/// The catalog of `sources`: a cache entry of the files' hash when there is one, else built
/// from the files (and stored for the next start). Without a cache, the build.
pub fn load_or_build(
    sources: &Sources,
    cache: Option<&CatalogCache>,
) -> Result<(Catalog, Provenance)> {
    let Some(cache) = cache else {
        return Ok((sources.build()?, Provenance::Built));
    };
    let Some(before) = key(sources) else {
        return Ok((sources.build()?, Provenance::Built));
    };
    if let Some(catalog) = cache.load(&before) {
        tracing::debug!(key = %&before[..12], "catalog read from the cache");
        return Ok((catalog, Provenance::Cache));
    }
    let catalog = sources.build()?;
    // A file edited while the build read it: the catalog may hold the new text, so it is not
    // stored under the old text's key (the reload that follows the edit stores its own).
    if key(sources).as_deref() == Some(before.as_str()) {
        cache.store(&before, &catalog);
        tracing::debug!(key = %&before[..12], "catalog built and cached");
    }
    Ok((catalog, Provenance::Built))
}
