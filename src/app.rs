//! The wiring every way of running shares: `serve` (MCP on stdio against Arcane), `demo` (the
//! same against the in-process simulator) and the one-shot `call` and `find` commands. One
//! function builds the snapshot and the executor, so a command-line call runs exactly the code
//! an MCP `tools/call` runs ([`ArcaneServer::call`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rmcp::ServiceExt;

use crate::config;
use crate::config::ServeArgs;
use crate::load::cache::{self, CatalogCache, Provenance};
use crate::load::reload::{self, Live, WatchGuard};
use crate::load::snapshot::Snapshot;
use crate::load::sources::Sources;
use crate::mcp::handler::{self, ArcaneServer};
use arcane_catalog::Policy;
use arcane_engine::{Auth, ExecConfig, Executor};

/// A built server: the live snapshot, the executor, and where the catalog came from.
pub struct App {
    pub live: Arc<Live<Snapshot>>,
    pub executor: Arc<Executor>,
    pub sources: Sources,
    /// The Arcane base URL (may carry a password; log it only through `logging::masked_url`).
    base_url: String,
    policy: Policy,
    started: std::time::Instant,
    /// The audit log of mutating calls, when `--audit-log` is set.
    audit: Option<Arc<crate::mcp::audit_log::AuditLog>>,
    /// The history of changes, when `--history` is set.
    history: Option<Arc<crate::mcp::history::History>>,
    /// Built catalogs by the hash of their files (`--catalog-cache-dir`), for startup and
    /// reload; `None` with `--no-catalog-cache`.
    cache: Option<CatalogCache>,
    /// Whether the startup's catalog was read from the cache.
    pub provenance: Provenance,
    /// Each session's limit of calls in flight (`--max-calls-in-flight`).
    max_calls_in_flight: usize,
    /// Whether the MCP Apps view is offered (`--apps`).
    apps: bool,
    /// The MCP tasks of every session (`--max-tasks`, `--max-tasks-total`, `--task-ttl-max`).
    tasks: Arc<crate::mcp::tasks::Tasks>,
    /// Resource subscriptions' poll interval and caps (`--subscription-poll-ms`,
    /// `--max-subscriptions`, `--max-subscriptions-total`).
    subscriptions: crate::resources::live::Settings,
    /// The process's counters (`/metrics`, and the OTLP export when it is on).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The configured credentials, masked by value wherever text leaves the server for as
    /// long as it serves (`arcane_redact::hold_secret`).
    _secrets: Vec<arcane_redact::SecretHold>,
}

impl App {
    /// Builds the catalog, the snapshot and the executor from the settings. Blocking (the spec
    /// may be fetched from Arcane): call it outside the async runtime.
    pub fn build(args: &ServeArgs, sources: Sources, base_url: String, auth: Auth) -> Result<App> {
        let started = std::time::Instant::now();
        let secrets = args
            .secret_values()
            .into_iter()
            .chain([auth.secret().to_string()])
            .map(|v| arcane_redact::hold_secret(&v))
            .collect();
        let policy = policy(args);
        // One TLS configuration for every connection to Arcane: requests, WebSocket sessions
        // and the spec fetch (at startup and on reload). Loading the platform's trust store is
        // a good part of a start from the catalog cache: it runs beside the catalog's loading
        // unless the spec is to be fetched (the fetch needs it).
        let make_tls =
            || arcane_engine::tls_config(args.ca_cert.as_deref(), args.insecure_skip_verify);
        let mut sources = sources;
        let cache = crate::load::cache::CatalogCache::from_args(args);
        let (tls, catalog) = if sources.spec.is_local() {
            std::thread::scope(|s| {
                let tls = std::thread::Builder::new()
                    .name("tls-config".into())
                    .spawn_scoped(s, make_tls);
                let catalog = cache::load_or_build(&sources, cache.as_ref());
                let tls = match tls {
                    Ok(handle) => handle.join().unwrap_or_else(|_| {
                        Err(anyhow::anyhow!(
                            "loading the TLS settings failed unexpectedly"
                        ))
                    }),
                    Err(_) => make_tls(),
                };
                (tls, catalog)
            })
        } else {
            let tls = make_tls()?;
            sources.spec.tls = Some(tls.clone());
            let catalog = cache::load_or_build(&sources, cache.as_ref());
            (Ok(tls), catalog)
        };
        // A TLS settings error first, as when it was loaded before the catalog.
        let tls = tls?;
        sources.spec.tls = Some(tls.clone());
        let (catalog, provenance) = catalog?;
        let audit = args
            .audit_log
            .as_deref()
            .map(|p| {
                crate::mcp::audit_log::AuditLog::open(p, args.audit_log_max_bytes).map(Arc::new)
            })
            .transpose()?;
        let history = args
            .history
            .as_deref()
            .map(|p| crate::mcp::history::History::open(p).map(Arc::new))
            .transpose()?;
        let snapshot =
            Snapshot::build_cached(catalog, args.tool_surface, policy.clone(), cache.as_ref())?;
        if args.insecure_skip_verify {
            tracing::warn!(
                "TLS CERTIFICATE VERIFICATION IS OFF (--insecure-skip-verify / \
                 ARCANE_MCP_INSECURE_SKIP_VERIFY): anyone on the network path to {} can read \
                 and change this server's traffic, including the API key. Use it only for \
                 testing; prefer --ca-cert for a private CA.",
                crate::logging::masked_url(&base_url)
            );
        }
        let executor = Arc::new(Executor::new(
            ExecConfig {
                base_url: base_url.clone(),
                auth,
                environment: args.environment.clone(),
                timeout: Duration::from_secs(args.timeout.max(1)),
                max_response_bytes: args.max_response_bytes,
                max_concurrent_requests: args.max_concurrent_requests,
                show_secrets: args.show_secrets,
            },
            tls,
        )?);
        Ok(App {
            live: Arc::new(Live::new(snapshot)),
            executor,
            sources,
            base_url,
            policy,
            started,
            audit,
            history,
            cache,
            provenance,
            max_calls_in_flight: args.max_calls_in_flight,
            apps: args.apps,
            tasks: Arc::new(crate::mcp::tasks::Tasks::new(
                args.max_tasks,
                args.max_tasks_total,
                Duration::from_secs(args.task_ttl_max),
            )),
            subscriptions: crate::resources::live::Settings {
                poll: Duration::from_millis(args.subscription_poll_ms),
                per_owner: args.max_subscriptions,
                total: args.max_subscriptions_total,
            },
            metrics: {
                let metrics = Arc::new(crate::metrics::Metrics::default());
                crate::telemetry::observe(&metrics);
                metrics
            },
            _secrets: secrets,
        })
    }

    /// The pacing of one new session's calls (`crate::mcp::pacing`): its transport is wrapped in a
    /// [`Paced`](crate::mcp::pacing::Paced) with it.
    fn pacing(&self) -> Arc<crate::mcp::pacing::Pacing> {
        crate::mcp::pacing::Pacing::new(self.max_calls_in_flight)
    }

    /// What a confirmation state sealed under a shared key is bound to beside its call: the
    /// Arcane this server serves and its default environment.
    pub fn deployment(&self) -> String {
        let config = self.executor.config();
        format!("{}\n{}", config.base_url, config.environment)
    }

    /// Each session's limit of calls in flight (`--max-calls-in-flight`).
    pub fn max_calls_in_flight(&self) -> usize {
        self.max_calls_in_flight
    }

    /// The MCP server over this app's snapshot and executor.
    pub fn server(&self) -> ArcaneServer {
        ArcaneServer::new(self.live.clone(), self.executor.clone())
            .with_audit(self.audit.clone())
            .with_history(self.history.clone())
            .with_tasks(self.tasks.clone())
            .with_subscriptions(self.subscriptions)
            .with_apps(self.apps)
            .with_metrics(self.metrics.clone())
    }

    /// The one startup line: version, Arcane version, actions, surface, modes, masked URL; then
    /// a warning per overlay entry that matches nothing.
    pub fn announce(&self) {
        // Before the ready line, so that whoever reads the log up to it has seen this.
        crate::load::sources::announce_catalog_dir(&self.sources);
        let snap = self.live.load();
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            arcane_version = %snap.catalog.arcane_version,
            actions = snap.catalog.actions.len(),
            tools = snap.tools.len(),
            surface = snap.surface.as_str(),
            read_only = self.policy.read_only,
            safe_mode = self.policy.safe_mode,
            output_schemas = self.policy.output_schemas,
            client_profile = self.policy.profile.as_str(),
            url = %crate::logging::masked_url(&self.base_url),
            ms = self.started.elapsed().as_millis() as u64,
            catalog_cached = self.provenance == Provenance::Cache,
            "arcane-mcp ready"
        );
        reload::warn_unmatched(&snap.catalog);
    }

    /// Starts hot reload of the catalog's files; it stops when the guard is dropped. A watcher
    /// that cannot start is logged, and the server serves without reload.
    pub fn watch(&self) -> Option<WatchGuard> {
        let live = self.live.clone();
        let surface = live.load().surface;
        let policy = self.policy.clone();
        let cache = self.cache.clone();
        let metrics = self.metrics.clone();
        // A reload reads the files again: their new hash names another cache entry, so an
        // edit is never answered from the cache, and a broken file still fails the reload.
        reload::watch_sources(self.sources.clone(), live, move |s| {
            let built = cache::load_or_build(s, cache.as_ref()).and_then(|(catalog, _)| {
                Snapshot::build_cached(catalog, surface, policy.clone(), cache.as_ref())
            });
            metrics.record_reload(built.is_ok());
            built
        })
        .map_err(|e| tracing::warn!("hot reload is off: {e:#}"))
        .ok()
    }

    /// Serves one MCP session on `transport` (named `what` in errors) with hot reload until
    /// the client disconnects: what `transport::stdio::serve` does, on any byte stream or rmcp transport.
    /// The integration tests run the server in-process this way, over `tokio::io::duplex`.
    pub async fn serve_on<T, E, A>(self, transport: T, what: &str) -> Result<()>
    where
        T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.announce();
        let _watch = self.watch();
        let server =
            crate::mcp::trace::Traced::new(self.server(), crate::mcp::trace::Transport::Pipe);
        // Every answer's write gives its call's slot back (`crate::mcp::pacing`).
        let transport = crate::mcp::core_tasks::CoreForm::new(crate::mcp::pacing::Paced::new(
            transport.into_transport(),
            self.pacing(),
        ));
        let running = server
            .serve(transport)
            .await
            .with_context(|| format!("starting the MCP session on {what}"))?;
        let notifier = tokio::spawn(handler::notify_legacy_session(
            running.peer().clone(),
            self.live.clone(),
        ));
        let reason = running.waiting().await;
        notifier.abort();
        tracing::info!(?reason, "MCP session ended");
        Ok(())
    }
}

/// The policy of the settings: read-only, safe mode, exclusions, output schemas.
pub fn policy(args: &ServeArgs) -> Policy {
    Policy::new(args.read_only, args.safe_mode, &args.exclude_tools)
        .with_output_schemas(args.output_schemas)
        .with_profile(args.client_profile)
        .with_allow(&args.tools, args.preset.as_deref())
        .with_confirm(match args.confirm_mode {
            crate::config::ConfirmMode::Elicit => arcane_catalog::Confirmation::Ask,
            crate::config::ConfirmMode::ElicitUnlessConfirmed => {
                arcane_catalog::Confirmation::AskUnlessConfirmed
            }
            crate::config::ConfirmMode::Param => arcane_catalog::Confirmation::Param,
            crate::config::ConfirmMode::NeverDestructive => {
                arcane_catalog::Confirmation::NeverDestructive
            }
        })
}

/// The async runtime every command runs in.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The Arcane base URL and credential of the settings; a missing one is a clear startup error.
pub fn connection(args: &config::ServeArgs) -> Result<(String, Auth)> {
    let raw = args
        .arcane_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            anyhow!(
                "no Arcane URL: set ARCANE_URL (or --arcane-url) to your Arcane's base URL, \
                 e.g. https://arcane.example.com"
            )
        })?;
    let base = config::arcane_base_url(raw)?;
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    // A header value cannot hold a line break or a control character: refused here, as a bad
    // setting, rather than failing every call later as if its parameters were wrong.
    for (value, name) in [
        (&args.api_key, "ARCANE_API_KEY (--api-key)"),
        (&args.token, "ARCANE_TOKEN (--token)"),
    ] {
        if value
            .as_deref()
            .map(str::trim)
            .is_some_and(|v| v.chars().any(|c| c.is_control()))
        {
            bail!(
                "{name} holds a line break or another control character, which no HTTP header \
                 can carry: set it again with the key alone (a file read with a trailing newline \
                 inside quotes is the usual cause)"
            );
        }
    }
    let auth = match (nonempty(&args.api_key), nonempty(&args.token)) {
        (Some(k), _) => Auth::ApiKey(k),
        (None, Some(t)) => Auth::Bearer(t),
        (None, None) => match own_key_use(args) {
            // Every caller brings its own key, so no call, read or feed ever sends this empty
            // one; the readiness probe, the spec fetch and the sign-in send none at all.
            None => Auth::ApiKey(String::new()),
            Some(use_) => bail!(
                // Worded so that no `name: value` pair of a secret's name appears: the fatal
                // error is masked on its way out (main.rs), and `credential: set` read as one.
                "no Arcane credential was given. {}Set ARCANE_API_KEY (--api-key; create one in \
                 Arcane under Settings → API Keys) or ARCANE_TOKEN (--token){}",
                use_.why,
                use_.instead
            ),
        },
    };
    Ok((base, auth))
}

/// Who would run with the server's own Arcane key in these settings, and what else to set.
struct OwnKeyUse {
    why: &'static str,
    instead: &'static str,
}

/// Whether some caller's calls would run with the server's own key; `None` when every caller
/// brings one (the server then starts without a key of its own). Over HTTP a caller has its
/// own key when the key source is `client` (the gate refuses a request without one), or when
/// it signed in with `--oauth-issuer self` (its token carries the key it made) or through an
/// outside issuer with `--oauth-users` (each rule names a key); a static bearer token's holder,
/// an unauthenticated loopback caller or an outside issuer's caller without a users file runs
/// with the server's key unless it sends its own.
fn own_key_use(args: &config::ServeArgs) -> Option<OwnKeyUse> {
    let h = &args.http;
    if h.transport == config::Transport::Stdio {
        return Some(OwnKeyUse {
            why: "",
            instead: "",
        });
    }
    if h.arcane_key_source == config::KeySource::Client {
        return None;
    }
    const CLIENT_KEYS: &str = ", or ARCANE_MCP_ARCANE_KEY_SOURCE=client so that each caller \
                               sends its own key in X-Arcane-API-Key";
    let issuer = h
        .oauth_issuer
        .as_deref()
        .map(str::trim)
        .filter(|i| !i.is_empty());
    if !h.auth_tokens.is_empty() || h.auth_token_file.is_some() {
        return Some(OwnKeyUse {
            why: "Callers with a bearer token of ARCANE_MCP_AUTH_TOKEN or \
                  --auth-token-file run with the server's own key (the key source is server \
                  or either). ",
            instead: CLIENT_KEYS,
        });
    }
    match issuer {
        None => Some(OwnKeyUse {
            why: "Callers over HTTP run with the server's own key (the key source is server or \
                  either). ",
            instead: CLIENT_KEYS,
        }),
        Some(i) if !i.eq_ignore_ascii_case("self") && h.oauth_users.is_none() => Some(OwnKeyUse {
            why: "The outside identity provider's callers run with the server's own key \
                      when no users file maps them to keys of their own. ",
            instead: ", or ARCANE_MCP_OAUTH_USERS (--oauth-users) to give each person a \
                          key, or ARCANE_MCP_ARCANE_KEY_SOURCE=client so that each caller sends \
                          its own key in X-Arcane-API-Key",
        }),
        Some(_) => None,
    }
}
