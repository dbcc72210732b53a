//! The command line of `arcane-token-audit`: measure, print, then write or check the baseline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, FromArgMatches};

use arcane_mcp::cmd::demo::{DemoSpec, demo_spec};
use arcane_mcp::config::{CatalogSourceArgs, ServeArgs};
use arcane_mcp::load::sources::Sources;

use crate::baseline;
use crate::definitions::{drift, measure, table};
use crate::results::{measure_results, results_drift, results_table};

/// arcane-token-audit: what arcane-mcp's tool definitions cost a model, per surface, in bytes
/// and o200k tokens (or, with --results, what its main read results cost against their JSON).
///
/// A developer tool of the arcane-mcp repository (`cargo run -p arcane-token-audit -- …`);
/// without --spec, a catalog/openapi.json or ARCANE_URL it measures Arcane 2.8.0's document,
/// the one `arcane-mcp demo` serves.
#[derive(Debug, clap::Parser)]
#[command(name = "arcane-token-audit", version)]
pub struct Cli {
    /// Baseline file to compare with; exit non-zero when a figure drifts more than 15%.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
    /// Write the measured figures to the baseline file instead of comparing.
    #[arg(long)]
    pub write_baseline: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Measure results instead of tool definitions: the text and structuredContent tokens of
    /// the main read actions on the demo world (an in-process simulator of the spec).
    #[arg(long)]
    pub results: bool,
    /// Arcane base URL to fetch the spec from, when no file is found.
    #[arg(long, env = "ARCANE_URL", value_name = "URL")]
    pub arcane_url: Option<String>,
    /// Log filter (stderr).
    #[arg(
        long,
        env = "ARCANE_MCP_LOG",
        value_name = "FILTER",
        default_value = "info"
    )]
    pub log_level: String,
    #[command(flatten, next_help_heading = "Catalog")]
    pub source: CatalogSourceArgs,
}

impl Cli {
    /// The server's settings these stand for: the environment's and defaults (as `arcane-mcp
    /// demo` reads them), with this command line's sources, URL and logs.
    pub fn settings(&self) -> Result<ServeArgs> {
        let cmd = ServeArgs::augment_args(clap::Command::new("arcane-token-audit"));
        let mut serve =
            ServeArgs::from_arg_matches(&cmd.try_get_matches_from(["arcane-token-audit"])?)?;
        serve.source = self.source.clone();
        serve.arcane_url = self.arcane_url.clone();
        serve.log_level = self.log_level.clone();
        Ok(serve)
    }
}

/// Measures what the command line asks, prints it, then writes or checks the baseline.
pub fn run(cli: &Cli, serve: &ServeArgs) -> Result<ExitCode> {
    let baseline = cli.baseline.as_deref();
    if cli.results {
        let audit = measure_results(serve)?;
        print(&audit, cli.json, results_table)?;
        baseline::check(
            &audit,
            baseline,
            cli.write_baseline,
            "result sizes",
            results_drift,
        )?;
    } else {
        let url = serve.spec_url()?;
        let mut sources = Sources::from_args(&serve.source, url.as_deref());
        if url.is_none() && demo_spec(serve) == DemoSpec::Builtin {
            // A clone has neither a spec file nor an Arcane: the document `demo` serves is the
            // one the README's figures are of.
            sources.spec.builtin = Some(arcane_mcp::cmd::demo::simulator::builtin()?);
        }
        let audit = measure(&sources.build()?)?;
        print(&audit, cli.json, table)?;
        baseline::check(
            &audit,
            baseline,
            cli.write_baseline,
            "tool-definition sizes",
            drift,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The figures as JSON or as a table; a reader that closed the pipe ends the command quietly.
fn print<T: serde::Serialize>(figures: &T, json: bool, table: fn(&T) -> String) -> Result<()> {
    arcane_mcp::cmd::print::write_stdout(&if json {
        serde_json::to_string_pretty(figures)? + "\n"
    } else {
        table(figures)
    })
}
