//! `arcane-mcp demo`: the server against a simulated Arcane in the same process (its own
//! built-in document unless one is named), and `demo call` / `demo find` against it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

// The simulator side's (`use super::*`), which only builds with the `demo` feature.
#[cfg(feature = "demo")]
use crate::app::{self, App};
#[cfg(feature = "demo")]
use crate::cmd::call::call;
use crate::cmd::find::find;
use crate::cmd::find::snapshot;
use crate::cmd::print::print;
use crate::config::{CallArgs, DemoArgs, DemoCommand, ServeArgs};
use crate::load::sources::Sources;

/// Where `demo` looks for Arcane's OpenAPI document when neither `--spec` nor
/// `ARCANE_MCP_SPEC` names one, before it serves the built-in one: the catalog directory, as
/// the server does (an operator who pinned a spec there gets the demo of that spec).
pub fn demo_spec_candidates(catalog_dir: &Path) -> Vec<PathBuf> {
    vec![
        catalog_dir.join("openapi.json"),
        catalog_dir.join("openapi.yaml"),
    ]
}

/// The document `demo` serves, to the MCP side and to its simulator alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoSpec {
    /// `--spec` / `ARCANE_MCP_SPEC`, or a candidate of [`demo_spec_candidates`] that exists.
    File(PathBuf),
    /// Arcane 2.8.0's document, built into the binary (`arcane_sim::builtin_spec`): the demo
    /// needs no file, so it runs from any directory.
    Builtin,
}

impl std::fmt::Display for DemoSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoSpec::File(p) => write!(f, "{}", p.display()),
            DemoSpec::Builtin => f.write_str(simulator::BUILTIN_NAME),
        }
    }
}

/// The spec `demo` serves: `--spec` / `ARCANE_MCP_SPEC`, else the first candidate that exists,
/// else the built-in document.
pub fn demo_spec(args: &ServeArgs) -> DemoSpec {
    if let Some(p) = &args.source.spec {
        return DemoSpec::File(p.clone());
    }
    demo_spec_candidates(&args.source.catalog_dir)
        .into_iter()
        .find(|p| p.is_file())
        .map_or(DemoSpec::Builtin, DemoSpec::File)
}

/// The catalog sources of `demo`: the resolved spec, never a fetch from Arcane.
fn demo_sources(args: &ServeArgs) -> Result<(DemoSpec, Sources)> {
    let spec = demo_spec(args);
    let mut source = args.source.clone();
    source.spec = match &spec {
        DemoSpec::File(p) => Some(p.clone()),
        DemoSpec::Builtin => None,
    };
    let mut sources = Sources::from_args(&source, None);
    if spec == DemoSpec::Builtin {
        sources.spec.builtin = Some(simulator::builtin()?);
    }
    Ok((spec, sources))
}

/// `arcane-mcp demo [call|find]`.
pub fn run(settings: &ServeArgs, args: &DemoArgs) -> Result<ExitCode> {
    match &args.command {
        Some(DemoCommand::Find(f)) => {
            let snap = snapshot(settings, &demo_sources(settings)?.1)?;
            print(&find(&snap, &f.words, f.limit), f.json)
        }
        Some(DemoCommand::Call(c)) => simulator::call(settings, c),
        None => simulator::serve(settings).map(|()| ExitCode::SUCCESS),
    }
}

/// The simulator side of `demo` (only in builds with the `demo` feature); public for the
/// token audit's `--results` (docs/measurements.md), which measures the demo world.
#[cfg(feature = "demo")]
pub mod simulator {
    use super::*;

    /// How the banner and logs name the built-in document.
    pub const BUILTIN_NAME: &str = arcane_sim::BUILTIN_SPEC_NAME;

    /// The built-in Arcane 2.8.0 document, as a catalog source.
    pub fn builtin() -> Result<crate::load::spec::Builtin> {
        Ok(crate::load::spec::Builtin {
            name: arcane_sim::BUILTIN_SPEC_NAME,
            identity: arcane_sim::BUILTIN_SPEC_DEFLATED,
            text: arcane_sim::builtin_spec,
        })
    }

    /// A simulator with its demo world on a free loopback port, with a key of this run.
    async fn start_sim(spec: &DemoSpec) -> Result<arcane_sim::RunningSim> {
        arcane_engine::ensure_crypto_provider();
        let mut config = match spec {
            DemoSpec::File(path) => arcane_sim::SimConfig::new(path),
            DemoSpec::Builtin => arcane_sim::SimConfig::builtin(),
        };
        config.api_key = demo_key();
        arcane_sim::start(config)
            .await
            .map_err(|e| anyhow::anyhow!("starting the demo simulator: {e:#}"))
    }

    /// A key only this process knows, so that other local programs cannot drive the demo.
    fn demo_key() -> String {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("demo-{:016x}", h.finish())
    }

    fn app_against(
        sim: &arcane_sim::RunningSim,
        args: &ServeArgs,
        sources: Sources,
    ) -> Result<App> {
        let auth = arcane_engine::Auth::ApiKey(sim.api_key().to_string());
        App::build(args, sources, sim.base_url(), auth)
    }

    /// The simulator with its demo world and an app against it, as `demo` serves them.
    pub fn start(
        serve: &ServeArgs,
        runtime: &tokio::runtime::Runtime,
    ) -> Result<(arcane_sim::RunningSim, App)> {
        let (spec, sources) = demo_sources(serve)?;
        let sim = runtime.block_on(start_sim(&spec))?;
        let app = app_against(&sim, serve, sources)?;
        Ok((sim, app))
    }

    pub fn call(settings: &ServeArgs, args: &CallArgs) -> Result<ExitCode> {
        let runtime = app::runtime()?;
        let (sim, app) = start(settings, &runtime)?;
        let result = runtime.block_on(super::call(&app, args));
        runtime.block_on(sim.shutdown());
        print(&result?, args.json)
    }

    pub fn serve(args: &ServeArgs) -> Result<()> {
        let (spec, sources) = demo_sources(args)?;
        let runtime = app::runtime()?;
        let sim = runtime.block_on(start_sim(&spec))?;
        let app = app_against(&sim, args, sources)?;
        banner(&app, &spec, args);
        let served = match args.http.transport {
            crate::config::Transport::Http => {
                crate::transport::http::Settings::from_args(&args.http, None).and_then(|settings| {
                    runtime.block_on(crate::transport::http::serve(app, settings))
                })
            }
            crate::config::Transport::Stdio => {
                runtime.block_on(crate::transport::stdio::serve(app))
            }
        };
        runtime.block_on(sim.shutdown());
        served
    }

    fn banner(app: &App, spec: &DemoSpec, args: &ServeArgs) {
        let (format, transport, listen) = (args.log_format, args.http.transport, args.http.listen);
        let snap = app.live.load();
        let what = format!(
            "DEMO: serving MCP on {} against a SIMULATED Arcane {} (in-process, a demo Docker \
             world in memory; nothing real is touched). Spec: {}; {} actions on the {} surface.",
            match transport {
                crate::config::Transport::Stdio => "stdio".to_string(),
                crate::config::Transport::Http => format!("http://{listen}/mcp"),
            },
            snap.catalog.arcane_version,
            spec,
            snap.catalog.actions.len(),
            snap.surface.as_str(),
        );
        match format {
            crate::logging::LogFormat::Json => tracing::info!(demo = true, "{what}"),
            crate::logging::LogFormat::Text => eprintln!(
                "arcane-mcp {what}\n  Add `arcane-mcp demo` to an MCP client as a stdio server, \
                 or try it in a terminal:\n    arcane-mcp demo call container.list\n    \
                 arcane-mcp demo find \"restart container\"\n  For a real Arcane, set ARCANE_URL \
                 and ARCANE_API_KEY and run arcane-mcp without `demo`."
            ),
        }
    }
}

#[cfg(not(feature = "demo"))]
mod simulator {
    use super::*;
    use anyhow::bail;

    const MISSING: &str = "this arcane-mcp was built without the `demo` feature (no simulator \
        inside); rebuild with default features, e.g. cargo install --path .";

    pub const BUILTIN_NAME: &str = "built-in Arcane document (not in this build)";

    /// Builds without the simulator carry no built-in document either (it lives in the
    /// simulator's crate): `demo find` needs `--spec` there.
    pub fn builtin() -> Result<crate::load::spec::Builtin> {
        bail!("{MISSING} — or pass --spec PATH (Arcane serves its document at /api/openapi.json)")
    }

    pub fn call(_: &ServeArgs, _: &CallArgs) -> Result<ExitCode> {
        bail!(MISSING)
    }

    pub fn serve(_: &ServeArgs) -> Result<()> {
        bail!(MISSING)
    }
}
