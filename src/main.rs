//! The `arcane-mcp` binary: parse the command line, start the logs, run the command, and print
//! a fatal error with its secrets masked.

use std::process::ExitCode;

use arcane_mcp::config::Cli;
use arcane_mcp::{cmd, logging};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = &cli.serve;
    logging::init(&settings.log_level, settings.log_format);
    match cmd::run(&cli) {
        Ok(code) => code,
        Err(e) => {
            // The chain may quote ARCANE_URL (a failed spec fetch does): never its password.
            eprintln!("arcane-mcp: {}", settings.mask_secrets(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}
