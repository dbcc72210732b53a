//! # arcane-sim
//!
//! An in-process (or standalone) simulator of [Arcane](https://github.com/getarcaneapp/arcane)'s
//! REST API, driven by an Arcane OpenAPI document. It keeps a small Docker world in memory
//! (environments, containers, images, compose projects, volumes, networks, swarm services),
//! answers every other operation of the document with a response synthesized from its schema,
//! and follows Arcane's real wire behaviour (`docs/arcane-wire.md`): envelopes, pagination arithmetic,
//! problem+json errors, JSON-lines streams, WebSockets and downloads.
//!
//! Test hooks live outside `/api`, under `/__sim/` (see `sim/README.md`); tests drive them
//! through [`hooks::HooksClient`].
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
use std::path::PathBuf;
use std::sync::Arc;

mod builtin;
mod faults;
pub mod hooks;
mod routes;
mod server;
pub mod spec;
pub mod state;
pub mod synth;
mod ws;

pub use routes::collections;

pub use builtin::{BUILTIN_SPEC_DEFLATED, BUILTIN_SPEC_NAME, builtin_spec};
pub use state::State;

/// The API key the simulator accepts unless told otherwise.
pub const DEFAULT_API_KEY: &str = "arcane-sim-key";

/// The user name of [`SimConfig::api_key`] in the request log (Arcane's first admin).
pub const DEFAULT_USER: &str = "arcane";

/// A user of the simulated Arcane: the API key it calls with, the name the request log records
/// for its requests (never the key), and its role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimUser {
    /// The name recorded in each request-log entry as `user`.
    pub name: String,
    /// The API key accepted for this user in `X-API-Key` or `Authorization: Bearer`.
    pub key: String,
    /// The role: `admin` (everything) or `viewer` (reads only: every other method is answered
    /// 403 `permission denied: …`, as Arcane's role check does).
    pub role: SimRole,
}

/// What a [`SimUser`] may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimRole {
    /// Every operation.
    #[default]
    Admin,
    /// `GET`/`HEAD` only.
    Viewer,
}

impl SimRole {
    /// The name used in `--user` and the request log.
    pub fn as_str(self) -> &'static str {
        match self {
            SimRole::Admin => "admin",
            SimRole::Viewer => "viewer",
        }
    }
}

impl std::str::FromStr for SimUser {
    type Err = String;
    /// `NAME=KEY` or `NAME=KEY:ROLE` (role `admin`, the default, or `viewer`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = "write a user as NAME=KEY or NAME=KEY:ROLE (role admin or viewer)";
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("`{}`: {usage}", s.split(':').next().unwrap_or("")))?;
        let (key, role) = match rest.rsplit_once(':') {
            Some((key, "admin")) => (key, SimRole::Admin),
            Some((key, "viewer")) => (key, SimRole::Viewer),
            _ => (rest, SimRole::Admin),
        };
        let name = name.trim();
        if name.is_empty() || key.is_empty() {
            return Err(format!("user `{name}`: {usage}"));
        }
        Ok(SimUser {
            name: name.to_string(),
            key: key.to_string(),
            role,
        })
    }
}

/// Which Arcane the simulator imitates where releases differ on the wire (`docs/arcane-wire.md`
/// in the arcane-mcp repository describes each difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArcaneVersion {
    /// The released 2.8.0/2.8.1: path parameters not decoded, sorting only by a list's own keys
    /// (Docker's changing order otherwise), no `hasBuildDirective`, 2.8.0's update-check error.
    #[default]
    V2_8,
    /// Arcane's main branch after 2.8.1: path parameters decoded, default sort keys with
    /// tie-breaks, `hasBuildDirective`, `not_pulled` update checks.
    Main,
}

impl ArcaneVersion {
    /// The name used by `--arcane-version` and `/__sim/config`.
    pub fn as_str(self) -> &'static str {
        match self {
            ArcaneVersion::V2_8 => "2.8",
            ArcaneVersion::Main => "main",
        }
    }
}

impl std::fmt::Display for ArcaneVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ArcaneVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "2.8" | "2.8.x" | "2.8.0" | "2.8.1" => Ok(ArcaneVersion::V2_8),
            "main" => Ok(ArcaneVersion::Main),
            other => Err(format!(
                "unknown Arcane version `{other}`: use `2.8` (the release) or `main`"
            )),
        }
    }
}

/// How to run a simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The Arcane OpenAPI document (JSON or YAML) to serve and answer; `None` for the built-in
    /// Arcane 2.8.0 document ([`builtin_spec`]).
    pub spec_path: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// The API key accepted in `X-API-Key` or `Authorization: Bearer`: the admin user
    /// [`DEFAULT_USER`].
    pub api_key: String,
    /// More users, each with its own key (a key of [`SimConfig::api_key`] here wins over it).
    pub users: Vec<SimUser>,
    /// Optional state file (JSON or YAML); the built-in demo state otherwise.
    pub state_path: Option<PathBuf>,
    /// Which Arcane to imitate (2.8.x unless told otherwise).
    pub arcane_version: ArcaneVersion,
}

impl SimConfig {
    /// A config for `spec_path` with the defaults: `127.0.0.1:0`, [`DEFAULT_API_KEY`], demo state.
    pub fn new(spec_path: impl Into<PathBuf>) -> SimConfig {
        SimConfig {
            spec_path: Some(spec_path.into()),
            ..SimConfig::builtin()
        }
    }

    /// A config for the built-in Arcane 2.8.0 document ([`builtin_spec`]), with the defaults.
    pub fn builtin() -> SimConfig {
        SimConfig {
            spec_path: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            api_key: DEFAULT_API_KEY.to_string(),
            users: Vec::new(),
            state_path: None,
            arcane_version: ArcaneVersion::default(),
        }
    }
}

/// A simulator serving in the background. Dropping it without [`RunningSim::shutdown`] also
/// stops the server (its task is aborted).
pub struct RunningSim {
    addr: SocketAddr,
    api_key: String,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
    _shared: Arc<server::Shared>,
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

/// Every user the simulator accepts: the configured ones, then the default key's admin.
fn users(config: &SimConfig) -> Vec<SimUser> {
    let mut all = config.users.clone();
    if !all.iter().any(|u| u.key == config.api_key) {
        all.push(SimUser {
            name: DEFAULT_USER.to_string(),
            key: config.api_key.clone(),
            role: SimRole::Admin,
        });
    }
    all
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
    let shared = Arc::new(server::Shared::new(
        spec,
        seed,
        users(&config),
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
