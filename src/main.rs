use std::process::ExitCode;

use anyhow::Result;
use arcane_mcp::config::{Cli, Command, ServeArgs};
use arcane_mcp::cmd::{self as cli, catalog as inspect};
use arcane_mcp::logging;
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = &cli.serve;
    logging::init(&settings.log_level, settings.log_format);
    let result = match &cli.command {
        Some(Command::Catalog(args)) => run_catalog(settings, args).map(|()| ExitCode::SUCCESS),
        Some(Command::AuditTokens(args)) => run_audit(settings, args).map(|()| ExitCode::SUCCESS),
        Some(Command::Check(args)) => run_check(settings, args),
        Some(Command::Demo(args)) => cli::run_demo(settings, args),
        Some(Command::Call(args)) => cli::run_call(settings, args),
        Some(Command::Find(args)) => cli::run_find(settings, args),
        Some(Command::Serve) | None => {
            arcane_mcp::serve(settings.clone()).map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // The chain may quote ARCANE_URL (a failed spec fetch does): never its password.
            eprintln!("arcane-mcp: {}", settings.mask_secrets(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

fn run_catalog(settings: &ServeArgs, args: &arcane_mcp::config::CatalogArgs) -> Result<()> {
    let url = settings.spec_url()?;
    let sources = settings.source.sources(url.as_deref());
    if let Some(old) = &args.diff {
        return cli::write_stdout(&inspect::upgrade_preview(
            &sources,
            old,
            url.as_deref(),
            args.json,
        )?);
    }
    let cat = sources.build()?;
    let text = if let Some(name) = &args.show {
        inspect::show(&cat, name)? + "\n"
    } else if args.json {
        serde_json::to_string_pretty(&inspect::catalog_json(&cat))? + "\n"
    } else {
        inspect::summary(&cat)
    };
    cli::write_stdout(&text)
}

fn run_audit(settings: &ServeArgs, args: &arcane_mcp::config::AuditArgs) -> Result<()> {
    if args.results {
        return arcane_mcp::cmd::audit_tokens::run_results(
            settings,
            args.baseline.as_deref(),
            args.write_baseline,
            args.json,
        );
    }
    let url = settings.spec_url()?;
    let cat = settings.source.sources(url.as_deref()).build()?;
    arcane_mcp::cmd::audit_tokens::run(
        &cat,
        args.baseline.as_deref(),
        args.write_baseline,
        args.json,
    )
}

/// Exit status 1 when the check finds a problem (every problem is printed on stdout).
fn run_check(settings: &ServeArgs, args: &arcane_mcp::config::CheckArgs) -> Result<ExitCode> {
    let url = settings.spec_url()?;
    let report = arcane_mcp::cmd::check::check(&settings.source.sources(url.as_deref()));
    cli::write_stdout(&report.text(args.allow_unmatched))?;
    Ok(if report.failed(args.allow_unmatched) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
