//! The operator's commands besides `serve`, one file each: `call`, `find`, `demo`, `check`,
//! `catalog`, `history` (with `undo`). `call` and `find` go through the code an MCP client reaches (a call is handed to
//! [`ArcaneServer::call`](crate::mcp::handler::ArcaneServer::call) as the active surface's
//! `tools/call`; a search is parsed as an `arcane_find_action` call), so what is printed is the
//! text a model gets. What they print goes through `print.rs`.

pub mod call;
pub mod catalog;
pub mod check;
pub mod demo;
pub mod find;
pub mod history;
pub mod print;
pub mod serve;

use std::process::ExitCode;

use anyhow::Result;

use crate::config::{Cli, Command};

/// Runs the command the command line names (`serve` when it names none).
pub fn run(cli: &Cli) -> Result<ExitCode> {
    let settings = &cli.serve;
    match &cli.command {
        Some(Command::Catalog(args)) => catalog::run(settings, args),
        Some(Command::Check(args)) => check::run(settings, args),
        Some(Command::Demo(args)) => demo::run(settings, args),
        Some(Command::Call(args)) => call::run(settings, args),
        Some(Command::Find(args)) => find::run(settings, args),
        Some(Command::History(args)) => history::list(settings, args),
        Some(Command::Undo(args)) => history::undo(settings, args),
        Some(Command::Serve) | None => serve::run(settings.clone()).map(|()| ExitCode::SUCCESS),
    }
}
