//! `arcane-mcp serve` (the default command): the MCP server over stdio, or over Streamable
//! HTTP for a team.

use anyhow::Result;

use crate::app;
use crate::config;
use crate::load::sources::Sources;
use crate::transport;

/// Runs the MCP server over stdio until the client disconnects, or over HTTP until stopped
/// (Ctrl-C or SIGTERM).
pub fn run(args: config::ServeArgs) -> Result<()> {
    let stdio = args.http.transport == config::Transport::Stdio;
    start(&args).inspect_err(|e| {
        // A client that started the server is told why it did not start, as an answer it
        // can show, rather than a closed connection.
        if stdio {
            transport::stdio::refuse_first_request(&args.mask_secrets(&format!("{e:#}")));
        }
    })
}

fn start(args: &config::ServeArgs) -> Result<()> {
    let args = args.clone();
    let (base_url, auth) = app::connection(&args)?;
    // The HTTP settings are checked before anything is built or fetched.
    let http = match args.http.transport {
        config::Transport::Http => Some(transport::http::Settings::from_args(
            &args.http,
            args.ca_cert.as_deref(),
        )?),
        config::Transport::Stdio => None,
    };
    let sources = Sources::from_args(&args.source, Some(&base_url));
    // Built before the runtime starts: fetching the spec from Arcane blocks.
    let app = app::App::build(&args, sources, base_url, auth)?;
    match http {
        Some(settings) => app::runtime()?.block_on(transport::http::serve(app, settings)),
        None => app::runtime()?.block_on(transport::stdio::serve(app)),
    }
}
