//! Hot reload: the live snapshot behind an atomic pointer, and the file watcher that rebuilds it.
//!
//! Calls load the current snapshot once (`Live::load`) and keep that `Arc` until they finish, so
//! a swap never changes the catalog under a call in flight. A rebuild that fails (a file that
//! does not parse or validate) leaves the previous snapshot serving and logs the error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use arc_swap::ArcSwap;
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use tokio::sync::watch;

use crate::catalog::overlay::Layers;
use crate::catalog::{BuildInput, Catalog, build_catalog};
use crate::spec::SpecSource;

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
        let doc = self.spec.load()?;
        let mut layers = Layers::builtin()?;
        if let Some(dir) = &self.catalog_dir
            && dir.is_dir()
        {
            layers.add_declaration_dir(dir)?;
        }
        if let Some(dir) = &self.overrides_dir {
            layers.add_overlay_dir(dir)?;
        }
        build_catalog(BuildInput {
            spec: &doc,
            layers: &layers,
        })
        .with_context(|| format!("building the catalog from {}", doc.origin))
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

/// Keeps the watcher alive; dropping it stops watching.
pub struct WatchGuard {
    _debouncer: Box<dyn std::any::Any + Send>,
}

/// Watches the sources and, on a change, rebuilds with `rebuild` and swaps it into `live`.
///
/// `rebuild` runs on the watcher's thread; a failure is logged with its error (file and line)
/// and the previous snapshot keeps serving.
pub fn watch_sources<S, F>(sources: Sources, live: Arc<Live<S>>, rebuild: F) -> Result<WatchGuard>
where
    S: Send + Sync + 'static,
    F: Fn(&Sources) -> Result<S> + Send + 'static,
{
    let targets = sources.watch_targets();
    let filter = sources.clone();
    let mut debouncer = new_debouncer(
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
            let relevant = events
                .iter()
                .filter(|e| !e.kind.is_access())
                .flat_map(|e| e.paths.iter())
                .find(|p| filter.is_source(p))
                .cloned();
            let Some(changed) = relevant else { return };
            let started = Instant::now();
            match rebuild(&filter) {
                Ok(next) => {
                    live.store(next);
                    tracing::info!(
                        changed = %changed.display(),
                        rebuild_ms = started.elapsed().as_millis() as u64,
                        "catalog reloaded"
                    );
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
    for dir in &targets {
        debouncer
            .watch(dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("cannot watch {}", dir.display()))?;
        tracing::debug!(dir = %dir.display(), "watching for catalog changes");
    }
    Ok(WatchGuard {
        _debouncer: Box::new(debouncer),
    })
}
