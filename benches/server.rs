//! Server benchmarks, each beside the floor it is judged against (measured in the same run):
//!
//! - `floor/version`: spawn `arcane-mcp --version` and wait (the process floor);
//! - `server/startup_to_first_tools_list`: spawn → `initialize` answered → first `tools/list`;
//! - `tools_list/<surface>`: one `tools/list` round trip over stdio, and `tools_list_encode/…`
//!   the server's share of it (the clone and JSON encoding rmcp does per request);
//! - `list_containers/raw_http` vs `through_mcp_server`: the per-call overhead;
//! - `under_load/ping_during_burst`: a `ping` sent while 2,000 `container.list` calls are in
//!   flight (fairness), with the burst's throughput and the server's peak RSS printed.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use arcane_mcp::config::Surface;
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;

/// The one finder of Arcane's documents, shared with the integration tests.
#[path = "../tests/fixtures/mod.rs"]
mod fixtures;

fn spec() -> PathBuf {
    fixtures::spec_v2()
}

fn command(base: &str, key: &str, surface: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("ARCANE_MCP_LOG", "error")
        .args([
            "--arcane-url",
            base,
            "--api-key",
            key,
            "--tool-surface",
            surface,
        ])
        .arg("--spec")
        .arg(spec());
    cmd
}

type Client = RunningService<RoleClient, ()>;

async fn connect(base: &str, key: &str, surface: &str) -> (Client, Option<u32>) {
    let (t, _) = TokioChildProcess::builder(command(base, key, surface))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = t.id();
    (().serve(t).await.unwrap(), pid)
}

/// Peak and current resident memory of a process, in MB (Linux).
fn rss_mb(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb / 1024.0)
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

fn list_call() -> CallToolRequestParams {
    let mut args = serde_json::Map::new();
    args.insert("action".into(), "container.list".into());
    CallToolRequestParams::new("arcane_execute_action").with_arguments(args)
}

fn benches(c: &mut Criterion) {
    arcane_mcp::http::ensure_crypto_provider();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt
        .block_on(arcane_sim::start(arcane_sim::SimConfig::new(spec())))
        .unwrap();
    let base = sim.base_url();
    let key = sim.api_key().to_string();

    let mut g = c.benchmark_group("floor");
    g.sample_size(20);
    g.bench_function("version", |b| {
        b.iter(|| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
                .arg("--version")
                .output()
                .unwrap();
            assert!(out.status.success());
        })
    });
    g.finish();

    let mut g = c.benchmark_group("server");
    g.sample_size(10);
    g.bench_function("startup_to_first_tools_list", |b| {
        b.iter(|| {
            rt.block_on(async {
                let (client, _) = connect(&base, &key, "dynamic").await;
                let tools = client.list_all_tools().await.unwrap();
                assert_eq!(tools.len(), 2);
                client.cancel().await.ok();
            })
        })
    });
    g.finish();

    let mut g = c.benchmark_group("tools_list");
    g.sample_size(20);
    for surface in ["dynamic", "meta", "individual"] {
        let (client, _) = rt.block_on(connect(&base, &key, surface));
        g.bench_function(surface, |b| {
            b.iter(|| rt.block_on(client.list_tools(None)).unwrap())
        });
        rt.block_on(client.cancel()).ok();
    }
    g.finish();

    // The server's share of a tools/list: rmcp takes an owned result and encodes it per request.
    let sources = arcane_mcp::config::CatalogSourceArgs {
        spec: Some(spec()),
        overrides: None,
        catalog_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("catalog"),
        spec_cache: None,
    }
    .sources(None);
    let mut g = c.benchmark_group("tools_list_encode");
    for surface in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        let snap = arcane_mcp::snapshot::Snapshot::build(
            sources.build().unwrap(),
            surface,
            Default::default(),
        )
        .unwrap();
        g.bench_function(surface.as_str(), |b| {
            b.iter(|| {
                let r = rmcp::model::ListToolsResult::with_all_items(snap.tools.clone());
                serde_json::to_vec(&r).unwrap()
            })
        });
    }
    g.finish();

    let http = reqwest::Client::new();
    let url = format!("{base}/api/environments/0/containers?sort=name");
    let (client, pid) = rt.block_on(connect(&base, &key, "dynamic"));
    let mut g = c.benchmark_group("list_containers");
    g.bench_function("raw_http", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = http
                    .get(&url)
                    .header("X-API-Key", &key)
                    .send()
                    .await
                    .unwrap();
                r.bytes().await.unwrap()
            })
        })
    });
    g.bench_function("through_mcp_server", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = client.call_tool(list_call()).await.unwrap();
                assert_ne!(r.is_error, Some(true));
            })
        })
    });
    g.finish();

    // Fairness: a ping sent while a burst of 2,000 calls is in flight.
    const BURST: usize = 2000;
    let mut g = c.benchmark_group("under_load");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("ping_during_burst", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let peer = client.peer().clone();
                    let started = Instant::now();
                    let burst: Vec<_> = (0..BURST)
                        .map(|_| {
                            let peer = peer.clone();
                            tokio::spawn(async move { peer.call_tool(list_call()).await })
                        })
                        .collect();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let t = Instant::now();
                    peer.send_request(ClientRequest::PingRequest(PingRequest::default()))
                        .await
                        .unwrap();
                    total += t.elapsed();
                    for h in burst {
                        h.await.unwrap().unwrap();
                    }
                    let secs = started.elapsed().as_secs_f64();
                    eprintln!(
                        "burst of {BURST} container.list: {:.0} calls/s; server RSS (peak, now) MB: {:?}",
                        BURST as f64 / secs,
                        pid.and_then(rss_mb)
                    );
                }
                total
            })
        })
    });
    g.finish();
    if let Some(pid) = pid {
        std::thread::sleep(Duration::from_secs(2));
        eprintln!(
            "server RSS 2 s after the bursts (peak, now) MB: {:?}",
            rss_mb(pid)
        );
    }

    rt.block_on(async {
        client.cancel().await.ok();
        sim.shutdown().await;
    });
}

criterion_group!(server, benches);
criterion_main!(server);
