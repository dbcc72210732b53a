//! The live snapshot: everything a call needs, built in one function so that startup and hot
//! reload share it. `reload::Live<Snapshot>` holds it; a call loads it once and finishes on it.

use std::sync::{Arc, OnceLock};

use anyhow::Result;
use rmcp::model::Tool;

use crate::surface::{self, Surface};
use arcane_catalog::Policy;
use arcane_catalog::SearchIndex;
use arcane_catalog::{Action, Catalog};

/// Catalog + search index + tool list + validators + the active policy.
pub struct Snapshot {
    /// Shared with the thread that builds the search index (see [`Search`]).
    pub catalog: Arc<Catalog>,
    pub search: Search,
    pub policy: Policy,
    pub surface: Surface,
    /// The tool definitions of the active surface (computed once per snapshot).
    pub tools: Vec<Tool>,
    /// Output-schema fitting, when output schemas are declared (individual surface, flag on).
    pub fitter: Option<crate::present::output_schema::OutputFitter>,
    /// The compiled validators of the actions' input schemas.
    pub validators: arcane_engine::Validators,
    /// The names of `tools`, for a lookup per call.
    tool_names: std::collections::HashSet<String>,
}

impl Snapshot {
    /// Builds a snapshot of a catalog for a surface and policy.
    pub fn build(catalog: Catalog, surface: Surface, policy: Policy) -> Result<Snapshot> {
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
        let search = Search::spawn(&catalog);
        for entry in policy.unknown_entries(&catalog) {
            tracing::warn!(
                entry,
                "an exclusion, allow-list or preset entry names no action, tool or domain of the catalog"
            );
        }
        let tools = surface::tools(surface, &catalog, &policy);
        let tool_names = tools.iter().map(|t| t.name.to_string()).collect();
        let validators = arcane_engine::Validators::for_catalog(&catalog);
        let fitter = (policy.output_schemas && surface == Surface::Individual).then(|| {
            crate::present::output_schema::OutputFitter::for_profile(&catalog, policy.profile)
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
        })
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
/// builds the index itself at its own priority; whichever build ends first is kept.
pub struct Search {
    cell: Arc<OnceLock<Result<SearchIndex, String>>>,
    built: Arc<tokio::sync::Notify>,
}

/// How long a search waits for the background build before building the index itself.
const SELF_BUILD_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Search {
    /// Starts building the index of `catalog`; when no thread can be started, the first search
    /// builds it.
    fn spawn(catalog: &Arc<Catalog>) -> Search {
        let search = Search::unbuilt();
        let (target, built, catalog) = (search.cell.clone(), search.built.clone(), catalog.clone());
        let started = std::thread::Builder::new()
            .name("search-index".into())
            .spawn(move || {
                yield_to_the_protocol();
                if target.get().is_none() {
                    let _ = target.set(build_index(&catalog));
                }
                built.notify_waiters();
                drop(catalog);
                return_freed_memory();
            });
        if let Err(e) = started {
            tracing::debug!(error = %e, "the search index is built on first use");
        }
        search
    }

    /// A search whose index nobody builds until a search needs it.
    fn unbuilt() -> Search {
        Search {
            cell: Arc::new(OnceLock::new()),
            built: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// The index, built now from `catalog` (the snapshot's) if no build has ended. Blocking:
    /// async code awaits [`Snapshot::search_ready`]. Two builds may run at once (this one and
    /// the background thread's); the first to end is kept, the other dropped.
    pub fn get(&self, catalog: &Catalog) -> Result<&SearchIndex, &str> {
        if self.cell.get().is_none() {
            let _ = self.cell.set(build_index(catalog));
            self.built.notify_waiters();
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
        let search = Search {
            cell: self.cell.clone(),
            built: self.built.clone(),
        };
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
    let index = SearchIndex::build(catalog).map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "the search index cannot be built");
        format!("The search index could not be built ({e:#}); arcane_find_action is unavailable until the catalog is reloaded. Restart the server if this persists.")
    });
    tracing::debug!(
        ms = started.elapsed().as_secs_f64() * 1e3,
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

    /// A background build that never ends (a starved thread) does not hold a search: after the
    /// bounded wait the search builds the index itself.
    #[tokio::test]
    async fn a_search_does_not_wait_for_a_starved_background_build() {
        let catalog = Arc::new(
            crate::load::sources::Sources::of_spec(arcane_test_support::spec_v2())
                .build()
                .expect("the 2.8.0 catalog"),
        );
        let search = Search::unbuilt();
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
