//! The operator's commands besides `serve`, one file each: `call`, `find`, `demo`, `check`,
//! `catalog`, `audit-tokens`. `call` and `find` go through the code an MCP client reaches (a
//! call is handed to [`ArcaneServer::call`](crate::mcp::handler::ArcaneServer::call) as the
//! active surface's `tools/call`; a search is parsed as an `arcane_find_action` call), so what
//! is printed is the text a model gets. This module holds what they share: the search
//! snapshot, printing a result, and writing to stdout.

pub mod audit_tokens;
pub mod call;
pub mod catalog;
pub mod check;
pub mod demo;
pub mod find;
pub mod serve;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Result, bail};
use rmcp::model::{CallToolResult, ContentBlock};

use crate::app;
use crate::config::{Cli, Command, ServeArgs};
use crate::load::snapshot::Snapshot;
use crate::load::sources::Sources;
use crate::surface::Surface;

/// Runs the command the command line names (`serve` when it names none).
pub fn run(cli: &Cli) -> Result<ExitCode> {
    let settings = &cli.serve;
    match &cli.command {
        Some(Command::Catalog(args)) => catalog::run(settings, args),
        Some(Command::AuditTokens(args)) => audit_tokens::run(settings, args),
        Some(Command::Check(args)) => check::run(settings, args),
        Some(Command::Demo(args)) => demo::run(settings, args),
        Some(Command::Call(args)) => call::run(settings, args),
        Some(Command::Find(args)) => find::run(settings, args),
        Some(Command::Serve) | None => serve::run(settings.clone()).map(|()| ExitCode::SUCCESS),
    }
}

/// Builds the snapshot a search needs (no Arcane connection).
pub(crate) fn snapshot(args: &ServeArgs, sources: &Sources) -> Result<Snapshot> {
    // The find tool exists on the dynamic surface; results name actions as it does.
    let cache = crate::load::cache::CatalogCache::from_args(args);
    let (catalog, _) = crate::load::cache::load_or_build(sources, cache.as_ref())?;
    Snapshot::build(catalog, Surface::Dynamic, app::policy(args))
}

/// Prints a result as the model gets it: its text blocks (or structuredContent with `json`)
/// on stdout; other blocks are named on stderr. Exit status 1 when the result is an error.
pub fn print(result: &CallToolResult, json: bool) -> Result<ExitCode> {
    let mut text = String::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&t.text);
            }
            ContentBlock::ResourceLink(r) => {
                eprintln!("(the result also links the resource {})", r.uri)
            }
            ContentBlock::Resource(_) => {
                eprintln!("(the result also embeds a resource for the user)")
            }
            _ => eprintln!("(the result also carries a media block)"),
        }
    }
    let out = match (&result.structured_content, json) {
        (Some(sc), true) => serde_json::to_string_pretty(sc)?,
        _ => text,
    };
    write_stdout(&format!("{}\n", out.trim_end_matches('\n')))?;
    Ok(if result.is_error == Some(true) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes what a command prints to stdout: every subcommand's output goes through here. A
/// reader that stopped early (`arcane-mcp catalog --json | head`) closes the pipe; that is not
/// a failure of the command, which ends quietly (`println!` would panic on it).
pub fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => bail!("writing to stdout: {e}"),
        _ => Ok(()),
    }
}
