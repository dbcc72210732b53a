//! Hot reload: the live snapshot behind an atomic pointer, and the file watcher that rebuilds it.
//!
//! Calls load the current snapshot once (`Live::load`) and keep that `Arc` until they finish, so
//! a swap never changes the catalog under a call in flight. A rebuild that fails (a file that
//! does not parse or validate, a spec without operations) leaves the previous snapshot serving
//! and logs the error. A successful one logs one line of what changed, with its generation.
//!
//! Directories are watched together with their parents, so that a watched directory deleted and
//! made again (an editor or a `git checkout` replacing it) is watched anew instead of silently
//! going deaf.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use arc_swap::ArcSwap;
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::watch;

use crate::spec::SpecSource;
use arcane_catalog::Layers;
use arcane_catalog::SpecDoc;
use arcane_catalog::{BuildInput, Catalog, build_catalog};

/// Every file the catalog is built from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub spec: SpecSource,
    /// An operator's overlay directory (`--overrides`), layered over the built-in overlays.
    pub overrides_dir: Option<PathBuf>,
    /// The catalog directory: `openapi.json|yaml` and extra declaration files (`*.yaml`).
    pub catalog_dir: Option<PathBuf>,
}

impl Sources {
    /// Loads the spec and every layer and builds a catalog.
    pub fn build(&self) -> Result<Catalog> {
        // The document and the overlay files are independent: read them on two threads (each
        // is a good part of the startup).
        let (doc, layers) = std::thread::scope(|s| {
            match std::thread::Builder::new()
                .name("overlays".into())
                .spawn_scoped(s, || self.layers())
            {
                Ok(layers) => {
                    let doc = self.load_spec();
                    let layers = layers.join().unwrap_or_else(|_| {
                        Err(anyhow!("reading the overlay files failed unexpectedly"))
                    });
                    (doc, layers)
                }
                Err(_) => (self.load_spec(), self.layers()),
            }
        });
        let (doc, layers) = (doc?, layers?);
        let catalog = build_catalog(BuildInput {
            spec: &doc,
            layers: &layers,
        })
        .with_context(|| format!("building the catalog from {}", doc.origin));
        // A fetched document is cached only once a catalog was built from it.
        if catalog.is_ok() {
            self.spec.remember(&doc);
        }
        // Freeing the parsed document and files (trees of many small allocations) is off the
        // startup's path; without a thread they are freed here.
        let _ = std::thread::Builder::new()
            .name("free-sources".into())
            .spawn(move || drop((doc, layers)));
        catalog
    }

    /// Loads the OpenAPI document; one without operations is refused (a truncated download or
    /// the wrong file would otherwise empty the catalog).
    pub fn load_spec(&self) -> Result<SpecDoc> {
        let doc = self.spec.load()?;
        let operations = doc
            .root
            .get("paths")
            .and_then(serde_json::Value::as_object)
            .map(|paths| {
                paths
                    .values()
                    .filter_map(serde_json::Value::as_object)
                    .flat_map(|item| item.keys())
                    .filter(|k| {
                        matches!(
                            k.as_str(),
                            "get" | "head" | "post" | "put" | "patch" | "delete" | "options"
                        )
                    })
                    .count()
            })
            .unwrap_or(0);
        if operations == 0 {
            bail!(
                "{}: the OpenAPI document has no operations (its `paths` is empty or missing) — \
                 put Arcane's own document there ({{ARCANE_URL}}/api/openapi.json)",
                doc.origin
            );
        }
        Ok(doc)
    }

    /// The built-in layers plus the operator's declaration and overlay directories. Both
    /// directories are checked even when the first has errors; the error lists them all.
    pub fn layers(&self) -> Result<Layers> {
        let mut layers = Layers::builtin()?;
        let mut problems = Vec::new();
        if let Some(dir) = &self.catalog_dir
            && dir.is_dir()
            && let Err(e) = layers.add_declaration_dir(dir)
        {
            problems.push(format!("{e:#}"));
        }
        if let Some(dir) = &self.overrides_dir
            && let Err(e) = layers.add_overlay_dir(dir)
        {
            problems.push(format!("{e:#}"));
        }
        if problems.is_empty() {
            Ok(layers)
        } else {
            Err(anyhow!(problems.join("\n")))
        }
    }

    /// What the catalog directory (`--catalog-dir`) adds, when it adds anything: a relative
    /// one (the default, `catalog`) is found in the working directory, so a server started
    /// in another directory loads other files without a word unless this is logged
    /// ([`announce_catalog_dir`]) and shown by `check`.
    pub fn catalog_dir_use(&self) -> Option<CatalogDirUse> {
        let dir = self.catalog_dir.as_ref().filter(|d| d.is_dir())?;
        let declarations: Vec<String> = arcane_catalog::yaml_paths(dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            // The OpenAPI document is not a declaration file (`add_declaration_dir`).
            .filter(|n| !n.starts_with("openapi."))
            .collect();
        let spec = if self.spec.explicit.is_none() {
            self.spec
                .local_file()
                .filter(|p| p.parent() == Some(dir.as_path()))
                .and_then(|p| p.file_name()?.to_str().map(str::to_string))
        } else {
            None
        };
        if declarations.is_empty() && spec.is_none() {
            return None;
        }
        Some(CatalogDirUse {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
            relative: dir.is_relative(),
            declarations,
            spec,
        })
    }

    /// What to watch: (directory, predicate on changed paths).
    fn watch_targets(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(p) = self.spec.local_file()
            && let Some(parent) = p.parent()
        {
            dirs.push(absolute(parent));
        }
        for d in [&self.overrides_dir, &self.catalog_dir]
            .into_iter()
            .flatten()
        {
            if d.is_dir() {
                dirs.push(absolute(d));
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Whether a changed path is one the catalog is built from.
    fn is_source(&self, path: &Path) -> bool {
        let path = absolute(path);
        if let Some(spec) = self.spec.local_file()
            && absolute(&spec) == path
        {
            return true;
        }
        let yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let in_dir = |d: &Option<PathBuf>| {
            d.as_ref()
                .is_some_and(|d| path.parent() == Some(absolute(d).as_path()))
        };
        // A new openapi file in the catalog directory also counts.
        let spec_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("openapi."));
        (yaml && (in_dir(&self.overrides_dir) || in_dir(&self.catalog_dir)))
            || (spec_name && in_dir(&self.catalog_dir))
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        }
    })
}

/// The live value, swapped atomically, with a generation counter subscribers can await.
pub struct Live<S> {
    current: ArcSwap<S>,
    generation: watch::Sender<u64>,
    /// Count of failed reloads and the last error, for logs, tests and status reports.
    failures: watch::Sender<(u64, Option<String>)>,
}

impl<S> Live<S> {
    pub fn new(initial: S) -> Self {
        Live {
            current: ArcSwap::from_pointee(initial),
            generation: watch::channel(0).0,
            failures: watch::channel((0, None)).0,
        }
    }

    /// The current snapshot; hold it for the whole call.
    pub fn load(&self) -> Arc<S> {
        self.current.load_full()
    }

    /// Swaps in a new snapshot and wakes subscribers.
    pub fn store(&self, next: S) {
        self.current.store(Arc::new(next));
        self.generation.send_modify(|g| *g += 1);
    }

    /// The number of swaps so far.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver that changes on every swap (the server sends `list_changed` from it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Records a failed reload; the current snapshot is untouched.
    pub fn record_failure(&self, error: String) {
        self.failures.send_modify(|(n, last)| {
            *n += 1;
            *last = Some(error);
        });
    }

    /// A receiver of `(failed reloads so far, last error)`.
    pub fn failures(&self) -> watch::Receiver<(u64, Option<String>)> {
        self.failures.subscribe()
    }
}

/// What the reloader reads and stamps in a live value: its catalog.
pub trait Reloadable {
    fn catalog(&self) -> &Catalog;
    fn catalog_mut(&mut self) -> &mut Catalog;
}

impl Reloadable for Catalog {
    fn catalog(&self) -> &Catalog {
        self
    }
    fn catalog_mut(&mut self) -> &mut Catalog {
        self
    }
}

impl Reloadable for crate::snapshot::Snapshot {
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }
    fn catalog_mut(&mut self) -> &mut Catalog {
        // A copy only while the search index's thread still holds the catalog.
        std::sync::Arc::make_mut(&mut self.catalog)
    }
}

/// Logs one warning per overlay entry that matches nothing (at startup and every reload).
/// What the catalog directory adds ([`Sources::catalog_dir_use`]).
#[derive(Debug, Clone)]
pub struct CatalogDirUse {
    /// The directory, absolute.
    pub dir: PathBuf,
    /// Given as a relative path (the default `catalog` is): found in the working directory.
    pub relative: bool,
    /// The declaration files loaded from it (file names).
    pub declarations: Vec<String>,
    /// The OpenAPI document taken from it (no `--spec`), its file name.
    pub spec: Option<String>,
}

impl CatalogDirUse {
    /// One sentence: what is loaded from where, and how to choose otherwise.
    pub fn text(&self) -> String {
        let mut what = Vec::new();
        if !self.declarations.is_empty() {
            what.push(format!(
                "{} declaration file(s) ({})",
                self.declarations.len(),
                self.declarations.join(", ")
            ));
        }
        if let Some(spec) = &self.spec {
            what.push(format!("the OpenAPI document {spec}"));
        }
        let whence = if self.relative {
            ", found relative to the working directory (--catalog-dir, default `catalog`)"
        } else {
            " (--catalog-dir)"
        };
        format!(
            "the catalog directory {}{whence} adds {} to the catalog; if that is not meant, set \
             --catalog-dir / ARCANE_MCP_CATALOG_DIR to the directory you mean (an absolute path; \
             an empty or missing directory adds nothing)",
            self.dir.display(),
            what.join(" and ")
        )
    }
}

/// Logs what the catalog directory adds at startup: a WARN when it was found relative to the
/// working directory (files an operator may not know are there), INFO when it was named by an
/// absolute path.
pub fn announce_catalog_dir(sources: &Sources) {
    if let Some(used) = sources.catalog_dir_use() {
        if used.relative {
            tracing::warn!(dir = %used.dir.display(), files = used.declarations.len(), "{}", used.text());
        } else {
            tracing::info!(dir = %used.dir.display(), files = used.declarations.len(), "{}", used.text());
        }
    }
}

pub fn warn_unmatched(catalog: &Catalog) {
    for u in &catalog.unmatched_overlays {
        tracing::warn!("{u}");
    }
}

/// What a reload changed, for its log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub generation: u64,
    pub actions: usize,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub overlays_applied: usize,
    pub unmatched: usize,
}

impl Change {
    /// The difference between the serving catalog and the next one.
    pub fn between(prev: &Catalog, next: &Catalog) -> Change {
        let old: std::collections::BTreeSet<&str> =
            prev.actions.iter().map(|a| a.id.as_str()).collect();
        let new: std::collections::BTreeSet<&str> =
            next.actions.iter().map(|a| a.id.as_str()).collect();
        Change {
            generation: next.generation,
            actions: next.actions.len(),
            added: new.difference(&old).map(|s| s.to_string()).collect(),
            removed: old.difference(&new).map(|s| s.to_string()).collect(),
            overlays_applied: next.applied_overlays,
            unmatched: next.unmatched_overlays.len(),
        }
    }

    /// Whether the reload dropped more than a quarter of the actions.
    pub fn drops_many(&self) -> bool {
        let before = self.actions + self.removed.len() - self.added.len();
        self.removed.len() * 4 > before
    }
}

/// A few IDs of a list, for a log line.
fn sample(ids: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

type FileWatcher = Debouncer<RecommendedWatcher, RecommendedCache>;

/// Keeps the watcher alive; dropping it stops watching.
pub struct WatchGuard {
    _debouncer: Arc<Mutex<FileWatcher>>,
}

/// Watches the sources and, on a change, rebuilds with `rebuild` and swaps it into `live`.
///
/// `rebuild` runs on the watcher's thread; a failure is logged with its error (file and line)
/// and the previous snapshot keeps serving. A success is stamped with the next generation and
/// logged in one line saying what changed.
pub fn watch_sources<S, F>(sources: Sources, live: Arc<Live<S>>, rebuild: F) -> Result<WatchGuard>
where
    S: Reloadable + Send + Sync + 'static,
    F: Fn(&Sources) -> Result<S> + Send + 'static,
{
    let targets = sources.watch_targets();
    let filter = sources.clone();
    // The callback re-adds the watch of a directory made again; it reaches the debouncer
    // through a weak handle so that dropping the guard still stops everything.
    let handle: Arc<OnceLock<Weak<Mutex<FileWatcher>>>> = Arc::new(OnceLock::new());
    let callback_handle = handle.clone();
    let watched = targets.clone();
    let debouncer = new_debouncer(
        Duration::from_millis(60),
        None,
        move |res: DebounceEventResult| {
            let events = match res {
                Ok(events) => events,
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "file watcher error");
                    }
                    return;
                }
            };
            let touched: Vec<PathBuf> = events
                .iter()
                .filter(|e| !e.kind.is_access())
                .flat_map(|e| e.paths.iter())
                .cloned()
                .collect();
            // A watched directory that went away or reappeared: rebuild either way (a missing
            // directory is a failed reload, logged), and watch one that reappeared anew, since
            // its old watch died with it.
            let mut dir_event = false;
            for dir in watched.iter().filter(|d| touched.iter().any(|p| absolute(p) == **d)) {
                dir_event = true;
                if !dir.is_dir() {
                    tracing::warn!(
                        dir = %dir.display(),
                        "a watched directory was removed; the last catalog keeps serving until it is back"
                    );
                    continue;
                }
                let Some(debouncer) = callback_handle.get().and_then(Weak::upgrade) else {
                    return;
                };
                let mut debouncer = debouncer.lock().unwrap_or_else(|p| p.into_inner());
                let _ = debouncer.unwatch(dir);
                match debouncer.watch(dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        tracing::info!(dir = %dir.display(), "watching the directory again (it was made anew)");
                    }
                    Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the directory again; later edits there are not picked up"),
                }
            }
            let relevant = touched.iter().find(|p| filter.is_source(p)).cloned();
            let changed = match (relevant, dir_event) {
                (Some(p), _) => p,
                (None, true) => watched[0].clone(),
                (None, false) => return,
            };
            let started = Instant::now();
            match rebuild(&filter) {
                Ok(mut next) => {
                    let prev = live.load();
                    next.catalog_mut().generation = live.generation() + 1;
                    let change = Change::between(prev.catalog(), next.catalog());
                    warn_unmatched(next.catalog());
                    if change.drops_many() {
                        tracing::warn!(
                            removed = change.removed.len(),
                            before = prev.catalog().actions.len(),
                            after = change.actions,
                            "THIS RELOAD DROPS MORE THAN A QUARTER OF THE ACTIONS ({} of {}): check that {} is the Arcane document you meant",
                            change.removed.len(),
                            prev.catalog().actions.len(),
                            next.catalog().spec_origin
                        );
                    }
                    tracing::info!(
                        changed = %changed.display(),
                        rebuild_ms = started.elapsed().as_millis() as u64,
                        "catalog reloaded (generation {}): Arcane {}, {} actions, +{} [{}] -{} [{}], {} overlay entries applied, {} unmatched",
                        change.generation,
                        next.catalog().arcane_version,
                        change.actions,
                        change.added.len(),
                        sample(&change.added),
                        change.removed.len(),
                        sample(&change.removed),
                        change.overlays_applied,
                        change.unmatched,
                    );
                    live.store(next);
                }
                Err(e) => {
                    tracing::error!(
                        changed = %changed.display(),
                        "reload failed; the previous catalog keeps serving: {e:#}"
                    );
                    live.record_failure(format!("{e:#}"));
                }
            }
        },
    )
    .context("cannot start the file watcher")?;
    let debouncer = Arc::new(Mutex::new(debouncer));
    let _ = handle.set(Arc::downgrade(&debouncer));
    {
        let mut d = debouncer.lock().unwrap_or_else(|p| p.into_inner());
        for dir in &targets {
            d.watch(dir, RecursiveMode::NonRecursive)
                .with_context(|| format!("cannot watch {}", dir.display()))?;
            tracing::debug!(dir = %dir.display(), "watching for catalog changes");
        }
        // The parents see a watched directory deleted and made again.
        let mut parents: Vec<&Path> = targets
            .iter()
            .filter_map(|d| d.parent())
            .filter(|p| !targets.iter().any(|t| t == p))
            .collect();
        parents.sort();
        parents.dedup();
        for parent in parents {
            if let Err(e) = d.watch(parent, RecursiveMode::NonRecursive) {
                tracing::warn!(dir = %parent.display(), error = %e, "cannot watch the parent directory; a watched directory deleted and made again will not be noticed");
            }
        }
    }
    Ok(WatchGuard {
        _debouncer: debouncer,
    })
}
