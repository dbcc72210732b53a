//! The chaos suite from the command line (docs/measurements.md#chaos): runs
//! [`suite::run`] and prints its summary; exits 1 when anything it asserts failed.
//!
//! ```sh
//! cargo build --release --bin arcane-mcp --example chaos
//! target/release/examples/chaos --duration 1800 --round 60 --http-sessions 24 --stdio-sessions 4
//! ```
//!
//! The server binary is `--server PATH`, by default the `arcane-mcp` beside this example's own
//! build directory (`target/<profile>/arcane-mcp`).

mod suite;

use std::path::PathBuf;
use std::time::Duration;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe()?;
    // target/<profile>/examples/chaos → target/<profile>/arcane-mcp
    let beside = exe
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("arcane-mcp"))
        .unwrap_or_default();
    let mut cfg = suite::Config::short(beside, arcane_test_support::spec_v2(), repo);
    cfg.verbose = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--duration" => cfg.duration = Duration::from_secs(value()?.parse()?),
            "--round" => cfg.round = Duration::from_secs(value()?.parse()?),
            "--http-sessions" => cfg.http_sessions = value()?.parse()?,
            "--stdio-sessions" => cfg.stdio_sessions = value()?.parse()?,
            "--seed" => cfg.seed = value()?.parse()?,
            "--server-timeout" => cfg.server_timeout_s = value()?.parse()?,
            "--call-timeout" => cfg.call_timeout = Duration::from_secs(value()?.parse()?),
            "--http-rss-bound-mb" => cfg.http_rss_bound_mb = value()?.parse()?,
            "--stdio-rss-bound-mb" => cfg.stdio_rss_bound_mb = value()?.parse()?,
            "--server" => cfg.server_bin = PathBuf::from(value()?),
            "--spec" => cfg.spec = PathBuf::from(value()?),
            "--quiet" => cfg.verbose = false,
            "-h" | "--help" => {
                println!(
                    "usage: chaos [--duration S] [--round S] [--http-sessions N] [--stdio-sessions N] [--seed N]\n             [--server-timeout S] [--call-timeout S] [--http-rss-bound-mb N] [--stdio-rss-bound-mb N]\n             [--server PATH] [--spec PATH] [--quiet]"
                );
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?} (see --help)"),
        }
    }
    let report = suite::run(cfg).await?;
    print!("{}", report.summary());
    if !report.violations().is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
