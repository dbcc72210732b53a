//! arcane-mcp: an MCP server for Arcane, built as a data-driven interpreter.
//!
//! The data's path through the crate, one module per stage (see ARCHITECTURE.md):
//! [`spec`] → [`catalog`] → [`search`] → [`surface`] → [`exec`] → [`render`] →
//! [`output_schema`] → [`resources`] → [`server`] (the MCP glue) → [`reload`].

pub mod audit;
pub mod catalog;
pub mod config;
pub mod exec;
pub mod find;
pub mod http;
pub mod inspect;
pub mod output_schema;
pub mod policy;
pub mod redact;
pub mod reload;
pub mod render;
pub mod resources;
pub mod search;
pub mod server;
pub mod snapshot;
pub mod spec;
pub mod surface;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rmcp::ServiceExt;

use crate::exec::{Auth, ExecConfig, Executor};
use crate::policy::Policy;
use crate::reload::Live;
use crate::snapshot::Snapshot;

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
    let parsed =
        url::Url::parse(raw).map_err(|e| anyhow!("ARCANE_URL {raw:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("ARCANE_URL {raw:?} must start with http:// or https://");
    }
    // Accept a URL given with /api: every path the server builds starts with /api.
    let base = raw.trim_end_matches('/');
    let base = base.strip_suffix("/api").unwrap_or(base).to_string();
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let auth = match (nonempty(&args.api_key), nonempty(&args.token)) {
        (Some(k), _) => Auth::ApiKey(k),
        (None, Some(t)) => Auth::Bearer(t),
        (None, None) => bail!(
            "no Arcane credential: set ARCANE_API_KEY (--api-key; create one in Arcane under \
             Settings → API Keys) or ARCANE_TOKEN (--token)"
        ),
    };
    Ok((base, auth))
}

/// Runs the MCP server over stdio until the client disconnects.
pub fn serve(args: config::ServeArgs) -> Result<()> {
    let (base_url, auth) = connection(&args)?;
    let sources = args.source.sources(Some(&base_url));
    let surface = args.tool_surface;
    let policy = Policy::new(args.read_only, args.safe_mode, &args.exclude_tools)
        .with_output_schemas(args.output_schemas);
    let started = std::time::Instant::now();
    // Built before the runtime starts: fetching the spec from Arcane blocks.
    let catalog = sources.build()?;
    let snapshot = Snapshot::build(catalog, surface, policy.clone())?;
    tracing::info!(
        actions = snapshot.catalog.actions.len(),
        tools = snapshot.tools.len(),
        surface = surface.as_str(),
        read_only = policy.read_only,
        safe_mode = policy.safe_mode,
        ms = started.elapsed().as_millis() as u64,
        "catalog loaded"
    );
    let live = Arc::new(Live::new(snapshot));
    let rebuild_policy = policy.clone();
    let _watch = reload::watch_sources(sources, live.clone(), move |s| {
        Snapshot::build(s.build()?, surface, rebuild_policy.clone())
    })
    .map_err(|e| tracing::warn!("hot reload is off: {e:#}"))
    .ok();
    if args.insecure_skip_verify {
        tracing::warn!(
            "TLS CERTIFICATE VERIFICATION IS OFF (--insecure-skip-verify / \
             ARCANE_MCP_INSECURE_SKIP_VERIFY): anyone on the network path to {base_url} can read \
             and change this server's traffic, including the API key. Use it only for testing; \
             prefer --ca-cert for a private CA."
        );
    }
    let executor = Arc::new(Executor::new(
        ExecConfig {
            base_url,
            auth,
            environment: args.environment.clone(),
            timeout: Duration::from_secs(args.timeout.max(1)),
            show_secrets: args.show_secrets,
        },
        args.ca_cert.as_deref(),
        args.insecure_skip_verify,
    )?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let server = server::ArcaneServer::new(live.clone(), executor);
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .context("starting the MCP session on stdio")?;
        let notifier = tokio::spawn(server::notify_legacy_session(running.peer().clone(), live));
        let reason = running.waiting().await;
        notifier.abort();
        tracing::info!(?reason, "MCP session ended");
        Ok(())
    })
}
