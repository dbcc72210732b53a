//! Configuration: every setting is a command-line flag and an environment variable.

use std::path::PathBuf;
use std::sync::LazyLock;

use arcane_catalog::ClientProfile;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::logging::LogFormat;
use crate::surface::Surface;

/// The default of `--max-calls-in-flight`: far more than the calls' runtime renders at once
/// (one worker per core but one) and than the requests to Arcane allowed at once (32), so the
/// limit costs a burst no throughput; small enough that the answers a slow reader leaves
/// unwritten stay a few megabytes (docs/measurements.md); `mcp::pacing` keeps to it.
pub const DEFAULT_MAX_CALLS_IN_FLIGHT: usize = 128;

/// arcane-mcp: an MCP server (stdio or Streamable HTTP) that lets AI assistants operate Arcane,
/// the Docker management platform, through its REST API.
///
/// With no subcommand it serves MCP on stdin/stdout (or over HTTP with --transport http). Logs go
/// to stderr. Settings may be written before or after the subcommand; each subcommand's --help
/// lists the ones it takes.
#[derive(Debug, Parser)]
#[command(name = "arcane-mcp", version, about, long_about = None, propagate_version = true)]
struct Parsed {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

/// The command line: a subcommand and the settings ([`ServeArgs`]), defined once and taken
/// wherever they are written — `arcane-mcp --read-only call …` and `arcane-mcp call … --read-only`
/// are the same command. A setting a subcommand does not use ([`takes`]) is refused there, in
/// either position, rather than accepted and ignored.
///
/// Parse it with [`clap::Parser`] (`Cli::parse`, `Cli::try_parse_from`): its command tree is
/// [`Cli::command`], the derived one with the settings' rules applied.
#[derive(Debug)]
pub struct Cli {
    pub command: Option<Command>,
    /// The settings, from every position on the command line, the environment and defaults.
    pub serve: ServeArgs,
}

impl clap::CommandFactory for Cli {
    fn command() -> clap::Command {
        settings_everywhere(Parsed::command())
    }

    fn command_for_update() -> clap::Command {
        settings_everywhere(Parsed::command_for_update())
    }
}

impl clap::FromArgMatches for Cli {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        refuse_settings_not_taken(matches)?;
        let parsed = Parsed::from_arg_matches(matches)?;
        Ok(Cli {
            command: parsed.command,
            serve: parsed.serve,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Parser for Cli {}

/// The settings' arguments (every field of [`ServeArgs`], its groups included), as clap
/// derives them.
fn settings_args() -> Vec<clap::Arg> {
    ServeArgs::augment_args(clap::Command::new("settings"))
        .get_arguments()
        .cloned()
        .collect()
}

fn ids_of(cmd: clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// The settings that reach Arcane itself: the demo has its own simulator instead.
const CONNECTION: &[&str] = &[
    "arcane_url",
    "api_key",
    "token",
    "ca_cert",
    "insecure_skip_verify",
];

/// The settings a search (`find`) uses besides the catalog's sources, the logs and the catalog
/// cache: those that withdraw actions from what it can find.
const FIND: &[&str] = &[
    "read_only",
    "exclude_tools",
    "tools",
    "preset",
    "confirm_mode",
];

/// Default interval of the polls behind container and project subscriptions
/// (`--subscription-poll-ms`, `crate::resources::live`).
pub const DEFAULT_SUBSCRIPTION_POLL_MS: u64 = 5000;
/// The shortest one an operator may set.
pub const MIN_SUBSCRIPTION_POLL_MS: u64 = 250;

/// Settings of a served session only (a one-shot `call` has one call in flight).
const SESSION: &[&str] = &[
    "max_calls_in_flight",
    "max_tasks",
    "max_tasks_total",
    "task_ttl_max",
    "subscription_poll_ms",
    "max_subscriptions",
    "max_subscriptions_total",
];

/// Whether the subcommand at `path` (`[]` for none, `["demo", "call"]`…) uses the setting
/// `id`: the one rule behind each subcommand's `--help` and the refusal of a setting written
/// where it would be ignored. A setting added to [`ServeArgs`] is taken by `serve`, `demo` and
/// `call` (and refused elsewhere) until it is named here; one added to [`HttpArgs`], by the two
/// commands that serve.
pub fn takes(path: &[&str], id: &str) -> bool {
    static HTTP: LazyLock<Vec<String>> =
        LazyLock::new(|| ids_of(HttpArgs::augment_args(clap::Command::new("http"))));
    static SOURCE: LazyLock<Vec<String>> = LazyLock::new(|| {
        ids_of(CatalogSourceArgs::augment_args(clap::Command::new(
            "source",
        )))
    });
    let is = |ids: &[&str]| ids.contains(&id);
    let http = HTTP.iter().any(|h| h == id);
    let source = SOURCE.iter().any(|s| s == id);
    let logs = is(&["log_level", "log_format"]);
    let cache = is(&["catalog_cache_dir", "no_catalog_cache"]);
    // The demo serves a spec file and never fetches one.
    let demo_source = source && id != "spec_cache";
    match path {
        [] | ["serve"] => true,
        ["catalog" | "check"] => source || logs || id == "arcane_url",
        ["find"] => source || logs || cache || id == "arcane_url" || is(FIND),
        ["call" | "undo"] => !http && !is(SESSION),
        ["history"] => logs || id == "history",
        ["demo"] => !is(CONNECTION) && id != "spec_cache",
        ["demo", "call"] => !http && !is(CONNECTION) && !is(SESSION) && id != "spec_cache",
        ["demo", "find"] => demo_source || logs || cache || is(FIND),
        _ => false,
    }
}

/// The command tree: every setting is defined on every (sub)command — shown in the `--help` of
/// those that take it, hidden in the others — and global, so that clap gives the one value
/// written anywhere to [`Cli::serve`]. A boolean setting is a plain switch: its value is
/// only read after `=` (`--read-only=false`), so `--read-only serve` is a switch and a
/// subcommand.
fn settings_everywhere(cmd: clap::Command) -> clap::Command {
    let settings: Vec<clap::Arg> = settings_args().into_iter().map(switch).collect();
    let cmd = cmd.mut_args(|a| switch(a).global(true));
    each_subcommand(cmd, &[], &settings)
}

/// An argument with an optional value (the boolean settings) takes it only after `=`.
fn switch(a: clap::Arg) -> clap::Arg {
    match a.get_num_args() {
        Some(range) if range.min_values() == 0 && range.max_values() == 1 => a.require_equals(true),
        _ => a,
    }
}

fn each_subcommand(cmd: clap::Command, path: &[&str], settings: &[clap::Arg]) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names.iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| {
            let mut here: Vec<&str> = path.to_vec();
            here.push(name);
            let sub = settings.iter().fold(sub, |sub, a| {
                // Numbered after the subcommand's own options, not among them.
                let copy = a.clone().global(false).display_order(None);
                match takes(&here, a.get_id().as_str()) {
                    true => sub.arg(copy),
                    false => sub.arg(copy.hide(true)),
                }
            });
            each_subcommand(sub, &here, settings)
        })
    })
}

/// A setting written on the command line for a subcommand that does not use it is an error
/// that says where it applies (an environment variable is a standing setting: it applies where
/// it can, silently).
fn refuse_settings_not_taken(matches: &clap::ArgMatches) -> Result<(), clap::Error> {
    let mut path: Vec<&str> = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    for a in settings_args() {
        let id = a.get_id().as_str();
        if matches.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
            || takes(&path, id)
        {
            continue;
        }
        let flag = a
            .get_long()
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| id.to_string());
        let command = std::iter::once("arcane-mcp")
            .chain(path.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let users: Vec<String> = [
            &["serve"][..],
            &["demo"],
            &["call"],
            &["find"],
            &["history"],
            &["undo"],
            &["demo", "call"],
            &["demo", "find"],
            &["catalog"],
            &["check"],
        ]
        .iter()
        .filter(|p| takes(p, id))
        .map(|p| p.join(" "))
        .collect();
        return Err(clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            format!(
                "{flag} does not apply to `{command}`, which would ignore it; it is a setting \
                 of: {}. Remove it, or see `{command} --help` for what it takes.",
                users.join(", ")
            ),
        ));
    }
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default) or Streamable HTTP (--transport http).
    Serve,
    /// Print a summary of the catalog built from the spec and overlays (or all of it as JSON).
    Catalog(CatalogArgs),
    /// Validate the spec, declarations and overlays as the server would load them (for CI);
    /// exits non-zero on any error or overlay entry that matches nothing.
    Check(CheckArgs),
    /// Try it without an Arcane: serve MCP on stdio against an in-process simulator with a demo
    /// Docker world (or run `demo call …` / `demo find …` against it).
    Demo(DemoArgs),
    /// Run one action and print the text a model gets (or its structuredContent with --json).
    Call(CallArgs),
    /// Search the catalog as arcane_find_action does and print the result.
    Find(FindArgs),
    /// List the changes the server made (with --history FILE), newest first, and how each is
    /// taken back.
    History(HistoryArgs),
    /// Take back a change of the history: run the call it recorded (--confirm where the
    /// change asks).
    Undo(UndoArgs),
}

/// `arcane-mcp history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// How many changes, newest first.
    #[arg(long, default_value_t = 20)]
    pub last: usize,
    /// Print the changes as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `arcane-mcp undo ID`.
#[derive(Debug, Clone, Args)]
pub struct UndoArgs {
    /// The change's ID, as `arcane-mcp history` lists it.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Confirm the call that takes it back, where it asks (without it nothing is sent).
    #[arg(long)]
    pub confirm: bool,
    /// Take it back even when what the change set was changed again since (drift).
    #[arg(long)]
    pub force: bool,
    /// Print the result's structuredContent as JSON instead of its text.
    #[arg(long)]
    pub json: bool,
}

/// `arcane-mcp demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    #[command(subcommand)]
    pub command: Option<DemoCommand>,
}

/// The one-shot forms of `arcane-mcp demo`.
#[derive(Debug, Clone, Subcommand)]
pub enum DemoCommand {
    /// Run one action against the simulator and print the text a model gets.
    Call(CallArgs),
    /// Search the catalog as arcane_find_action does.
    Find(FindArgs),
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
    /// Print the result's structuredContent as JSON (each match with its schema) instead of
    /// its text.
    #[arg(long)]
    pub json: bool,
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
    /// Where a spec fetched from Arcane is cached (default: one file per Arcane URL in the cache
    /// directory); a copy fetched from another URL is never used.
    #[arg(long, env = "ARCANE_MCP_SPEC_CACHE", value_name = "PATH")]
    pub spec_cache: Option<PathBuf>,
}

impl ServeArgs {
    /// A fatal error's text as it may be printed: URLs' credentials masked, and every secret
    /// value of these settings ([`ServeArgs::secret_values`]) wherever it appears, in any of
    /// the forms the redactor looks for ([`arcane_redact::KnownSecrets`]). Only the secrets are
    /// touched — not the heuristic `name: value` rules of [`arcane_redact::mask_text`], which
    /// would mask words of the program's own messages ("no Arcane credential: set …"). A
    /// value shorter than [`arcane_redact::MIN_KNOWN_SECRET_CHARS`] is not looked for: it
    /// would match ordinary words, and no Arcane key is that short.
    pub fn mask_secrets(&self, text: &str) -> String {
        let out = arcane_redact::mask_url_credentials(text);
        let values = self.secret_values();
        arcane_redact::KnownSecrets::new(values.iter().map(String::as_str))
            .mask(&out)
            .into_owned()
    }

    /// Every credential these settings hold: the API key, the token, the HTTP listener's
    /// bearer tokens given on the command line or in the environment (a token file's are
    /// added where it is read), the password of `ARCANE_URL` (as written and decoded).
    pub fn secret_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self
            .api_key
            .iter()
            .chain(&self.token)
            .cloned()
            .chain(
                self.http
                    .auth_tokens
                    .iter()
                    .map(|t| split_named(t).1.to_string()),
            )
            .collect();
        if let Some(password) = self
            .arcane_url
            .as_deref()
            .and_then(|u| url::Url::parse(u.trim()).ok())
            .and_then(|u| u.password().map(str::to_string))
        {
            values.push(
                percent_encoding::percent_decode_str(&password)
                    .decode_utf8_lossy()
                    .into_owned(),
            );
            values.push(password);
        }
        values
    }

    /// The Arcane base URL to fetch the spec from, when one is set (checked as
    /// [`arcane_base_url`] checks it).
    pub fn spec_url(&self) -> anyhow::Result<Option<String>> {
        match self.arcane_url.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(raw) => arcane_base_url(raw).map(Some),
        }
    }
}

/// An Arcane base URL (`ARCANE_URL`, `--arcane-url`) checked and normalised: http or https,
/// without a trailing `/` or `/api` (every path the server builds starts with /api). A URL
/// without a scheme (`arcane.local:3552`) says to add one. The error never repeats a password
/// the URL carries.
pub fn arcane_base_url(raw: &str) -> anyhow::Result<String> {
    let raw = raw.trim();
    if !raw.contains("://") {
        anyhow::bail!(
            "ARCANE_URL (--arcane-url) has no scheme: add http:// or https://, e.g. {}",
            crate::logging::masked_url(&format!("http://{raw}"))
        );
    }
    let parsed = url::Url::parse(raw).map_err(|e| {
        anyhow::anyhow!(
            "ARCANE_URL (--arcane-url) is not a URL ({e}); give Arcane's base URL, e.g. \
             https://arcane.example.com"
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        anyhow::bail!(
            "ARCANE_URL (--arcane-url) {} must start with http:// or https://",
            crate::logging::masked_url(raw)
        );
    }
    let base = raw.trim_end_matches('/');
    Ok(base.strip_suffix("/api").unwrap_or(base).to_string())
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

/// A switch that takes `on` or `off` (and, unlisted, the other spellings of [`parse_bool`]).
fn on_off() -> impl clap::builder::TypedValueParser<Value = bool> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let hidden = ["true", "false", "1", "0", "yes", "no"].map(|v| PossibleValue::new(v).hide(true));
    PossibleValuesParser::new(
        [PossibleValue::new("on"), PossibleValue::new("off")]
            .into_iter()
            .chain(hidden),
    )
    .map(|v| parse_bool(&v).unwrap_or(false))
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
    /// Withdraw actions: comma-separated action IDs, tool names or whole domains (an entry
    /// that names none of them is refused, so nothing meant to be withdrawn is served).
    #[arg(
        long,
        env = "ARCANE_MCP_EXCLUDE_TOOLS",
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub exclude_tools: Vec<String>,
    /// Confirmation of asked actions (every impact class but routine, and `confirm: always`
    /// ones): elicit (the client always asks the user when it can; `"confirm": true` only
    /// counts for a client that cannot), elicit-unless-confirmed (`"confirm": true` skips
    /// asking), param (`"confirm": true` only), never-destructive (destructive actions
    /// withdrawn outright; the other asked ones asked as with elicit).
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
    /// MCP Apps views (docs/apps.md): `on` links the tools of lists, the dashboard, stats, logs
    /// and objects to an interactive view (`ui://arcane/app`) for clients that negotiate the
    /// `io.modelcontextprotocol/ui` extension; `off` offers it to none. Results are the same.
    #[arg(long, env = "ARCANE_MCP_APPS", value_name = "on|off", value_parser = on_off(), default_value = "on", action = clap::ArgAction::Set)]
    pub apps: bool,
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
        default_value_t = DEFAULT_MAX_CALLS_IN_FLIGHT,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)
    )]
    pub max_calls_in_flight: usize,
    /// Most MCP tasks (docs/tasks.md) one caller may have running at once: over stdio the one
    /// client, over HTTP one token and Arcane key. A call beyond it is refused with a clear
    /// error, nothing sent. Default: 8.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_TASKS",
        value_name = "N",
        default_value_t = 8,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)
    )]
    pub max_tasks: usize,
    /// Most MCP tasks running at once on the whole server, every caller together. Default: 64.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_TASKS_TOTAL",
        value_name = "N",
        default_value_t = 64,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)
    )]
    pub max_tasks_total: usize,
    /// The longest an MCP task is kept from its creation, in seconds (its TTL): tasks of the
    /// 2026-07-28 extension get it, a 2025-11-25 client may ask for less (`task.ttl`, at least
    /// 1 s). One still running then is stopped (its request to Arcane closed) and ends
    /// `failed`; a finished one is forgotten at most one more TTL later. Default: 3600.
    #[arg(
        long,
        env = "ARCANE_MCP_TASK_TTL_MAX",
        value_name = "SECONDS",
        default_value_t = 3600,
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=604_800)
    )]
    pub task_ttl_max: u64,
    /// Milliseconds between two polls of the container or project list behind subscribed
    /// `arcane://container/…` and `arcane://project/…` resources (docs/live-resources.md):
    /// one poll per environment, kind and Arcane key however many clients subscribe, and only
    /// while one does. At least 250. Default: 5000.
    #[arg(
        long,
        env = "ARCANE_MCP_SUBSCRIPTION_POLL_MS",
        value_name = "MS",
        default_value_t = DEFAULT_SUBSCRIPTION_POLL_MS,
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new()
            .range(MIN_SUBSCRIPTION_POLL_MS..=3_600_000)
    )]
    pub subscription_poll_ms: u64,
    /// Most resource subscriptions of one session (`resources/subscribe`) or of one
    /// `subscriptions/listen` request; one beyond it is refused with a clear error. Default: 64.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_SUBSCRIPTIONS",
        value_name = "N",
        default_value_t = 64,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)
    )]
    pub max_subscriptions: usize,
    /// Most resource subscriptions of the whole server, every client together. Default: 1024.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_SUBSCRIPTIONS_TOTAL",
        value_name = "N",
        default_value_t = 1024,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536)
    )]
    pub max_subscriptions_total: usize,
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
    /// Export traces and metrics over OTLP/HTTP to this collector (a base URL such as
    /// http://localhost:4318: traces go to /v1/traces, metrics to /v1/metrics). Off by
    /// default; the standard OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    /// OTEL_EXPORTER_OTLP_HEADERS and OTEL_SERVICE_NAME are read too (docs/observability.md).
    #[arg(long, env = "ARCANE_MCP_OTEL_ENDPOINT", value_name = "URL")]
    pub otel_endpoint: Option<String>,
    /// Append a JSON line per mutating call or credential reveal (sent, failed, refused or
    /// previewed) to this file
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
    /// Keep a JSON line per change made through the server in this file, with the call that
    /// takes it back (docs/undo.md): `arcane-mcp history` lists them, `arcane-mcp undo ID`
    /// runs one. Secrets are never written; the newest 1,000 are kept.
    #[arg(long, env = "ARCANE_MCP_HISTORY", value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Where built catalogs are cached, keyed by a hash of the spec, the overlay and
    /// declaration files and this binary's version (docs/measurements.md): a start with
    /// unchanged files skips the build. Default: $XDG_CACHE_HOME/arcane-mcp/catalogs.
    #[arg(long, env = "ARCANE_MCP_CATALOG_CACHE_DIR", value_name = "DIR")]
    pub catalog_cache_dir: Option<PathBuf>,
    /// Always build the catalog from its files; read and write no catalog cache.
    #[arg(long, env = "ARCANE_MCP_NO_CATALOG_CACHE", value_parser = parse_bool, default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    pub no_catalog_cache: bool,
    #[command(flatten, next_help_heading = "Catalog")]
    pub source: CatalogSourceArgs,
    #[command(flatten, next_help_heading = "HTTP transport")]
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
    /// Ask the user through the client (`elicitation/create`, or the 2026-07-28 round trip)
    /// whenever the client can show a form, whatever the arguments say; a client that cannot
    /// keeps the `"confirm": true` rule of `param`.
    #[default]
    Elicit,
    /// As `elicit`, except that a call carrying `"confirm": true` runs without asking: the
    /// model's word stands for the user's, so a prompt-injected model can destroy without a
    /// person. For those who want the earlier behaviour.
    ElicitUnlessConfirmed,
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
    /// Most MCP sessions one bearer token may hold open at once (beyond → 429), so one token
    /// cannot fill --max-sessions. Default: a quarter of --max-sessions, rounded up.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_SESSIONS_PER_TOKEN",
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)
    )]
    pub max_sessions_per_token: Option<usize>,
    /// Most HTTP connections served at once; beyond, a request gets 503 (/healthz still
    /// answers).
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = 1024,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_536)
    )]
    pub max_connections: usize,
    /// Most HTTP connections one client address (an IPv6 client: its /64) may hold open,
    /// counted before authentication; beyond → 429.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_CONNECTIONS_PER_ADDRESS",
        value_name = "N",
        default_value_t = 256,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_536)
    )]
    pub max_connections_per_address: usize,
    /// Most requests one bearer token may have in flight at once (each holds a connection,
    /// an event stream for as long as it is open); beyond → 429.
    #[arg(
        long,
        env = "ARCANE_MCP_MAX_CONNECTIONS_PER_TOKEN",
        value_name = "N",
        default_value_t = 256,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_536)
    )]
    pub max_connections_per_token: usize,
    /// Seconds a client may take to send a whole request body after its head (slower → 408
    /// and the connection is closed).
    #[arg(
        long,
        env = "ARCANE_MCP_REQUEST_BODY_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 30,
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=3600)
    )]
    pub request_body_timeout: u64,
    /// Whose Arcane key a call over HTTP uses: the server's (ARCANE_API_KEY), the caller's
    /// (X-Arcane-API-Key header, so Arcane's own roles apply), or the caller's when sent.
    #[arg(long, env = "ARCANE_MCP_ARCANE_KEY_SOURCE", value_enum, default_value_t = KeySource::Server)]
    pub arcane_key_source: KeySource,
    /// The address clients reach this server by (e.g. https://mcp.example.com), for OAuth:
    /// the MCP endpoint's resource URI is {public-url}/mcp. https:// unless on loopback.
    #[arg(long, env = "ARCANE_MCP_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
    /// Accept OAuth access tokens of this OpenID Connect / OAuth issuer (e.g.
    /// https://auth.example.com/application/o/arcane/), beside any --auth-token; `self`: be
    /// the authorization server, people signing in with their Arcane account (docs/oauth.md).
    #[arg(long, env = "ARCANE_MCP_OAUTH_ISSUER", value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// The audience an access token must name. Default: {public-url}/mcp.
    #[arg(long, env = "ARCANE_MCP_OAUTH_AUDIENCE", value_name = "URI")]
    pub oauth_audience: Option<String>,
    /// RFC 7662 introspection endpoint, for identity providers whose access tokens are opaque
    /// (JWTs are always validated locally).
    #[arg(long, env = "ARCANE_MCP_OAUTH_INTROSPECTION_URL", value_name = "URL")]
    pub oauth_introspection_url: Option<String>,
    /// The client ID this server introspects tokens as (client_secret_basic).
    #[arg(
        long,
        env = "ARCANE_MCP_OAUTH_INTROSPECTION_CLIENT_ID",
        value_name = "ID"
    )]
    pub oauth_introspection_client_id: Option<String>,
    /// File holding that client's secret.
    #[arg(
        long,
        env = "ARCANE_MCP_OAUTH_INTROSPECTION_SECRET_FILE",
        value_name = "PATH"
    )]
    pub oauth_introspection_secret_file: Option<PathBuf>,
    /// YAML file mapping token holders (by claim: sub, email, groups…) to Arcane API keys and
    /// narrowing (schemas/oauth-users.schema.json); read again when it changes. Without it,
    /// OAuth callers run with the server's key.
    #[arg(long, env = "ARCANE_MCP_OAUTH_USERS", value_name = "FILE")]
    pub oauth_users: Option<PathBuf>,
    /// File of the 32-byte key (64 hex digits or base64: `openssl rand -hex 32`) that seals
    /// the confirmations' request states and, with --oauth-issuer self, registrations, codes
    /// and tokens; replicas sharing it take over each other's round trips and sign-ins.
    /// Without it a random key is made at start and both end with the process.
    #[arg(long, env = "ARCANE_MCP_STATE_KEY_FILE", value_name = "PATH")]
    pub state_key_file: Option<PathBuf>,
}

/// `arcane-mcp catalog`.
#[derive(Debug, Clone, Args)]
pub struct CatalogArgs {
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
    /// Report overlay entries that match nothing as warnings instead of failing.
    #[arg(long)]
    pub allow_unmatched: bool,
}

/// Longest token name.
const MAX_NAME: usize = 64;

/// Splits one token entry into its name and the token: `alice=TOKEN` is named when what comes
/// before the first `=` is a name (a letter, then letters, digits, `.`, `_`, `-` or `@`, at most
/// 64) and what follows is more than `=` padding. Anything else is a plain token, so existing
/// token files keep working, base64 tokens with their `=` padding included; a token that itself
/// looks like `name=…` is written with a name in front (`ci=name=…`).
pub fn split_named(entry: &str) -> (Option<&str>, &str) {
    let entry = entry.trim();
    if let Some((name, token)) = entry.split_once('=') {
        let name = name.trim();
        let mut chars = name.chars();
        let named = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
            && name.len() <= MAX_NAME
            && !token.trim().trim_matches('=').is_empty();
        if named {
            return (Some(name), token.trim());
        }
    }
    (None, entry)
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
