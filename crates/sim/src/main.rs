//! `arcane-sim`: run the Arcane simulator as a standalone server.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// A faithful Arcane API simulator (test equipment and demo backend for arcane-mcp).
#[derive(Debug, Parser)]
#[command(name = "arcane-sim", version)]
struct Cli {
    /// Arcane OpenAPI document (JSON or YAML) to serve and answer. Default: Arcane 2.8.0's
    /// document, built into this binary.
    #[arg(long, env = "ARCANE_SIM_SPEC")]
    spec: Option<PathBuf>,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0", env = "ARCANE_SIM_LISTEN")]
    listen: SocketAddr,
    /// API key accepted in `X-API-Key` or `Authorization: Bearer`.
    #[arg(long, default_value = arcane_sim::DEFAULT_API_KEY, env = "ARCANE_SIM_API_KEY")]
    api_key: String,
    /// Another user, `NAME=KEY`, `NAME=KEY:ROLE` (role `admin` or `viewer`) or
    /// `NAME=KEY:ROLE:PASSWORD` (the password signs in at `POST /api/auth/login`); repeatable.
    /// The request log names the user of each request (never its key).
    #[arg(long = "user", env = "ARCANE_SIM_USERS", value_delimiter = ',')]
    users: Vec<arcane_sim::SimUser>,
    /// State file (JSON or YAML); the built-in demo state otherwise.
    #[arg(long, env = "ARCANE_SIM_STATE")]
    state: Option<PathBuf>,
    /// Which Arcane to imitate where releases differ: `2.8` (the release) or `main`.
    #[arg(long, default_value = "2.8", env = "ARCANE_SIM_VERSION")]
    arcane_version: arcane_sim::ArcaneVersion,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let config = arcane_sim::SimConfig {
        spec_path: cli.spec,
        listen: cli.listen,
        api_key: cli.api_key,
        users: cli.users,
        state_path: cli.state,
        arcane_version: cli.arcane_version,
    };
    // The handlers are installed before the ready line, so a signal sent right after it stops
    // the server cleanly instead of killing the process.
    let stop = stop_signal();
    let sim = match arcane_sim::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("arcane-sim: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("listening on {}", sim.base_url());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    stop.await;
    tracing::info!("shutting down");
    sim.shutdown().await;
    std::process::ExitCode::SUCCESS
}

/// A future that completes on SIGTERM or SIGINT; the handlers are registered when it is
/// created, not when it is first polled.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut t), Some(mut i)) => {
                    tokio::select! {
                        _ = t.recv() => {},
                        _ = i.recv() => {},
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
