//! The rmcp handler: `ServerHandler` over the live snapshot and the executor — routing each
//! request (a `tools/call` to [`crate::mcp::call`], prompts to [`crate::mcp::prompts`], tasks to
//! [`crate::mcp::tasks`]),
//! progress, the calls' runtime and memory,
//! and list-changed notifications that follow the snapshot's generation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CreateTaskResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::task_manager::TaskContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::load::reload::Live;
use crate::load::snapshot::Snapshot;
use crate::mcp::audit_log::{self, Actor};
use crate::mcp::call::{self, CallEnv};
use crate::mcp::caller::HttpCaller;
use crate::mcp::confirm::{self, Asking};
use crate::metrics::Metrics;
use crate::present::error_result;
use crate::resources::live::{Hub, Mailbox, SubscribeError, Topic};
use crate::surface;
use arcane_engine::{CallContext, Executor};

/// The MCP server: the live snapshot, the executor and the server instructions.
#[derive(Clone)]
pub struct ArcaneServer {
    calls: CallEnv,
    instructions: String,
    in_flight: Arc<InFlight>,
    /// Where calls are counted (`/metrics` and the OTLP export).
    metrics: Option<Arc<Metrics>>,
    /// Served over HTTP: a list-changed notifier per session.
    http: bool,
    /// Resource subscriptions and what feeds them (`crate::resources::live`).
    subscriptions: Hub,
    /// Numbers the `subscriptions/listen` requests: each is an owner of its own.
    listens: Arc<std::sync::atomic::AtomicU64>,
    /// Whether the MCP Apps view is offered to clients that negotiate it (`--apps`).
    apps: bool,
}

/// Calls in flight, and the most at once since the server was last idle.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

/// A burst of at least this many calls at once is followed, once the server is idle again, by
/// handing the freed memory back to the system.
const BURST: usize = 64;

/// Counts one call in flight; when the last call of a burst ends, trims the heap.
struct CallGuard(Arc<InFlight>);

impl CallGuard {
    fn enter(in_flight: &Arc<InFlight>) -> CallGuard {
        let now = in_flight.now.fetch_add(1, Ordering::AcqRel) + 1;
        in_flight.peak.fetch_max(now, Ordering::AcqRel);
        CallGuard(in_flight.clone())
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.0.now.fetch_sub(1, Ordering::AcqRel) == 1
            && self.0.peak.swap(0, Ordering::AcqRel) >= BURST
        {
            release_memory(self.0.clone());
        }
    }
}

/// How long the server must stay idle after a burst before the heap is trimmed: the answers of
/// the burst are still queued for the client when the last call returns.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// glibc keeps the memory of a burst (thousands of answers queued for the client) in its arenas
/// after it is freed, so the process would stay at its peak; `malloc_trim` returns it once the
/// server has been idle for [`SETTLE`]. Other allocators (musl) return memory on their own.
fn release_memory(in_flight: Arc<InFlight>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            tokio::time::sleep(SETTLE).await;
            if in_flight.now.load(Ordering::Acquire) == 0 {
                // SAFETY: malloc_trim only walks glibc's own heap; any padding value is valid.
                let _ = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
            }
        });
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    drop(in_flight);
}

/// The runtime that runs the calls' own work (validation, the request to Arcane, the rendering
/// of the answer), apart from the one that reads requests and writes answers: under a burst of
/// calls, a `ping` or a small request is read and answered without queueing behind the
/// rendering of a thousand answers on the same threads (docs/measurements.md). Built on first
/// use and kept for the life of the process; when it cannot be built, calls run where they
/// arrive.
fn calls_runtime() -> Option<&'static tokio::runtime::Runtime> {
    static CALLS: std::sync::OnceLock<Option<tokio::runtime::Runtime>> = std::sync::OnceLock::new();
    CALLS
        .get_or_init(|| {
            // One core fewer than the machine has: the protocol's threads keep one to read
            // and write on while the calls render.
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get().max(2) - 1);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("arcane-call")
                .enable_all()
                .build()
                .map_err(|e| tracing::warn!(error = %e, "calls run on the protocol's threads"))
                .ok()
        })
        .as_ref()
}

impl ArcaneServer {
    /// A server over a live snapshot.
    pub fn new(live: Arc<Live<Snapshot>>, exec: Arc<Executor>) -> ArcaneServer {
        let snap = live.load();
        let instructions = surface::instructions(
            snap.surface,
            &exec.config().environment,
            snap.policy.safe_mode,
            snap.policy.confirmation,
        );
        let subscriptions = Hub::new(exec.clone(), live.clone(), Default::default());
        ArcaneServer {
            calls: CallEnv {
                live,
                exec,
                audit: None,
                history: None,
                round_trips: Arc::default(),
                tasks: Arc::new(crate::mcp::tasks::Tasks::new(
                    8,
                    64,
                    std::time::Duration::from_secs(3600),
                )),
            },
            instructions,
            in_flight: Arc::default(),
            metrics: None,
            http: false,
            subscriptions,
            listens: Arc::default(),
            apps: true,
        }
    }

    /// The same server with these subscription settings (a new, empty set of subscriptions).
    pub fn with_subscriptions(
        mut self,
        settings: crate::resources::live::Settings,
    ) -> ArcaneServer {
        self.subscriptions = Hub::new(self.calls.exec.clone(), self.calls.live.clone(), settings);
        self
    }

    /// Whose a 2025 session's subscriptions are: over HTTP its session, as the caller the
    /// gate authenticated holds it (another caller naming the same session ID is another
    /// owner); over stdio the one client.
    fn subscriber(&self, context: &RequestContext<RoleServer>) -> Vec<u8> {
        match HttpCaller::of(&context.extensions) {
            Some(c) => confirm::binding([
                b"session".as_slice(),
                c.session.as_deref().unwrap_or_default().as_bytes(),
                c.quota_key.as_deref().unwrap_or_default(),
            ]),
            None => confirm::binding([b"stdio".as_slice()]),
        }
    }

    /// The same server offering the MCP Apps view (docs/apps.md) to clients that negotiate
    /// the extension, or (`false`, `--apps off`) to none.
    pub fn with_apps(mut self, apps: bool) -> ArcaneServer {
        self.apps = apps;
        self
    }

    /// The live snapshot as the caller behind `extensions` sees it
    /// ([`view_of`](crate::mcp::caller::view_of)).
    fn snapshot_for(&self, extensions: &rmcp::model::Extensions) -> Arc<Snapshot> {
        let grant = HttpCaller::of(extensions).and_then(|c| c.grant.as_deref());
        crate::mcp::caller::view_of(self.calls.live.load(), grant)
    }

    /// The snapshot's tools as this request's client lists them: what its caller may run,
    /// linked to the MCP Apps view when it negotiated the extension (every form of
    /// `tools/list` answers from here).
    fn tools_for(&self, context: &RequestContext<RoleServer>) -> Vec<rmcp::model::Tool> {
        let snap = self.snapshot_for(&context.extensions);
        if self.apps_for(context) {
            crate::resources::mcp_apps::with_views(&snap)
        } else {
            snap.tools.clone()
        }
    }

    /// Whether this request's client negotiated the MCP Apps extension (and `--apps` is on).
    fn apps_for(&self, context: &RequestContext<RoleServer>) -> bool {
        self.apps && crate::resources::mcp_apps::negotiated(context.client_capabilities().as_ref())
    }

    /// The same server confirming 2026-07-28 round trips with `trips` (`--state-key-file`'s,
    /// shared with the other replicas, instead of a key of its own).
    pub fn with_round_trips(mut self, trips: Arc<crate::mcp::confirm::RoundTrips>) -> ArcaneServer {
        self.calls.round_trips = trips;
        self
    }

    /// The same server writing mutating calls to an audit log.
    pub fn with_audit(mut self, audit: Option<Arc<audit_log::AuditLog>>) -> ArcaneServer {
        self.calls.audit = audit;
        self
    }

    /// The same server keeping a history of changes in `history` (`--history`).
    pub fn with_history(
        mut self,
        history: Option<Arc<crate::mcp::history::History>>,
    ) -> ArcaneServer {
        self.calls.history = history;
        self
    }

    /// The same server keeping its MCP tasks in `tasks` (shared by every session).
    pub fn with_tasks(mut self, tasks: Arc<crate::mcp::tasks::Tasks>) -> ArcaneServer {
        self.calls.tasks = tasks;
        self
    }

    /// Whose a task is: over HTTP the caller as the gate authenticated it (the token and the
    /// caller's Arcane key, and an OAuth token's grant: `OAuthGrant::which`; without tokens,
    /// the client's address) — the same in every session of that caller —, else the HTTP
    /// session; over stdio the one client of the process.
    fn owner(&self, context: &RequestContext<RoleServer>) -> Vec<u8> {
        match HttpCaller::of(&context.extensions) {
            Some(c) => match &c.quota_key {
                Some(key) => {
                    let grant = c.grant.as_ref().map(|g| g.which()).unwrap_or_default();
                    confirm::binding([b"caller".as_slice(), key, &grant])
                }
                None => confirm::binding([
                    b"session".as_slice(),
                    c.session.as_deref().unwrap_or_default().as_bytes(),
                ]),
            },
            None => confirm::binding([b"stdio".as_slice()]),
        }
    }

    /// Who asks about a task (`tasks/get`, `result`, `list`, `cancel`, `update`): its owner,
    /// and the caller's view of the policy now, which must still serve the task's action.
    fn asker(&self, context: &RequestContext<RoleServer>) -> crate::mcp::tasks::Asker {
        let view = self.snapshot_for(&context.extensions);
        crate::mcp::tasks::Asker {
            owner: self.owner(context),
            serves: Box::new(move |id| view.catalog.get(id).is_some_and(|a| view.policy.serves(a))),
        }
    }

    /// Handles one `tools/call` in the two steps of [`crate::mcp::call`]: prepared and
    /// confirmed, then — as an MCP task when `form` and the action make it one (docs/tasks.md)
    /// — run.
    async fn call_tool_in(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        form: TaskForm,
    ) -> Result<CallToolResponse, McpError> {
        // Counted from here, waiting included: a burst held back by a small
        // `--max-calls-in-flight` is still a burst whose memory goes back once idle.
        let _counted = CallGuard::enter(&self.in_flight);
        let _in_flight = self.metrics.as_ref().map(|m| m.call_started());
        // A call beyond the session's limit waits here, holding only its parsed request: the
        // call's work is a future of some 14 KB, and a thousand of them waiting would weigh as
        // much as their answers (crate::mcp::pacing, docs/measurements.md). A search never waits.
        let ticket = context.extensions.get::<crate::mcp::pacing::Ticket>();
        let slot = match ticket.filter(|_| request.name != surface::FIND_TOOL) {
            Some(ticket) => match ticket.clone().admit(&context.ct).await {
                Some(slot) => Some(slot),
                // Cancelled while waiting: rmcp drops this answer.
                None => return Ok(error_result("the call was cancelled before it ran").into()),
            },
            None => None,
        };
        let started = std::time::Instant::now();
        let http = HttpCaller::of(&context.extensions);
        // Until the call runs as a task, the request's cancellation cancels it.
        let mut ctx = CallContext {
            cancel: context.ct.clone(),
            progress: None,
            credential: self.credential(&context.extensions),
            credential_label: http.and_then(|c| c.credential_label),
            cannot_ask: false,
        };
        let caller = self.caller(&context, &ctx);
        // The caller's own key is masked in everything the call writes or answers, until it
        // ends.
        let held = hold_credential(&ctx);
        // Named in the call's log line by its name and fingerprint, never the token.
        let token = http.and_then(|c| c.token.clone());

        // 1. Prepared and confirmed, on the calls' runtime (it owns what it borrows).
        let asking = self.asking(&context, &request);
        let prepare = {
            let (env, ctx, caller) = (self.calls.clone(), ctx.clone(), caller.clone());
            async move {
                let prepared = call::prepare(
                    &env,
                    &request.name,
                    request.arguments.as_ref(),
                    &ctx,
                    &caller,
                    asking,
                )
                .await;
                (prepared, request, held)
            }
        };
        let (prepared, request, held) = on_calls(prepare).await?;
        let ready = match prepared {
            call::Prepared::Ready(ready) => ready,
            call::Prepared::Answer(answer) => {
                if let Some(slot) = slot {
                    slot.answered();
                }
                return Ok(self.answered(&request.name, answer, started, token));
            }
        };
        if context.ct.is_cancelled() {
            let text = "the call was cancelled before it ran".to_string();
            let result = call::not_run(&self.calls, ready, text, &caller);
            return Ok(self.answered(&request.name, result.into(), started, token));
        }
        // 2. A task, or run as the request's answer. A client that speaks the 2026-07-28
        // extension gets a task for an action that can take minutes; a 2025-11-25 call that
        // asks for one (its `task` field) gets one.
        let ttl_ms = match form {
            TaskForm::Core { ttl_ms } => Some(ttl_ms),
            TaskForm::Extension => (context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks())
                && ready.long_running())
            .then_some(None),
        };
        // Progress of long calls goes to the client when it sent a progress token, and to the
        // task's status message; each notification names the task once there is one.
        let (task_tx, task_rx) = tokio::sync::watch::channel::<Option<TaskContext>>(None);
        let progress_token = context.meta.get_progress_token();
        let forwarder = (progress_token.is_some() || ttl_ms.is_some()).then(|| {
            let (tx, rx) = tokio::sync::mpsc::channel::<arcane_engine::Progress>(
                arcane_engine::PROGRESS_QUEUE,
            );
            ctx.progress = Some(tx);
            tokio::spawn(forward_progress(
                rx,
                context.peer.clone(),
                progress_token,
                task_rx,
            ))
        });
        let Some(ttl_ms) = ttl_ms else {
            let env = self.calls.clone();
            let run = async move {
                let _held = held;
                let result = call::run(&env, ready, &ctx, &caller).await;
                if let Some(slot) = slot {
                    // From now on the answer's write gives the slot back.
                    slot.answered();
                }
                result
            };
            let result = on_calls(run).await?;
            if let Some(f) = forwarder {
                // Every progress notification is sent before the result.
                let _ = f.await;
            }
            return Ok(self.answered(&request.name, result.into(), started, token));
        };
        // A task's work is cancelled by `tasks/cancel` (and its TTL) instead, and outlives the
        // request (and its session).
        let cancel = CancellationToken::new();
        ctx.cancel = cancel.clone();
        let action = ready.action().to_string();
        // Taken by the task's work when the task is made; still here when a limit refused it.
        let parked = Arc::new(std::sync::Mutex::new(Some(ready)));
        let work = {
            let (env, parked, caller) = (self.calls.clone(), parked.clone(), caller.clone());
            move |tctx: TaskContext| -> crate::mcp::tasks::Work {
                let caller = Actor {
                    task: Some(tctx.task_id().to_string()),
                    ..caller
                };
                let _ = task_tx.send(Some(tctx));
                let ready = parked.lock().unwrap_or_else(|e| e.into_inner()).take();
                Box::pin(async move {
                    let Some(ready) = ready else {
                        return Err(McpError::internal_error("the task's call was lost", None));
                    };
                    call::task_started(&env, &ready, &caller);
                    let result = on_calls(async move {
                        let _held = held;
                        call::run(&env, ready, &ctx, &caller).await
                    })
                    .await;
                    // The last progress line is the status message before the task ends.
                    if let Some(f) = forwarder {
                        let _ = f.await;
                    }
                    result
                })
            }
        };
        let owner = self.owner(&context);
        match self.calls.tasks.start(owner, action, ttl_ms, cancel, work) {
            Ok(task) => {
                if let Some(slot) = slot {
                    slot.answered();
                }
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            Err(refused) => {
                let ready = parked.lock().unwrap_or_else(|e| e.into_inner()).take();
                let result = match ready {
                    Some(ready) => call::not_run(&self.calls, ready, refused.0, &caller),
                    None => error_result(refused.0),
                };
                Ok(self.answered(&request.name, result.into(), started, token))
            }
        }
    }

    /// How a call asks the person, from what the request says of its client (read here,
    /// where the request's HTTP parts are). Whose quota of open questions it counts against,
    /// either way of asking: the caller as the HTTP gate authenticated it, never the header's
    /// bytes, else the HTTP session, else (stdio) the one session.
    fn asking(
        &self,
        context: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
    ) -> Asking {
        let http = HttpCaller::of(&context.extensions);
        let who = caller_of(http);
        let round_trip = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        if round_trip {
            Asking::RoundTrip {
                declared: confirm::declares_forms(context.client_capabilities().as_ref()),
                caller: match http {
                    Some(c) => c.binding.clone(),
                    None => confirm::binding([&b""[..], b"", b""]),
                },
                who,
                state: request.request_state.clone(),
                responses: request.input_responses.clone(),
            }
        } else {
            Asking::Session {
                peer: context.peer.clone(),
                origin: context.id.clone(),
                who,
            }
        }
    }

    /// A call's answer on its way out: its log line and its count.
    fn answered(
        &self,
        tool: &str,
        response: CallToolResponse,
        started: std::time::Instant,
        token: Option<impl std::fmt::Display>,
    ) -> CallToolResponse {
        let CallToolResponse::Complete(result) = &response else {
            tracing::debug!(tool = %tool, "tools/call waits for the user's answer");
            return response;
        };
        tracing::debug!(
            tool = %tool,
            is_error = result.is_error.unwrap_or(false),
            ms = started.elapsed().as_millis() as u64,
            token = token.as_ref().map(|t| t.to_string()),
            "tools/call"
        );
        if let Some(metrics) = &self.metrics {
            // Only served tool names become labels, so a client cannot grow the table.
            let known = self.calls.live.load().serves_tool(tool);
            metrics.record_call(
                if known { tool } else { "unknown" },
                !result.is_error.unwrap_or(false),
                started.elapsed(),
            );
        }
        response
    }

    /// The same server for the HTTP transport (docs/security.md): its calls counted in
    /// `metrics`, each session notified of list changes on its own. Who calls comes with each
    /// request ([`HttpCaller`]).
    pub fn with_http(mut self, metrics: Arc<Metrics>) -> ArcaneServer {
        self.http = true;
        self.with_metrics(metrics)
    }

    /// The same server counting its calls in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> ArcaneServer {
        self.metrics = Some(metrics);
        self
    }

    /// The live snapshot the server answers from.
    pub(crate) fn live(&self) -> &Arc<Live<Snapshot>> {
        &self.calls.live
    }

    /// The context of the reads behind a resource or completion: the client's cancellation
    /// and, over HTTP, the caller's own key.
    fn read_context(&self, context: &RequestContext<RoleServer>) -> CallContext {
        CallContext {
            cancel: context.ct.clone(),
            progress: None,
            credential: self.credential(&context.extensions),
            credential_label: HttpCaller::of(&context.extensions).and_then(|c| c.credential_label),
            cannot_ask: false,
        }
    }

    /// Who is calling, for the audit log (only worked out when there is one).
    fn caller(&self, context: &RequestContext<RoleServer>, ctx: &CallContext) -> Actor {
        let http = HttpCaller::of(&context.extensions);
        // What an OAuth caller may do is checked for every call, audit log or not.
        let grant = http.and_then(|c| c.grant.clone());
        if self.calls.audit.is_none() {
            return Actor {
                grant,
                ..Actor::default()
            };
        }
        let session = http
            .and_then(|c| c.session.as_deref())
            .map(|s| audit_log::plain(s, 64));
        let protocol = context.protocol_version();
        // A 2026-07-28 request has no session: it names its client in its own `_meta`. The
        // peer of such a request is made up per request, and its "client info" is rmcp's
        // placeholder, never the caller's.
        let stateless = protocol
            .as_ref()
            .is_some_and(|v| *v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let client = if stateless {
            context.meta.client_info()
        } else {
            context.client_info()
        };
        let token = http.and_then(|c| c.token.clone());
        Actor {
            session,
            client: client.map(|i| audit_log::plain(&i.name, 64)),
            token: token.as_ref().and_then(|t| t.name.clone()),
            token_fingerprint: token.map(|t| t.fingerprint.clone()),
            protocol: protocol.map(|v| v.to_string()),
            task: None,
            grant,
            user: ctx
                .credential
                .as_ref()
                .map(|c| arcane_redact::fingerprint(&c.header().1)),
        }
    }

    /// The caller's own Arcane credential of a request over HTTP, when allowed.
    fn credential(&self, extensions: &rmcp::model::Extensions) -> Option<arcane_engine::Auth> {
        HttpCaller::of(extensions)?.credential.clone()
    }

    /// Handles one `tools/call` on the current snapshot (loaded once for the whole call), with
    /// nobody to ask: the one-shot command's.
    pub async fn call(
        &self,
        tool: &str,
        args: Option<&serde_json::Map<String, serde_json::Value>>,
        ctx: &CallContext,
    ) -> rmcp::model::CallToolResult {
        let caller = Actor::default();
        match call::prepare(&self.calls, tool, args, ctx, &caller, confirm::Asking::No).await {
            call::Prepared::Ready(ready) => call::run(&self.calls, ready, ctx, &caller).await,
            call::Prepared::Answer(CallToolResponse::Complete(result)) => result,
            // Not asked without a client to ask; kept total all the same.
            call::Prepared::Answer(_) => error_result(format!(
                "{tool} needs the user's confirmation: pass \"confirm\": true"
            )),
        }
    }
}

impl ArcaneServer {
    /// The server's information as a client with `caps` is told it: the MCP Apps extension
    /// only to one that declared it (docs/apps.md), as with its resource and `_meta`.
    fn info_for(&self, caps: Option<&rmcp::model::ClientCapabilities>) -> ServerConfig {
        let mut info = self.get_info();
        if self.apps && crate::resources::mcp_apps::negotiated(caps) {
            info.capabilities.extensions.get_or_insert_default().insert(
                crate::resources::mcp_apps::EXTENSION.into(),
                crate::resources::mcp_apps::server_settings(),
            );
        }
        info
    }
}

impl ServerHandler for ArcaneServer {
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, McpError> {
        // rmcp's own initialize, with the client's capabilities deciding the extension.
        context.peer.set_peer_info(request.clone());
        let mut info = self.negotiate_initialize(&request)?;
        info.capabilities = self.info_for(Some(&request.capabilities)).capabilities;
        Ok(info)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, McpError> {
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.info_for(context.client_capabilities().as_ref()),
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tasks()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("arcane-mcp", env!("CARGO_PKG_VERSION")).with_title("Arcane"),
            )
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools_for(&context)))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        // The 2025-11-25 form of tasks, handed over as custom requests by every session's
        // transport (`crate::mcp::core_tasks::CoreForm`).
        crate::mcp::core_tasks::handle(self, request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let snap = self.snapshot_for(&context.extensions);
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let (items, next) = crate::resources::page(&snap, cursor, self.apps_for(&context))
            .map_err(|e| McpError::invalid_params(e, None))?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            crate::resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        // The view is the same for everyone and holds no Arcane value: read whenever offered
        // (a host may prefetch it before it lists anything).
        if self.apps && request.uri == crate::resources::mcp_apps::URI {
            return Ok(
                ReadResourceResult::new(vec![crate::resources::mcp_apps::contents()]).into(),
            );
        }
        let snap = self.snapshot_for(&context.extensions);
        let ctx = self.read_context(&context);
        let _held = hold_credential(&ctx);
        // Boxed, as every read's work: rmcp's task for each request is as large as the largest
        // handler's future, and a burst of waiting calls would each carry this one's size.
        match Box::pin(crate::resources::read(
            &snap,
            &self.calls.exec,
            &ctx,
            &request.uri,
        ))
        .await
        {
            Ok(contents) => Ok(
                ReadResourceResult::new(vec![crate::present::mask_known_message(contents)]).into(),
            ),
            // Invalid params in every protocol, as SEP-2164 settled it (2026-07-28; the
            // 2025 texts' -32002 lies in the range JSON-RPC leaves to implementations).
            Err(crate::resources::ReadError::NotFound(msg)) => Err(McpError::invalid_params(
                arcane_redact::mask_known(&msg).into_owned(),
                Some(serde_json::json!({"uri": arcane_markdown::clip(&request.uri, 200)})),
            )),
            Err(crate::resources::ReadError::Upstream(msg)) => Err(McpError::internal_error(
                arcane_redact::mask_known(&msg).into_owned(),
                Some(serde_json::json!({"uri": arcane_markdown::clip(&request.uri, 200)})),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = self.subscriber(&context);
        let mailbox = self.subscriptions.session_mailbox(&owner, &context.peer);
        self.subscriptions
            .subscribe(
                &owner,
                &caller_of(HttpCaller::of(&context.extensions)),
                &mailbox,
                &request.uri,
                self.credential(&context.extensions),
                &self.snapshot_for(&context.extensions),
            )
            .map_err(|e| subscribe_error(e, &request.uri))?;
        // Answered once the state a change is measured against is known (bounded), so a
        // change made after the answer is heard.
        self.subscriptions
            .settle(&owner, &request.uri, SETTLE_SUBSCRIPTION)
            .await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Ending a subscription that is not there is no error: the client wants none.
        self.subscriptions
            .unsubscribe(&self.subscriber(&context), &request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let snap = self.snapshot_for(&context.extensions);
        let ctx = self.read_context(&context);
        let _held = hold_credential(&ctx);
        // Boxed: see `read_resource`.
        let result = match &request.r#ref {
            rmcp::model::Reference::Prompt(r) => {
                Box::pin(crate::mcp::prompts::complete(
                    &snap,
                    &self.calls.exec,
                    &ctx,
                    r,
                    &request,
                ))
                .await
            }
            rmcp::model::Reference::Resource(r) => {
                Box::pin(crate::resources::complete(
                    &snap,
                    &self.calls.exec,
                    &ctx,
                    r,
                    &request,
                ))
                .await
            }
            // A kind of reference a later protocol adds: nothing to complete.
            _ => CompleteResult::new(rmcp::model::CompletionInfo::default()),
        };
        Ok(crate::present::mask_known_message(result))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(
            crate::mcp::prompts::list(&self.snapshot_for(&context.extensions)),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        crate::mcp::prompts::get(
            &self.snapshot_for(&context.extensions),
            &request.name,
            request.arguments.as_ref(),
        )
        .map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call_tool_in(request, context, TaskForm::Extension)
            .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self
            .calls
            .tasks
            .get(&self.asker(&context), &request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.calls
            .tasks
            .cancel(&self.asker(&context), &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.calls.tasks.update(
            &self.asker(&context),
            &request.task_id,
            request.input_responses,
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Sessions of the 2026-07-28 protocol get list changes through subscriptions/listen,
        // and the updates of the live resources they name; another URI is left out of the
        // acknowledgment, which tells the client so.
        let env = &self.calls.exec.config().environment;
        let live: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| Topic::of(uri, env).is_some())
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .resources_list_changed()
            .prompts_list_changed();
        if !live.is_empty() {
            accepted = accepted.resource_subscriptions(live);
        }
        Some(accepted.build())
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Over HTTP every session is its own peer; stdio starts its one notifier itself.
        if self.http {
            tokio::spawn(notify_legacy_session(context.peer, self.calls.live.clone()));
        }
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut generation = self.calls.live.subscribe();
        // This request owns its subscriptions: they end with it.
        let n = self
            .listens
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let owner = confirm::binding([b"listen".as_slice(), &n.to_le_bytes()]);
        let _end = EndSubscriptions(self.subscriptions.clone(), owner.clone());
        let mailbox = Arc::new(Mailbox::default());
        let credential = self.credential(&context.request_context().extensions);
        let caller = caller_of(HttpCaller::of(&context.request_context().extensions));
        {
            // Dropped before the wait: a long listen must not keep its snapshot's catalog alive
            // through later reloads.
            let view = self.snapshot_for(&context.request_context().extensions);
            for uri in context.accepted().resource_subscriptions.iter().flatten() {
                self.subscriptions
                    .subscribe(&owner, &caller, &mailbox, uri, credential.clone(), &view)
                    .map_err(|e| subscribe_error(e, uri))?;
            }
        }
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                uris = mailbox.next() => {
                    for uri in uris {
                        let _ = context.sink().notify_resource_updated(uri).await;
                    }
                }
                changed = generation.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let sink = context.sink();
                    if context.accepted().tools_list_changed == Some(true) {
                        let _ = sink.notify_tool_list_changed().await;
                    }
                    if context.accepted().resources_list_changed == Some(true) {
                        let _ = sink.notify_resource_list_changed().await;
                    }
                    if context.accepted().prompts_list_changed == Some(true) {
                        let _ = sink.notify_prompt_list_changed().await;
                    }
                }
            }
        }
    }
}

/// Whose quota or share a request counts against (open confirmations, subscriptions): the
/// caller as the HTTP gate authenticated it, never the header's bytes (`bearer`, `BEARER` or
/// extra blanks are the same token), else the HTTP session, else (stdio) the one session.
fn caller_of(http: Option<&HttpCaller>) -> Vec<u8> {
    match http.and_then(|c| c.quota_key.as_deref()) {
        Some(key) => confirm::binding([b"caller".as_slice(), key]),
        None => {
            let session = http.and_then(|c| c.session.as_deref()).unwrap_or_default();
            confirm::binding([b"session".as_slice(), session.as_bytes()])
        }
    }
}

/// Longest wait of `resources/subscribe` for the first state of what it follows.
const SETTLE_SUBSCRIPTION: std::time::Duration = std::time::Duration::from_secs(5);

/// Ends an owner's subscriptions when dropped: a listen request that ended, however.
struct EndSubscriptions(Hub, Vec<u8>);

impl Drop for EndSubscriptions {
    fn drop(&mut self) {
        self.0.end(&self.1);
    }
}

/// A refused subscription as the client's error: what to subscribe to instead, or which
/// limit was reached.
fn subscribe_error(e: SubscribeError, uri: &str) -> McpError {
    let data = Some(serde_json::json!({"uri": arcane_markdown::clip(uri, 200)}));
    let text = arcane_redact::mask_known(&e.to_string()).into_owned();
    match e {
        SubscribeError::Full(_) => McpError::invalid_request(text, data),
        _ => McpError::invalid_params(text, data),
    }
}

impl crate::mcp::core_tasks::Server for ArcaneServer {
    fn snapshot(&self) -> Arc<Snapshot> {
        self.calls.live.load()
    }

    fn tasks(&self) -> &crate::mcp::tasks::Tasks {
        &self.calls.tasks
    }

    fn asker(&self, context: &RequestContext<RoleServer>) -> crate::mcp::tasks::Asker {
        ArcaneServer::asker(self, context)
    }

    fn tools_listed(&self, context: &RequestContext<RoleServer>) -> ListToolsResult {
        ListToolsResult::with_all_items(self.tools_for(context))
    }

    async fn call_as_task(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        ttl_ms: Option<u64>,
    ) -> Result<CallToolResponse, McpError> {
        self.call_tool_in(params, context, TaskForm::Core { ttl_ms })
            .await
    }
}

/// Runs a call's step on the calls' runtime ([`calls_runtime`]) and waits for it, or runs it
/// here when there is none; a panic of the step is the caller's.
async fn on_calls<F>(work: F) -> Result<F::Output, McpError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // The call's spans (the engine's requests, the rendering) are children of the request's,
    // wherever the work runs.
    let work = tracing::Instrument::in_current_span(work);
    match calls_runtime() {
        Some(calls) => match calls.spawn(work).await {
            Ok(done) => Ok(done),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(McpError::internal_error(
                "the server is shutting down",
                None,
            )),
        },
        // Boxed: see `read_resource`.
        None => Ok(Box::pin(work).await),
    }
}

/// How a `tools/call` may become an MCP task (docs/tasks.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskForm {
    /// The 2026-07-28 extension's: when the client declared it and the action can run long
    /// (the server's choice).
    Extension,
    /// A 2025-11-25 task-augmented call (its `task` field): always, with the TTL it asks for.
    Core { ttl_ms: Option<u64> },
}

pub use crate::mcp::tasks::RELATED_TASK;

/// Forwards a call's progress: to the client as `notifications/progress` when it sent a
/// progress token (naming the task, when the call runs in one), and as the task's status
/// message. Progress quotes Arcane's lines: masked as all stream text. A task keeps its status
/// message current after the client stopped listening (its session closed).
async fn forward_progress(
    mut rx: tokio::sync::mpsc::Receiver<arcane_engine::Progress>,
    peer: rmcp::Peer<RoleServer>,
    token: Option<ProgressToken>,
    task: tokio::sync::watch::Receiver<Option<TaskContext>>,
) {
    let mut listening = token.is_some();
    while let Some(p) = rx.recv().await {
        let message = p
            .message
            .map(|m| arcane_redact::mask_known(&m).into_owned());
        let current = task.borrow().clone();
        if let (Some(t), Some(m)) = (&current, &message) {
            t.set_status_message(m.clone());
        }
        let Some(token) = token.as_ref().filter(|_| listening) else {
            if current.is_some() {
                continue;
            }
            break;
        };
        let mut param = ProgressNotificationParam::new(token.clone(), p.progress as f64);
        param.total = p.total.map(|t| t as f64);
        param.message = message;
        let mut note = rmcp::model::ProgressNotification::new(param);
        if let Some(t) = &current {
            // rmcp writes a notification's `_meta` from its extensions.
            let mut meta = serde_json::Map::new();
            meta.insert(
                RELATED_TASK.into(),
                serde_json::json!({"taskId": t.task_id()}),
            );
            note.extensions
                .insert(rmcp::model::NotificationMetaObject::from(meta));
        }
        let sent = peer
            .send_notification(rmcp::model::ServerNotification::ProgressNotification(note))
            .await;
        if sent.is_err() {
            listening = false;
            if current.is_none() && task.borrow().is_none() {
                break;
            }
        }
    }
}

/// Holds the caller's own Arcane key (HTTP `X-Arcane-API-Key`) for masking by value while
/// its request is served.
fn hold_credential(ctx: &CallContext) -> Option<arcane_redact::SecretHold> {
    ctx.credential
        .as_ref()
        .map(|c| arcane_redact::hold_secret(c.secret()))
}

/// How often a list-changed notifier checks that its session is still open.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends `notifications/tools/list_changed`, `notifications/resources/list_changed` and
/// `notifications/prompts/list_changed` to a legacy (initialize-handshake) session on every
/// snapshot swap, until the session ends: prompts come from the overlays, and which are served
/// follows the catalog's actions.
pub async fn notify_legacy_session(peer: rmcp::Peer<RoleServer>, live: Arc<Live<Snapshot>>) {
    let mut generation = live.subscribe();
    loop {
        // An HTTP session may end (idle expiry) long before the next reload: look now and then.
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(SESSION_CHECK) => {
                if peer.is_transport_closed() {
                    return;
                }
                continue;
            }
        }
        let legacy = peer
            .peer_info()
            .is_some_and(|info| info.protocol_version.has_initialize());
        if !legacy {
            continue;
        }
        if peer.notify_tool_list_changed().await.is_err()
            || peer.notify_resource_list_changed().await.is_err()
            || peer.notify_prompt_list_changed().await.is_err()
        {
            return;
        }
        tracing::debug!("sent tools, resources and prompts list_changed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_counted_and_forgotten_when_idle() {
        let in_flight = Arc::new(InFlight::default());
        let guards: Vec<CallGuard> = (0..BURST).map(|_| CallGuard::enter(&in_flight)).collect();
        assert_eq!(in_flight.now.load(Ordering::Acquire), BURST);
        assert_eq!(in_flight.peak.load(Ordering::Acquire), BURST);
        drop(guards);
        assert_eq!(in_flight.now.load(Ordering::Acquire), 0);
        assert_eq!(in_flight.peak.load(Ordering::Acquire), 0, "reset once idle");

        let one = CallGuard::enter(&in_flight);
        assert_eq!(in_flight.peak.load(Ordering::Acquire), 1);
        drop(one);
        assert_eq!(in_flight.peak.load(Ordering::Acquire), 0);
    }
}
