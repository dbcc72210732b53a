//! The `arcane-mcp` binary: parse the command line, start the logs, run the command, and print
//! a fatal error with its secrets masked.

use std::process::ExitCode;

use arcane_mcp::config::Cli;
use arcane_mcp::{cmd, logging, telemetry};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = &cli.serve;
    // The exporters, when an endpoint is configured, before the logs: their tracing layer is
    // part of the subscriber. They export on threads of their own, so they are made here,
    // before any runtime; dropped at the end, they send what is left.
    let (telemetry, layer) = match telemetry::init(settings.otel_endpoint.as_deref()) {
        Ok(Some((t, layer))) => (Some(t), Some(layer)),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("arcane-mcp: {}", settings.mask_secrets(&format!("{e:#}")));
            return ExitCode::from(2);
        }
    };
    logging::init(&settings.log_level, settings.log_format, layer);
    let code = run(&cli);
    drop(telemetry);
    code
}

fn run(cli: &Cli) -> ExitCode {
    let settings = &cli.serve;
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // The chain may quote ARCANE_URL (a failed spec fetch does): never its password.
            eprintln!("arcane-mcp: {}", settings.mask_secrets(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}
