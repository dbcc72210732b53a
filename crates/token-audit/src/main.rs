//! The `arcane-token-audit` binary: parse the command line, start the logs, run, and print a
//! fatal error with the settings' secrets masked (ARCANE_URL may carry a password).

use std::process::ExitCode;

use clap::Parser;

use arcane_token_audit::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let serve = match cli.settings() {
        Ok(serve) => serve,
        Err(e) => {
            eprintln!("arcane-token-audit: {e:#}");
            return ExitCode::from(2);
        }
    };
    arcane_mcp::logging::init(&serve.log_level, serve.log_format, None);
    match run(&cli, &serve) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "arcane-token-audit: {}",
                serve.mask_secrets(&format!("{e:#}"))
            );
            ExitCode::from(2)
        }
    }
}
