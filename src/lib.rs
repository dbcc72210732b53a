//! arcane-mcp: an MCP server for Arcane, built as a data-driven interpreter.
//!
//! The data's path, one module per stage (see ARCHITECTURE.md): [`spec`] finds Arcane's
//! document → the `arcane-catalog` crate parses it and builds the catalog, its search index and
//! policy → [`surface`] → the `arcane-engine` crate (a typed outcome) → [`present`] (rendering
//! via the `arcane-markdown` crate, [`output_schema`] fitting, next steps, links) → [`server`]
//! (the MCP glue; [`resources`] read through the engine too) → [`reload`].
//!
//! Public: what the binary, the tests and the benches use — the settings ([`config`]), the
//! wiring ([`app`], [`connection`], [`serve`]), the subcommands ([`cli`], [`check`],
//! [`inspect`], [`audit`], [`logging`]), the stages tests drive on their own and the MCP glue
//! ([`server`], which [`app::App`] hands out). What only the glue calls (`serve_http`,
//! `confirm`, `audit_log`) is private. Nothing of the workspace's other crates is
//! re-exported: code names `arcane_catalog::`, `arcane_markdown::` and `arcane_engine::`.

pub mod app;
pub mod audit;
pub mod catalog_cache;
pub mod check;
pub mod cli;
pub mod config;
pub mod find;
pub mod flat;
pub mod inspect;
pub mod jsonrpc;
pub mod logging;
pub mod output_schema;
pub mod pacing;
pub mod present;
pub mod reload;
pub mod resources;
pub mod server;
pub mod snapshot;
pub mod spec;
pub mod surface;

mod audit_log;
pub mod confirm;
mod serve_http;

use anyhow::{Result, anyhow, bail};

use arcane_engine::Auth;

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
    let auth = match (nonempty(&args.api_key), nonempty(&args.token)) {
        (Some(k), _) => Auth::ApiKey(k),
        (None, Some(t)) => Auth::Bearer(t),
        // Over HTTP with callers' own keys only, the server needs none of its own: no call
        // runs without the caller's key (the HTTP gate refuses requests lacking one).
        (None, None)
            if args.http.transport == config::Transport::Http
                && args.http.arcane_key_source == config::KeySource::Client =>
        {
            Auth::ApiKey(String::new())
        }
        (None, None) => bail!(
            // Worded so that no `name: value` pair of a secret's name appears: the fatal error
            // is masked on its way out (main.rs), and `credential: set` read as one.
            "no Arcane credential was given. Set ARCANE_API_KEY (--api-key; create one in \
             Arcane under Settings → API Keys) or ARCANE_TOKEN (--token)"
        ),
    };
    Ok((base, auth))
}

/// Runs the MCP server over stdio until the client disconnects, or over HTTP until stopped
/// (Ctrl-C or SIGTERM).
pub fn serve(args: config::ServeArgs) -> Result<()> {
    let (base_url, auth) = connection(&args)?;
    // The HTTP settings are checked before anything is built or fetched.
    let http = match args.http.transport {
        config::Transport::Http => Some(serve_http::Settings::from_args(&args.http)?),
        config::Transport::Stdio => None,
    };
    let sources = args.source.sources(Some(&base_url));
    // Built before the runtime starts: fetching the spec from Arcane blocks.
    let app = app::App::build(&args, sources, base_url, auth)?;
    match http {
        Some(settings) => app::runtime()?.block_on(serve_http::serve(app, settings)),
        None => app::runtime()?.block_on(app.serve_stdio()),
    }
}
