use std::process::ExitCode;

use anyhow::Result;
use arcane_mcp::config::{Cli, Command, DemoCommand, ServeArgs};
use arcane_mcp::{cli, inspect, logging};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings: &ServeArgs = match &cli.command {
        Some(Command::Serve(s)) => s,
        Some(Command::Call(c)) => &c.serve,
        Some(Command::Find(f)) => &f.serve,
        Some(Command::Demo(d)) => match &d.command {
            Some(DemoCommand::Call(c)) => &c.serve,
            Some(DemoCommand::Find(f)) => &f.serve,
            None => &d.serve,
        },
        _ => &cli.serve,
    };
    logging::init(&settings.log_level, settings.log_format);
    let result = match cli.command {
        Some(Command::Catalog(args)) => run_catalog(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::AuditTokens(args)) => run_audit(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Check(args)) => Ok(run_check(&args)),
        Some(Command::Serve(args)) => arcane_mcp::serve(*args).map(|()| ExitCode::SUCCESS),
        Some(Command::Demo(args)) => cli::run_demo(&args),
        Some(Command::Call(args)) => cli::run_call(&args),
        Some(Command::Find(args)) => cli::run_find(&args),
        None => arcane_mcp::serve(cli.serve).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // The chain may quote ARCANE_URL (a failed spec fetch does): never its password.
            let text = format!("{e:#}");
            eprintln!("arcane-mcp: {}", arcane_engine::mask_text(&text));
            ExitCode::from(2)
        }
    }
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
    if args.results {
        let mut serve = Cli::parse_from(["arcane-mcp"]).serve;
        serve.source = args.source.clone();
        return arcane_mcp::audit::run_results(
            &serve,
            args.baseline.as_deref(),
            args.write_baseline,
            args.json,
        );
    }
    let cat = args.source.sources(args.arcane_url.as_deref()).build()?;
    arcane_mcp::audit::run(
        &cat,
        args.baseline.as_deref(),
        args.write_baseline,
        args.json,
    )
}

/// Exit status 1 when the check finds a problem (every problem is printed on stdout).
fn run_check(args: &arcane_mcp::config::CheckArgs) -> ExitCode {
    let report = arcane_mcp::check::check(&args.source.sources(args.arcane_url.as_deref()));
    print!("{}", report.text(args.allow_unmatched));
    if report.failed(args.allow_unmatched) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
