//! Configuration: every setting is a command-line flag and an environment variable.

use std::path::PathBuf;

use arcane_catalog::ClientProfile;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::reload::Sources;
use crate::spec::SpecSource;

/// arcane-mcp: an MCP server (stdio or Streamable HTTP) that lets AI assistants operate Arcane,
/// the Docker management platform, through its REST API.
///
/// With no subcommand it serves MCP on stdin/stdout (or over HTTP with --transport http). Logs go
/// to stderr.
#[derive(Debug, Parser)]
#[command(name = "arcane-mcp", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default) or Streamable HTTP (--transport http).
    Serve(Box<ServeArgs>),
    /// Print a summary of the catalog built from the spec and overlays (or all of it as JSON).
    Catalog(CatalogArgs),
    /// Measure the tool definitions of each surface in bytes and o200k tokens.
    AuditTokens(AuditArgs),
    /// Validate the spec, declarations and overlays as the server would load them (for CI);
    /// exits non-zero on any error or overlay entry that matches nothing.
    Check(CheckArgs),
    /// Try it without an Arcane: serve MCP on stdio against an in-process simulator with a demo
    /// Docker world (or run `demo call …` / `demo find …` against it).
    Demo(Box<DemoArgs>),
    /// Run one action and print the text a model gets (or its structuredContent with --json).
    Call(Box<CallArgs>),
    /// Search the catalog as arcane_find_action does and print the result.
    Find(Box<FindArgs>),
}

/// `arcane-mcp demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    #[command(subcommand)]
    pub command: Option<DemoCommand>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The one-shot forms of `arcane-mcp demo`.
#[derive(Debug, Clone, Subcommand)]
pub enum DemoCommand {
    /// Run one action against the simulator and print the text a model gets.
    Call(Box<CallArgs>),
    /// Search the catalog as arcane_find_action does.
    Find(Box<FindArgs>),
}

/// `arcane-mcp call ACTION`.
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    /// The action: an ID such as container.list, or any name a tool call accepts.
    #[arg(value_name = "ACTION")]
    pub action: String,
    /// A parameter; repeatable. The value is JSON where the parameter is not a string
    /// (limit=5, force=true), text otherwise.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub param: Vec<String>,
    /// Parameters as one JSON object; --param entries override its keys.
    #[arg(long = "params", value_name = "JSON")]
    pub params: Option<String>,
    /// Confirm a destructive action (without it nothing is sent).
    #[arg(long)]
    pub confirm: bool,
    /// Print the result's structuredContent as JSON instead of its text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// `arcane-mcp find WORDS`.
#[derive(Debug, Clone, Args)]
pub struct FindArgs {
    /// Plain words naming a resource and a verb, e.g. "restart container".
    #[arg(value_name = "WORDS", required = true, num_args = 1..)]
    pub words: Vec<String>,
    /// How many actions to return.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Where the catalog comes from.
#[derive(Debug, Clone, Args)]
pub struct CatalogSourceArgs {
    /// Arcane OpenAPI document (JSON or YAML). Default: catalog/openapi.json|yaml in the catalog
    /// directory, else fetched from {ARCANE_URL}/api/openapi.json and cached.
    #[arg(long, env = "ARCANE_MCP_SPEC", value_name = "PATH")]
    pub spec: Option<PathBuf>,
    /// Operator overlay directory (*.yaml), layered over the built-in overlays; hot-reloaded.
    #[arg(long, env = "ARCANE_MCP_OVERRIDES", value_name = "DIR")]
    pub overrides: Option<PathBuf>,
    /// Catalog directory: openapi.json|yaml and extra action declarations (*.yaml); hot-reloaded.
    #[arg(
        long,
        env = "ARCANE_MCP_CATALOG_DIR",
        value_name = "DIR",
        default_value = "catalog"
    )]
    pub catalog_dir: PathBuf,
    /// Where a spec fetched from Arcane is cached.
    #[arg(long, env = "ARCANE_MCP_SPEC_CACHE", value_name = "PATH")]
    pub spec_cache: Option<PathBuf>,
}

impl CatalogSourceArgs {
    /// The sources to build (and watch) the catalog from.
    pub fn sources(&self, arcane_url: Option<&str>) -> Sources {
        let cache = self.spec_cache.clone().or_else(default_cache_path);
        Sources {
            spec: SpecSource {
                explicit: self.spec.clone(),
                catalog_dir: Some(self.catalog_dir.clone()),
                arcane_url: arcane_url.map(str::to_string),
                cache_path: cache,
                tls: None,
                builtin: None,
            },
            overrides_dir: self.overrides.clone(),
            catalog_dir: Some(self.catalog_dir.clone()),
        }
    }
}

fn default_cache_path() -> Option<PathBuf> {
    Some(cache_home()?.join("openapi.json"))
}

/// `$XDG_CACHE_HOME/arcane-mcp` (or `~/.cache/arcane-mcp`).
fn cache_home() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("arcane-mcp"))
}

impl ServeArgs {
    /// The catalog cache of these settings: `None` with `--no-catalog-cache` or without a
    /// cache directory.
    pub fn catalog_cache(&self) -> Option<crate::catalog_cache::CatalogCache> {
        if self.no_catalog_cache {
            return None;
        }
        let dir = self
            .catalog_cache_dir
            .clone()
            .or_else(|| Some(cache_home()?.join("catalogs")))?;
        Some(crate::catalog_cache::CatalogCache::new(dir))
    }
}

/// The tool surface: how the catalog appears in the client's tool list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Surface {
    /// Two tools: arcane_find_action and arcane_execute_action.
    #[default]
    Dynamic,
    /// One tool per domain, arcane_<domain>.
    Meta,
    /// One tool per action, arcane_<domain>_<action>.
    Individual,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Dynamic => "dynamic",
            Surface::Meta => "meta",
            Surface::Individual => "individual",
        }
    }
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines (colours only when stderr is a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Parses `true/false`, `1/0`, `on/off`, `yes/no`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" | "" => Ok(false),
        other => Err(format!(
            "{other:?} is not a boolean; use true/false, 1/0 or on/off"
        )),
    }
}

/// Settings of the MCP server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Arcane base URL, e.g. https://arcane.example.com (without /api).
    #[arg(long, env = "ARCANE_URL", value_name = "URL")]
    pub arcane_url: Option<String>,
    /// Arcane API key (sent as X-API-Key). Create one in Arcane under Settings → API Keys.
    #[arg(
        long,
        env = "ARCANE_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Bearer token (JWT), as an alternative to an API key.
    #[arg(
        long,
        env = "ARCANE_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Default environment for actions that take environmentId.
    #[arg(
        long = "environment",
        env = "ARCANE_ENVIRONMENT_ID",
        value_name = "ID",
        default_value = "0"
    )]
    pub environment: String,
    /// Tool surface.
    #[arg(long, env = "ARCANE_MCP_TOOL_SURFACE", value_enum, default_value_t = Surface::Dynamic)]
    pub tool_surface: Surface,
    /// Withdraw every mutating action (from tools, search, resources and calls).
    #[arg(long, env = "ARCANE_MCP_READ_ONLY", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub read_only: bool,
    /// Answer mutating calls with a preview of the request instead of sending it.
    #[arg(long, env = "ARCANE_MCP_SAFE_MODE", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub safe_mode: bool,
    /// Show secret values (env values, `.env` and compose secrets, passwords) in the text of
    /// results; masked by default. structuredContent always carries Arcane's values.
    #[arg(long, env = "ARCANE_MCP_SHOW_SECRETS", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub show_secrets: bool,
    /// Withdraw actions: comma-separated action IDs, tool names or whole domains.
    #[arg(
        long,
        env = "ARCANE_MCP_EXCLUDE_TOOLS",
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub exclude_tools: Vec<String>,
    /// Confirmation of destructive actions: elicit (the client asks the user when it can),
    /// param (`"confirm": true` only), never-destructive (withdrawn outright).
    /// (Named `--confirm-mode` because `call --confirm` confirms one call.)
    #[arg(long = "confirm-mode", env = "ARCANE_MCP_CONFIRM", value_enum, default_value_t = ConfirmMode::Elicit)]
    pub confirm_mode: ConfirmMode,
    /// Serve only these actions: comma-separated action IDs, tool names or whole domains (an
    /// allow-list; actions a newer Arcane adds stay withdrawn until named).
    #[arg(
        long,
        env = "ARCANE_MCP_TOOLS",
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub tools: Vec<String>,
    /// Serve a named set of actions defined in the overlays: read-only, deploy, troubleshoot,
    /// minimal (overrides/presets.yaml), or an operator's own.
    #[arg(long, env = "ARCANE_MCP_PRESET", value_name = "NAME")]
    pub preset: Option<String>,
    /// Declare output schemas on the individual surface (experimental).
    #[arg(long, env = "ARCANE_MCP_OUTPUT_SCHEMAS", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub output_schemas: bool,
    /// Client profile: `flat` (alias `agentforce`) keeps every tool schema and result at the
    /// first level, for clients that cannot map nested shapes.
    #[arg(long, env = "ARCANE_MCP_CLIENT_PROFILE", value_enum, default_value_t = ClientProfile::Standard)]
    pub client_profile: ClientProfile,
    /// Request timeout in seconds (streams and handlers have their own caps).
    #[arg(
        long,
        env = "ARCANE_MCP_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 30
    )]
    pub timeout: u64,
    /// Largest answer body read from Arcane, in bytes (JSON answers, WebSocket messages, log
    /// text; downloads get 10 MiB or this, whichever is lower). A longer answer is cut off with
    /// an error that says how to page or filter. Default: 16 MiB (16777216).
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_RESPONSE_BYTES",
        value_name = "BYTES",
        default_value_t = arcane_engine::DEFAULT_MAX_RESPONSE_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=1024 * 1024 * 1024)
    )]
    pub max_response_bytes: usize,
    /// Most requests to Arcane in flight at once; further calls wait their turn (and can be
    /// cancelled while waiting). Default: 32.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_CONCURRENT_REQUESTS",
        value_name = "N",
        default_value_t = arcane_engine::DEFAULT_MAX_CONCURRENT_REQUESTS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)
    )]
    pub max_concurrent_requests: usize,
    /// Most `tools/call` calls of a session running at once, each counted until its answer
    /// has been written to the client: a client slower to read than the server is to answer
    /// holds the calls beyond it (before they run) rather than letting answers pile up in
    /// memory. `ping`, `tools/list`, `arcane_find_action` and resources never wait for it.
    /// Default: 128.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_CALLS_IN_FLIGHT",
        value_name = "N",
        default_value_t = crate::pacing::DEFAULT_MAX_CALLS_IN_FLIGHT,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)
    )]
    pub max_calls_in_flight: usize,
    /// Extra CA certificate (PEM) to trust for Arcane's TLS.
    #[arg(long, env = "ARCANE_MCP_CA_CERT", value_name = "PATH")]
    pub ca_cert: Option<PathBuf>,
    /// Skip TLS certificate verification (insecure; for testing only).
    #[arg(long, env = "ARCANE_MCP_INSECURE_SKIP_VERIFY", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub insecure_skip_verify: bool,
    /// Log level or filter (logs go to stderr), e.g. info, debug, arcane_mcp=trace.
    #[arg(
        long,
        env = "ARCANE_MCP_LOG",
        value_name = "FILTER",
        default_value = "info"
    )]
    pub log_level: String,
    /// Log format: text, or json (one object per line) for log collectors.
    #[arg(long, env = "ARCANE_MCP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Append a JSON line per mutating call (sent, failed, refused or previewed) to this file
    /// (docs/security.md#audit-log); secrets masked, the user by a key fingerprint.
    #[arg(long, env = "ARCANE_MCP_AUDIT_LOG", value_name = "PATH")]
    pub audit_log: Option<PathBuf>,
    /// Size at which the audit log is rotated (PATH.1 … PATH.3 kept). Default: 50 MiB.
    #[arg(
        long,
        env = "ARCANE_MCP_AUDIT_LOG_MAX_BYTES",
        value_name = "BYTES",
        default_value_t = 50 * 1024 * 1024,
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(4096..)
    )]
    pub audit_log_max_bytes: u64,
    /// Where built catalogs are cached, keyed by a hash of the spec, the overlay and
    /// declaration files and this binary's version (docs/measurements.md): a start with
    /// unchanged files skips the build. Default: $XDG_CACHE_HOME/arcane-mcp/catalogs.
    #[arg(long, env = "ARCANE_MCP_CATALOG_CACHE_DIR", value_name = "DIR")]
    pub catalog_cache_dir: Option<PathBuf>,
    /// Always build the catalog from its files; read and write no catalog cache.
    #[arg(long, env = "ARCANE_MCP_NO_CATALOG_CACHE")]
    pub no_catalog_cache: bool,
    #[command(flatten)]
    pub source: CatalogSourceArgs,
    #[command(flatten)]
    pub http: HttpArgs,
}

/// How MCP is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Transport {
    /// stdin/stdout, one client (the default).
    #[default]
    Stdio,
    /// Streamable HTTP at `/mcp` on `--listen`, for a team (docs/security.md).
    Http,
}

/// Whose Arcane credential a call over HTTP runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum KeySource {
    /// The server's own key (ARCANE_API_KEY); a request carrying X-Arcane-API-Key is refused.
    #[default]
    Server,
    /// The caller's key only: every request must carry X-Arcane-API-Key.
    Client,
    /// The caller's key when the request carries one, else the server's.
    Either,
}

impl KeySource {
    pub fn as_str(self) -> &'static str {
        match self {
            KeySource::Server => "server",
            KeySource::Client => "client",
            KeySource::Either => "either",
        }
    }
}

/// How a destructive action is confirmed (docs/security.md#confirmation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ConfirmMode {
    /// Ask the user through the client (`elicitation/create`) when the client can show a form;
    /// otherwise `"confirm": true` as with `param`.
    #[default]
    Elicit,
    /// The model passes `"confirm": true` after asking the user itself.
    Param,
    /// Destructive actions are withdrawn outright.
    NeverDestructive,
}

/// Settings of the Streamable HTTP transport (docs/security.md).
#[derive(Debug, Clone, Args)]
pub struct HttpArgs {
    /// Transport: stdio (one local client) or http (Streamable HTTP at /mcp, for a team).
    #[arg(long, env = "ARCANE_MCP_TRANSPORT", value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Address the HTTP transport listens on.
    #[arg(
        long,
        env = "ARCANE_MCP_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:8000"
    )]
    pub listen: std::net::SocketAddr,
    /// Bearer tokens clients must present over HTTP (comma-separated; any one is accepted).
    #[arg(
        long = "auth-token",
        env = "ARCANE_MCP_AUTH_TOKEN",
        value_name = "TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub auth_tokens: Vec<String>,
    /// File of bearer tokens, one per line (`#` starts a comment), e.g. a mounted secret.
    #[arg(long, env = "ARCANE_MCP_AUTH_TOKEN_FILE", value_name = "PATH")]
    pub auth_token_file: Option<PathBuf>,
    /// Serve HTTP without a bearer token (loopback addresses only; logged as a warning).
    #[arg(long, env = "ARCANE_MCP_ALLOW_UNAUTHENTICATED", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub allow_unauthenticated: bool,
    /// Host names (or host:port) the HTTP transport answers to (comma-separated); others get
    /// 403. Default: localhost, 127.0.0.1, ::1 — required when listening beyond loopback.
    #[arg(
        long,
        env = "ARCANE_MCP_ALLOWED_HOSTS",
        value_name = "HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (comma-separated, with scheme, e.g.
    /// https://app.example.com:443). A request with any other Origin gets 403; requests
    /// without Origin (non-browser clients) pass.
    #[arg(
        long,
        env = "ARCANE_MCP_ALLOWED_ORIGINS",
        value_name = "ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,
    /// Largest HTTP request body accepted, in bytes (larger → 413).
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_REQUEST_BYTES",
        value_name = "BYTES",
        default_value_t = 1024 * 1024,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=256 * 1024 * 1024)
    )]
    pub max_request_bytes: usize,
    /// Requests per minute one client address may send (bursts up to this many; beyond → 429).
    #[arg(
        long,
        env = "ARCANE_MCP_RATE_LIMIT",
        value_name = "PER_MINUTE",
        default_value_t = 600,
        value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(1..=1_000_000)
    )]
    pub rate_limit: u32,
    /// An HTTP session idle this many seconds is closed (the client starts a new one).
    #[arg(
        long,
        env = "ARCANE_MCP_SESSION_IDLE_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 900,
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=7 * 24 * 3600)
    )]
    pub session_idle_timeout: u64,
    /// Most MCP sessions open at once; a client opening one more is asked to retry later (each
    /// session holds memory until it ends or idles out).
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_SESSIONS",
        value_name = "N",
        default_value_t = 1000,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)
    )]
    pub max_sessions: usize,
    /// Whose Arcane key a call over HTTP uses: the server's (ARCANE_API_KEY), the caller's
    /// (X-Arcane-API-Key header, so Arcane's own roles apply), or the caller's when sent.
    #[arg(long, env = "ARCANE_MCP_ARCANE_KEY_SOURCE", value_enum, default_value_t = KeySource::Server)]
    pub arcane_key_source: KeySource,
}

/// `arcane-mcp catalog`.
#[derive(Debug, Clone, Args)]
pub struct CatalogArgs {
    #[command(flatten)]
    pub source: CatalogSourceArgs,
    /// Arcane URL to fetch the spec from when no local spec is found.
    #[arg(long, env = "ARCANE_URL", value_name = "URL")]
    pub arcane_url: Option<String>,
    /// Print the whole catalog as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print one action in full (by ID or any accepted name).
    #[arg(long, value_name = "ID")]
    pub show: Option<String>,
    /// Upgrade preview: compare with the catalog of an older spec (a file, `live` for the
    /// Arcane at ARCANE_URL, or an Arcane base URL): actions added, removed, renamed, flag
    /// changes, and overlay entries that stop matching.
    #[arg(long, value_name = "OLD")]
    pub diff: Option<String>,
}

/// `arcane-mcp check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: CatalogSourceArgs,
    /// Arcane URL to fetch the spec from when no local spec is found.
    #[arg(long, env = "ARCANE_URL", value_name = "URL")]
    pub arcane_url: Option<String>,
    /// Report overlay entries that match nothing as warnings instead of failing.
    #[arg(long)]
    pub allow_unmatched: bool,
}

/// `arcane-mcp audit-tokens`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub source: CatalogSourceArgs,
    /// Arcane URL to fetch the spec from when no local spec is found.
    #[arg(long, env = "ARCANE_URL", value_name = "URL")]
    pub arcane_url: Option<String>,
    /// Baseline file to compare with; exit non-zero when a figure drifts more than 15%.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
    /// Write the measured figures to the baseline file instead of comparing.
    #[arg(long)]
    pub write_baseline: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Measure results instead of tool definitions: the text and structuredContent tokens of
    /// the main read actions on the demo world (an in-process simulator of the spec).
    #[arg(long)]
    pub results: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_profile_flag_and_alias() {
        let profile = |args: &[&str]| {
            let mut all = vec!["arcane-mcp"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).map(|c| c.serve.client_profile)
        };
        assert_eq!(profile(&[]).unwrap(), ClientProfile::Standard);
        assert_eq!(
            profile(&["--client-profile", "flat"]).unwrap(),
            ClientProfile::Flat
        );
        assert_eq!(
            profile(&["--client-profile", "agentforce"]).unwrap(),
            ClientProfile::Flat
        );
        let err = profile(&["--client-profile", "nested"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("standard") && err.contains("flat"), "{err}");
    }
}
