use std::process::ExitCode;

use anyhow::Result;
use arcane_mcp::config::{Cli, Command};
use arcane_mcp::inspect;
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let log = match &cli.command {
        Some(Command::Serve(s)) => s.log_level.clone(),
        _ => cli.serve.log_level.clone(),
    };
    init_logging(&log);
    let result = match cli.command {
        Some(Command::Catalog(args)) => run_catalog(&args),
        Some(Command::AuditTokens(args)) => run_audit(&args),
        Some(Command::Check(args)) => run_check(&args),
        Some(Command::Serve(args)) => arcane_mcp::serve(*args),
        None => arcane_mcp::serve(cli.serve),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arcane-mcp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

fn run_catalog(args: &arcane_mcp::config::CatalogArgs) -> Result<()> {
    let sources = args.source.sources(args.arcane_url.as_deref());
    if let Some(old) = &args.diff {
        print!(
            "{}",
            inspect::upgrade_preview(&sources, old, args.arcane_url.as_deref(), args.json)?
        );
        return Ok(());
    }
    let cat = sources.build()?;
    if let Some(name) = &args.show {
        println!("{}", inspect::show(&cat, name)?);
    } else if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&inspect::catalog_json(&cat))?
        );
    } else {
        print!("{}", inspect::summary(&cat));
    }
    Ok(())
}

fn run_audit(args: &arcane_mcp::config::AuditArgs) -> Result<()> {
    let cat = args.source.sources(args.arcane_url.as_deref()).build()?;
    arcane_mcp::audit::run(
        &cat,
        args.baseline.as_deref(),
        args.write_baseline,
        args.json,
    )
}

fn run_check(args: &arcane_mcp::config::CheckArgs) -> Result<()> {
    let report = arcane_mcp::check::check(&args.source.sources(args.arcane_url.as_deref()));
    print!("{}", report.text(args.allow_unmatched));
    if report.failed(args.allow_unmatched) {
        anyhow::bail!("check failed; fix the lines above");
    }
    Ok(())
}
