//! # arcane-sim
//!
//! An in-process (or standalone) simulator of [Arcane](https://github.com/getarcaneapp/arcane)'s
//! REST API, driven by an Arcane OpenAPI document. It keeps a small Docker world in memory
//! (environments, containers, images, compose projects, volumes, networks, swarm services),
//! answers every other operation of the document with a response synthesized from its schema,
//! and follows Arcane's real wire behaviour (`docs/arcane-wire.md`): envelopes, pagination arithmetic,
//! problem+json errors, JSON-lines streams, WebSockets and downloads.
//!
//! Test hooks live outside `/api`, under `/__sim/` (see `crates/sim/README.md`); tests drive them
//! through [`hooks::HooksClient`].
//!
//! This file is the crate's front door: [`start`] loads the spec and the state, binds and
//! spawns the server, and hands back a [`RunningSim`]; each other job is a module of its own
//! (`ARCHITECTURE.md`, "The simulator", lists them).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! // Arcane 2.8.0's document, built in; `SimConfig::new(path)` serves another one.
//! let sim = arcane_sim::start(arcane_sim::SimConfig::builtin()).await?;
//! println!("{} (key {})", sim.base_url(), sim.api_key());
//! sim.shutdown().await;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

mod accounts;
mod auth;
mod builtin;
mod config;
mod ctx;
mod faults;
pub mod hooks;
mod reply;
mod routes;
mod server;
pub mod spec;
pub mod state;
mod streams;
pub mod synth;
mod world;
mod ws;

pub use builtin::{BUILTIN_SPEC_DEFLATED, BUILTIN_SPEC_NAME, builtin_spec};
pub use config::{ArcaneVersion, DEFAULT_API_KEY, DEFAULT_USER, SimConfig, SimRole, SimUser};
pub use routes::collections;
pub use state::State;

/// A simulator serving in the background. Dropping it without [`RunningSim::shutdown`] also
/// stops the server (its task is aborted).
pub struct RunningSim {
    addr: SocketAddr,
    api_key: String,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
    _shared: Arc<world::Shared>,
}

impl RunningSim {
    /// `http://127.0.0.1:PORT` (no trailing slash, no `/api`).
    pub fn base_url(&self) -> String {
        let ip = if self.addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else if self.addr.is_ipv6() {
            format!("[{}]", self.addr.ip())
        } else {
            self.addr.ip().to_string()
        };
        format!("http://{ip}:{}", self.addr.port())
    }

    /// The socket address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The accepted API key.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// Stops accepting connections, closes the open ones and waits for the server task.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// Loads the spec and the state, binds the listener, spawns the server task and returns once
/// it accepts connections. Errors name the file that failed to load.
pub async fn start(config: SimConfig) -> anyhow::Result<RunningSim> {
    if let Some(u) = config.users.iter().find(|u| u.key.is_empty()) {
        anyhow::bail!("user `{}` has an empty API key", u.name);
    }
    let spec = match &config.spec_path {
        Some(path) => spec::Spec::load(path)?,
        None => spec::Spec::parse(builtin_spec()?)
            .map_err(|e| e.context(format!("invalid {BUILTIN_SPEC_NAME}")))?,
    };
    let seed = match &config.state_path {
        Some(p) => State::load(p)?,
        None => State::demo(),
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(world::Shared::new(
        spec,
        seed,
        config::users(&config),
        config.arcane_version,
    ));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(server::serve(listener, shared.clone(), rx));
    let spec_name = match &config.spec_path {
        Some(path) => path.display().to_string(),
        None => BUILTIN_SPEC_NAME.to_string(),
    };
    tracing::info!(%addr, spec = %spec_name, version = %config.arcane_version, "arcane-sim ready");
    Ok(RunningSim {
        addr,
        api_key: config.api_key,
        shutdown: tx,
        task: Some(task),
        _shared: shared,
    })
}
