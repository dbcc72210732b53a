//! The live snapshot: everything a call needs, built in one function so that startup and hot
//! reload share it. `reload::Live<Snapshot>` holds it; a call loads it once and finishes on it.

use std::sync::{Arc, OnceLock};

use anyhow::Result;
use rmcp::model::Tool;

use crate::load::cache::CatalogCache;
use crate::surface::{self, Surface};
use arcane_catalog::SearchIndex;
use arcane_catalog::semantic::EmbeddingCache;
use arcane_catalog::{Action, Catalog};
use arcane_catalog::{Narrowing, Policy};

/// Catalog + search index + tool list + validators + the active policy.
///
/// A caller whose rights are narrower than the server's (an OAuth grant) is served a *view*
/// ([`Snapshot::view`]): the same catalog, search index and validators under the server's
/// policy narrowed for it, with its own tool list; everything shown (tools, search, resources,
/// prompts, next steps) follows the view's policy as it follows the server's.
pub struct Snapshot {
    /// Shared with the thread that builds the search index (see [`Search`]).
    pub catalog: Arc<Catalog>,
    pub search: Search,
    pub policy: Policy,
    pub surface: Surface,
    /// The tool definitions of the active surface (computed once per snapshot).
    pub tools: Vec<Tool>,
    /// Output-schema fitting, when output schemas are declared (individual surface, flag on).
    pub fitter: Option<Arc<arcane_catalog::OutputFitter>>,
    /// The compiled validators of the actions' input schemas (shared with the views).
    pub validators: Arc<arcane_engine::Validators>,
    /// The names of `tools`, for a lookup per call.
    tool_names: std::collections::HashSet<String>,
    /// The views made of this snapshot, by narrowing, most recently used last; a reload makes
    /// a new snapshot, and with it new views.
    views: std::sync::Mutex<Vec<(Narrowing, Arc<Snapshot>)>>,
}

/// How many views a snapshot keeps. Each distinct narrowing (a users-file rule's preset and
/// allow-list, with or without `arcane:write`) is one; past the bound the least recently used is dropped
/// and made again when asked for, so a file of many rules costs time, never unbounded memory.
const VIEWS: usize = 16;

impl Snapshot {
    /// Builds a snapshot of a catalog for a surface and policy.
    pub fn build(catalog: Catalog, surface: Surface, policy: Policy) -> Result<Snapshot> {
        Self::build_cached(catalog, surface, policy, None)
    }

    /// [`Snapshot::build`], its search index built with the embedding vectors `cache` keeps
    /// from earlier starts (and keeping those it computes anew for the next).
    pub fn build_cached(
        catalog: Catalog,
        surface: Surface,
        policy: Policy,
        cache: Option<&CatalogCache>,
    ) -> Result<Snapshot> {
        let policy = policy.resolve_preset(&catalog)?;
        let catalog = Arc::new(catalog);
        let unknown = policy.unknown_exclusions(&catalog);
        if !unknown.is_empty() {
            let each: Vec<String> = unknown
                .iter()
                .map(|e| {
                    format!(
                        "{} (closest: {})",
                        arcane_markdown::quoted_name(e, 100),
                        catalog.closest(e, 3).join(", ")
                    )
                })
                .collect();
            anyhow::bail!(
                "an exclusion names no action, tool or domain of the catalog, so what it was meant \
                 to withdraw would be served: {}. Fix the entry of --exclude-tools \
                 (ARCANE_MCP_EXCLUDE_TOOLS) or the preset: IDs are lower case (container.delete), a \
                 domain is its name (container), a tool name is arcane_container_delete",
                each.join("; ")
            );
        }
        // Only the dynamic surface searches: on the others an index built at every start and
        // reload would cost CPU and memory for nothing (built on first use if ever needed).
        let search = if surface == Surface::Dynamic {
            Search::spawn(&catalog, cache.cloned())
        } else {
            Search::unbuilt(cache.cloned())
        };
        for entry in policy.unknown_entries(&catalog) {
            tracing::warn!(
                entry,
                "an exclusion, allow-list or preset entry names no action, tool or domain of the catalog"
            );
        }
        let tools = surface::tools(surface, &catalog, &policy);
        let tool_names = tools.iter().map(|t| t.name.to_string()).collect();
        let validators = Arc::new(arcane_engine::Validators::for_catalog(&catalog));
        let fitter = (policy.output_schemas && surface == Surface::Individual).then(|| {
            Arc::new(arcane_catalog::OutputFitter::for_profile(
                &catalog,
                policy.profile,
            ))
        });
        Ok(Snapshot {
            fitter,
            catalog,
            search,
            policy,
            surface,
            tools,
            validators,
            tool_names,
            views: Default::default(),
        })
    }

    /// This snapshot as a caller with `narrowing` sees it: itself when nothing is narrowed,
    /// else its view for that narrowing, made once (its tool list is the only part built anew;
    /// the catalog, search index and validators are shared).
    pub fn view(self: &Arc<Self>, narrowing: &Narrowing) -> Arc<Snapshot> {
        if !narrowing.narrows() {
            return self.clone();
        }
        // Found: moved to the end, so that the least recently used view is the one dropped.
        let known = |views: &mut Vec<(Narrowing, Arc<Snapshot>)>| {
            let at = views.iter().position(|(n, _)| n == narrowing)?;
            let found = views.remove(at);
            let view = found.1.clone();
            views.push(found);
            Some(view)
        };
        if let Some(v) = known(&mut self.views.lock().unwrap_or_else(|e| e.into_inner())) {
            return v;
        }
        // Made outside the lock: two first requests may both make it; the first kept wins.
        let policy = self.policy.narrowed(narrowing, &self.catalog);
        let tools = surface::tools(self.surface, &self.catalog, &policy);
        let view = Arc::new(Snapshot {
            catalog: self.catalog.clone(),
            search: self.search.clone(),
            surface: self.surface,
            tool_names: tools.iter().map(|t| t.name.to_string()).collect(),
            tools,
            policy,
            fitter: self.fitter.clone(),
            validators: self.validators.clone(),
            views: Default::default(),
        });
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = known(&mut views) {
            return v;
        }
        if views.len() >= VIEWS {
            views.remove(0);
        }
        views.push((narrowing.clone(), view.clone()));
        view
    }

    /// Whether `name` is a tool of this snapshot's list.
    pub fn serves_tool(&self, name: &str) -> bool {
        self.tool_names.contains(name)
    }

    /// The search index, waiting for its thread without blocking the async runtime.
    pub async fn search_ready(&self) -> Result<&SearchIndex, &str> {
        self.search.ready(&self.catalog).await;
        self.search.get(&self.catalog)
    }

    /// This snapshot as the engine sees it (`arcane_engine::Scope`).
    pub fn scope(&self) -> arcane_engine::Scope<'_> {
        arcane_engine::Scope {
            catalog: &self.catalog,
            policy: &self.policy,
            validators: &self.validators,
            caller: self,
        }
    }
}

/// A snapshot's search index, built on a thread of its own: a server answers `initialize` and
/// `tools/list` without waiting for it (building it is a large part of the startup,
/// docs/measurements.md), and the first search waits for it. A failed build is kept as its
/// error text and answered to each search (the rest of the snapshot serves on).
///
/// The background thread runs at the lowest priority, so on a saturated machine it may not
/// run at all for a long while (the chaos suite saw searches wait over 40 s while reloads came
/// every second or two). A search therefore waits for it at most [`SELF_BUILD_AFTER`], then
/// builds the index itself at its own priority; whichever build ends first is kept. A clone is
/// the same index (a snapshot's views share it).
#[derive(Clone)]
pub struct Search {
    cell: Arc<OnceLock<Result<SearchIndex, String>>>,
    built: Arc<tokio::sync::Notify>,
    /// Where the embedding vectors of earlier starts are kept, if anywhere.
    cache: Option<CatalogCache>,
    /// The catalog's reading ([`SearchIndex::reading_stamp`]), worked out once for the reads,
    /// builds and stores of this index.
    reading: Arc<OnceLock<u64>>,
}

/// The catalog reading ([`SearchIndex::reading_stamp`]) of the process's first index build,
/// and whether a build of another reading has begun since: the ask vectors in memory may then
/// have been read with either catalog's words, and none are stored.
static FIRST_READING: OnceLock<u64> = OnceLock::new();
static MIXED_READINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a search waits for the background build before building the index itself.
const SELF_BUILD_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Search {
    /// Starts building the index of `catalog`; when no thread can be started, the first search
    /// builds it. With a catalog cache, the build first reads the embedding vectors it keeps
    /// (at the thread's first priority: a search that builds the index itself waits for that
    /// read, and must not wait on a thread the scheduler starves), and stores them again when
    /// it had to compute new ones.
    fn spawn(catalog: &Arc<Catalog>, cache: Option<CatalogCache>) -> Search {
        let search = Search::unbuilt(cache);
        let (background, catalog) = (search.clone(), catalog.clone());
        let started = std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || {
                background.load_embeddings(&catalog);
                yield_to_the_protocol();
                if !background.is_ready() {
                    background.build(&catalog);
                }
                drop(catalog);
                return_freed_memory();
            });
        if let Err(e) = started {
            tracing::debug!(error = %e, "the search index is built on first use");
        }
        search
    }

    /// The reading of `catalog` (this index's).
    fn reading(&self, catalog: &Catalog) -> u64 {
        *self
            .reading
            .get_or_init(|| SearchIndex::reading_stamp(catalog))
    }

    /// Reads the vectors the catalog cache keeps for `catalog`'s reading (once per process).
    fn load_embeddings(&self, catalog: &Catalog) {
        if let Some(cache) = &self.cache {
            cache.load_embeddings(self.reading(catalog));
        }
    }

    /// Builds the index (the first build to end is kept) and tells the waiting searches. With a
    /// catalog cache, the vectors of earlier starts are read first (once per process; a second
    /// build waits for that read), and the kept build has its vectors stored on a thread of
    /// their own when vectors were computed since the last store (the searches waiting for
    /// the index do not wait for the file).
    fn build(&self, catalog: &Catalog) {
        self.load_embeddings(catalog);
        let reading = self.reading(catalog);
        // Noted before the build: the asks one build reads, another build running beside it
        // (a reload's) may keep.
        if *FIRST_READING.get_or_init(|| reading) != reading {
            MIXED_READINGS.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let kept = self.cell.set(build_index(catalog)).is_ok();
        self.built.notify_waiters();
        if kept && !MIXED_READINGS.load(std::sync::atomic::Ordering::Relaxed) {
            self.store_embeddings(reading);
        }
    }

    /// Stores the vectors of the kept index, of catalog reading `reading`, for the next start,
    /// when some were computed since the process last stored them. Called only while every
    /// build of the process has been of one reading (its asks read with that catalog's words:
    /// a reload keeps the reading of the asks it already read, so after a build of another
    /// catalog an index is not what a fresh start builds and nothing more is stored; the next
    /// start of that catalog stores its own).
    fn store_embeddings(&self, reading: u64) {
        static STORED_AT: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
        let Some(cache) = &self.cache else { return };
        let Some(Ok(index)) = self.cell.get() else {
            return;
        };
        {
            let mut stored_at = STORED_AT.lock().unwrap_or_else(|e| e.into_inner());
            let computed = EmbeddingCache::global().computed();
            if computed <= *stored_at {
                return;
            }
            *stored_at = computed;
        }
        let (cache, keys) = (cache.clone(), index.embedding_keys().to_vec());
        // Without a thread, nothing is stored: the next start embeds again.
        if let Err(e) = std::thread::Builder::new()
            .name("embeddings-store".into())
            .spawn(move || cache.store_embeddings(reading, &keys))
        {
            tracing::debug!(error = %e, "cannot store the embeddings; the next start embeds again");
        }
    }

    /// A search whose index nobody builds until a search needs it.
    fn unbuilt(cache: Option<CatalogCache>) -> Search {
        Search {
            cell: Arc::new(OnceLock::new()),
            built: Arc::new(tokio::sync::Notify::new()),
            cache,
            reading: Arc::new(OnceLock::new()),
        }
    }

    /// The index, built now from `catalog` (the snapshot's) if no build has ended. Blocking:
    /// async code awaits [`Snapshot::search_ready`]. Two builds may run at once (this one and
    /// the background thread's); the first to end is kept, the other dropped.
    pub fn get(&self, catalog: &Catalog) -> Result<&SearchIndex, &str> {
        if self.cell.get().is_none() {
            self.build(catalog);
        }
        self.cell
            .get()
            .expect("set above")
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether the index is built (successfully or not).
    pub fn is_ready(&self) -> bool {
        self.cell.get().is_some()
    }

    /// Waits for the background build at most [`SELF_BUILD_AFTER`], then builds the index on a
    /// blocking thread of the runtime (at the runtime's priority).
    async fn ready(&self, catalog: &Arc<Catalog>) {
        let built = self.built.notified();
        tokio::pin!(built);
        built.as_mut().enable();
        if self.is_ready() {
            return;
        }
        if tokio::time::timeout(SELF_BUILD_AFTER, built).await.is_ok() && self.is_ready() {
            return;
        }
        let search = self.clone();
        let catalog = catalog.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let _ = search.get(&catalog);
        })
        .await;
    }
}

/// Hands the memory a catalog or index build freed back to the system. A build allocates tens
/// of megabytes on its own thread and frees them; glibc keeps what a thread's arena freed for
/// later use by that arena, so over reloads an idle server's resident memory grew from 80 to
/// 183 MiB in eight reloads, and a busy one's stayed about 90 MiB above its first level
/// (docs/measurements.md, "Reloads cost memory"). `malloc_trim` releases the free pages of
/// every arena; it runs after a reload and after an index build, never on a call's path.
pub(crate) fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only returns free pages of the allocator's own
    // arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lowers the calling thread's scheduling priority (Linux: its nice value), so that building
/// the index in the background never takes a core from answering `initialize` and
/// `tools/list` on a small machine; an idle core still builds it at full speed. The first
/// search waits for it either way.
fn yield_to_the_protocol() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no memory-safety preconditions; a failure only
    // leaves the priority as it was.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

fn build_index(catalog: &Catalog) -> Result<SearchIndex, String> {
    let started = std::time::Instant::now();
    let computed = EmbeddingCache::global().computed();
    let index = SearchIndex::build(catalog).map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "the search index cannot be built");
        format!("The search index could not be built ({e:#}); arcane_find_action is unavailable until the catalog is reloaded. Restart the server if this persists.")
    });
    tracing::debug!(
        ms = started.elapsed().as_secs_f64() * 1e3,
        embedded = EmbeddingCache::global().computed() - computed,
        "search index built"
    );
    index
}

/// The engine names actions as the active surface writes them.
impl arcane_engine::Caller for Snapshot {
    fn action_name(&self, action: &Action) -> String {
        surface::call_name(self.surface, action)
    }

    fn unknown_action_hint(&self) -> Option<&str> {
        (self.surface == Surface::Dynamic).then_some(" Search with arcane_find_action.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        crate::load::sources::Sources::test_catalog()
    }

    /// A narrowed caller's view: made once per narrowing and shared, its domain tools listing
    /// only what it may run; a caller narrowing nothing gets the snapshot itself; the views
    /// kept are bounded.
    #[test]
    fn views_are_made_once_per_narrowing_and_bounded() {
        let snap = Arc::new(Snapshot::build(catalog(), Surface::Meta, Policy::default()).unwrap());
        assert!(Arc::ptr_eq(&snap.view(&Narrowing::default()), &snap));
        let reader = Narrowing {
            read_only: true,
            ..Narrowing::default()
        };
        let view = snap.view(&reader);
        assert!(Arc::ptr_eq(&view, &snap.view(&reader)), "made once");
        assert!(Arc::ptr_eq(&view.catalog, &snap.catalog));
        assert!(Arc::ptr_eq(&view.validators, &snap.validators));
        // The actions a meta tool's description names: "<Title> actions: a, b!, c. …".
        let actions = |s: &Snapshot| -> Vec<String> {
            let tool = s
                .tools
                .iter()
                .find(|t| t.name == "arcane_container")
                .unwrap();
            let desc = tool.description.as_deref().unwrap();
            let list = desc.split_once("actions:").unwrap().1;
            let list = &list[..list.find(". ").unwrap()];
            list.split(',')
                .map(|a| a.trim().trim_end_matches('!').to_string())
                .collect()
        };
        let everything = actions(&snap);
        assert!(everything.iter().any(|a| a == "restart"), "{everything:?}");
        let reads = actions(&view);
        assert!(reads.iter().any(|a| a == "list"), "{reads:?}");
        assert!(!reads.iter().any(|a| a == "restart"), "{reads:?}");
        for name in &reads {
            let a = view.catalog.get(&format!("container.{name}")).unwrap();
            assert!(
                !a.safety.mutating && a.safety.reveals_secret.is_none(),
                "{name}"
            );
        }
        assert!(
            view.tools
                .iter()
                .all(|t| { t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true) })
        );
        // A domain without one action it may run has no tool.
        let minimal = Narrowing {
            preset: Some("minimal".into()),
            ..Narrowing::default()
        };
        let mut names: Vec<String> = snap
            .view(&minimal)
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["arcane_container", "arcane_environment", "arcane_project"]
        );
        // The server's own list is untouched.
        let full = Snapshot::build(catalog(), Surface::Meta, Policy::default()).unwrap();
        assert_eq!(
            serde_json::to_value(&snap.tools).unwrap(),
            serde_json::to_value(&full.tools).unwrap()
        );
        for i in 0..VIEWS + 4 {
            snap.view(&Narrowing {
                tools: vec![format!("container.list"), format!("x{i}")],
                ..Narrowing::default()
            });
        }
        assert_eq!(snap.views.lock().unwrap().len(), VIEWS);
    }

    /// A preset the overlays do not define serves nothing, and says so.
    #[test]
    fn an_unknown_preset_withdraws_everything() {
        let snap =
            Arc::new(Snapshot::build(catalog(), Surface::Individual, Policy::default()).unwrap());
        let view = snap.view(&Narrowing {
            preset: Some("no-such-preset".into()),
            ..Narrowing::default()
        });
        assert!(view.tools.is_empty());
        let list = view.catalog.get("container.list").unwrap();
        let why = view.policy.withdrawn(list).unwrap();
        assert!(
            why.contains("\"no-such-preset\"") && why.contains("minimal"),
            "{why}"
        );
    }

    /// A background build that never ends (a starved thread) does not hold a search: after the
    /// bounded wait the search builds the index itself.
    #[tokio::test]
    async fn a_search_does_not_wait_for_a_starved_background_build() {
        let catalog = Arc::new(catalog());
        let search = Search::unbuilt(None);
        assert!(!search.is_ready());
        tokio::time::timeout(std::time::Duration::from_secs(60), search.ready(&catalog))
            .await
            .expect("the search builds the index itself (hang guard)");
        let index = search.get(&catalog).expect("built");
        assert!(
            !index
                .search(&catalog, "list containers", 3, &|_| true)
                .is_empty()
        );
    }
}
