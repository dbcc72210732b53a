//! How a simulator is configured: its spec, listen address, users (key, name, role), state
//! file and the Arcane version it imitates.

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// The password `POST /auth/login` takes for this user; `None`: the user cannot sign in.
    pub password: Option<String>,
}

/// Who a request is from: the user, and whether through a signed-in session (an access token
/// of `POST /auth/login`, `src/auth.rs`) rather than an API key.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: SimUser,
    pub session: bool,
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
    /// `NAME=KEY`, `NAME=KEY:ROLE` (role `admin`, the default, or `viewer`) or
    /// `NAME=KEY:ROLE:PASSWORD` (the password of `POST /auth/login`; it may hold `:`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = "write a user as NAME=KEY, NAME=KEY:ROLE or NAME=KEY:ROLE:PASSWORD (role \
                     admin or viewer)";
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("`{}`: {usage}", s.split(':').next().unwrap_or("")))?;
        // A password comes after the role: the first `:admin:` or `:viewer:` ends the key.
        let with_password = [(":admin:", SimRole::Admin), (":viewer:", SimRole::Viewer)]
            .into_iter()
            .filter_map(|(sep, role)| rest.find(sep).map(|at| (at, sep, role)))
            .min_by_key(|(at, _, _)| *at);
        let (key, role, password) = match (with_password, rest.rsplit_once(':')) {
            (Some((at, sep, role)), _) => (&rest[..at], role, Some(&rest[at + sep.len()..])),
            (None, Some((key, "admin"))) => (key, SimRole::Admin, None),
            (None, Some((key, "viewer"))) => (key, SimRole::Viewer, None),
            _ => (rest, SimRole::Admin, None),
        };
        if password == Some("") {
            return Err(format!(
                "user `{}`: the password is empty; {usage}",
                name.trim()
            ));
        }
        let name = name.trim();
        if name.is_empty() || key.is_empty() {
            return Err(format!("user `{name}`: {usage}"));
        }
        Ok(SimUser {
            name: name.to_string(),
            key: key.to_string(),
            role,
            password: password.map(str::to_string),
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
    /// Arcane 2.8.0 document ([`builtin_spec`](crate::builtin_spec)).
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

    /// A config for the built-in Arcane 2.8.0 document ([`builtin_spec`](crate::builtin_spec)), with the defaults.
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

/// Every user the simulator accepts: the configured ones, then the default key's admin.
pub(crate) fn users(config: &SimConfig) -> Vec<SimUser> {
    let mut all = config.users.clone();
    if !all.iter().any(|u| u.key == config.api_key) {
        all.push(SimUser {
            name: DEFAULT_USER.to_string(),
            key: config.api_key.clone(),
            role: SimRole::Admin,
            password: None,
        });
    }
    all
}
