//! Hot reload: the live snapshot behind an atomic pointer, and the file watcher that rebuilds it.
//!
//! Calls load the current snapshot once (`Live::load`) and keep that `Arc` until they finish, so
//! a swap never changes the catalog under a call in flight. A rebuild that fails (a file that
//! does not parse or validate, a spec without operations) leaves the previous snapshot serving
//! and logs the error. A successful one logs one line of what changed (actions and prompts),
//! with its generation; the handler tells clients the tools, resources and prompts changed.
//!
//! Directories are watched together with their parents, so that a watched directory deleted and
//! made again (an editor or a `git checkout` replacing it) is watched anew instead of silently
//! going deaf.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use arc_swap::ArcSwap;
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::watch;

use crate::load::sources::{Sources, absolute};
use arcane_catalog::Catalog;

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

impl Reloadable for crate::load::snapshot::Snapshot {
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }
    fn catalog_mut(&mut self) -> &mut Catalog {
        // A copy only while the search index's thread still holds the catalog.
        std::sync::Arc::make_mut(&mut self.catalog)
    }
}

/// Logs one warning per overlay entry that matches nothing (at startup and every reload), and
/// the operator's changes of impact class.
/// Built-in entries (for actions another Arcane version has) are one line at info level: a
/// server on Arcane 1.11.2 would otherwise open with a thousand warnings nobody can act on.
pub fn warn_unmatched(catalog: &Catalog) {
    let mut built_in = 0;
    for u in &catalog.unmatched_overlays {
        if u.is_built_in() {
            built_in += 1;
        } else {
            tracing::warn!("{u}");
        }
    }
    // The person's confirmation is what an operator's reclass changes: said at every start
    // and reload, a warning when it stops asking (docs/security.md#reclassing).
    for r in &catalog.reclassed {
        if r.now.asks() {
            tracing::info!("{r}");
        } else {
            tracing::warn!("{r}");
        }
    }
    let unclassed: Vec<&str> = catalog.unclassed().map(|a| a.id.as_str()).collect();
    if !unclassed.is_empty() {
        tracing::info!(
            count = unclassed.len(),
            actions = %unclassed.join(", "),
            "unclassed writes are asked until an overlay gives them an `impact` (docs/security.md#impact-classes)"
        );
    }
    if built_in > 0 {
        tracing::info!(
            entries = built_in,
            arcane_version = %catalog.arcane_version,
            "built-in overlay entries for actions this Arcane spec lacks (written for another Arcane version; nothing to fix) — `arcane-mcp catalog` lists them"
        );
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
    /// The operator's entries matching nothing (built-in ones may be for another version).
    pub unmatched: usize,
    /// Prompts (`prompts:` of the overlays) new in this catalog, and gone from it.
    pub prompts_added: Vec<String>,
    pub prompts_removed: Vec<String>,
}

impl Change {
    /// The difference between the serving catalog and the next one.
    pub fn between(prev: &Catalog, next: &Catalog) -> Change {
        let old: std::collections::BTreeSet<&str> =
            prev.actions.iter().map(|a| a.id.as_str()).collect();
        let new: std::collections::BTreeSet<&str> =
            next.actions.iter().map(|a| a.id.as_str()).collect();
        let names = |c: &Catalog| -> std::collections::BTreeSet<String> {
            c.prompts.iter().map(|p| p.name.clone()).collect()
        };
        let (old_prompts, new_prompts) = (names(prev), names(next));
        Change {
            prompts_added: new_prompts.difference(&old_prompts).cloned().collect(),
            prompts_removed: old_prompts.difference(&new_prompts).cloned().collect(),
            generation: next.generation,
            actions: next.actions.len(),
            added: new.difference(&old).map(|s| s.to_string()).collect(),
            removed: old.difference(&new).map(|s| s.to_string()).collect(),
            overlays_applied: next.applied_overlays,
            unmatched: next
                .unmatched_overlays
                .iter()
                .filter(|u| !u.is_built_in())
                .count(),
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
            let (events, lost) = match res {
                // The kernel's queue overflowed: which files changed is unknown.
                Ok(events) => {
                    let lost = events.iter().any(|e| e.need_rescan());
                    (events, lost)
                }
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "file watcher error");
                    }
                    // Events may have been lost with the error: read the sources again
                    // rather than keep a catalog that may be stale.
                    (Vec::new(), true)
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
                (None, false) if lost => watched[0].clone(),
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
                        "catalog reloaded (generation {}): Arcane {}, {} actions, +{} [{}] -{} [{}], {} prompts +[{}] -[{}], {} overlay entries applied, {} unmatched",
                        change.generation,
                        next.catalog().arcane_version,
                        change.actions,
                        change.added.len(),
                        sample(&change.added),
                        change.removed.len(),
                        sample(&change.removed),
                        next.catalog().prompts.len(),
                        sample(&change.prompts_added),
                        sample(&change.prompts_removed),
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
            // What the build (or the old snapshot, when nothing holds it any more) freed.
            crate::load::snapshot::return_freed_memory();
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
