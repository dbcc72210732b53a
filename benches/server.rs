//! Server benchmarks: startup to the first tools/list answer, and the per-call overhead of the
//! server over a raw HTTP request to the simulator (same list call both ways).

use std::path::PathBuf;
use std::process::Stdio;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

fn spec() -> PathBuf {
    std::env::var_os("ARCANE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/arcane"))
        .join("openapi-v2.8.0.json")
}

fn command(base: &str, key: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("ARCANE_MCP_LOG", "error")
        .args(["--arcane-url", base, "--api-key", key, "--spec"])
        .arg(spec());
    cmd
}

fn benches(c: &mut Criterion) {
    arcane_mcp::http::ensure_crypto_provider();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt
        .block_on(arcane_sim::start(arcane_sim::SimConfig::new(spec())))
        .unwrap();
    let base = sim.base_url();
    let key = sim.api_key().to_string();

    let mut g = c.benchmark_group("server");
    g.sample_size(10);
    g.bench_function("startup_to_first_tools_list", |b| {
        b.iter(|| {
            rt.block_on(async {
                let (t, _) = TokioChildProcess::builder(command(&base, &key))
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let client = ().serve(t).await.unwrap();
                let tools = client.list_all_tools().await.unwrap();
                assert_eq!(tools.len(), 2);
                client.cancel().await.ok();
            })
        })
    });
    g.finish();

    let http = reqwest::Client::new();
    let url = format!("{base}/api/environments/0/containers?sort=name");
    let client = rt.block_on(async {
        let (t, _) = TokioChildProcess::builder(command(&base, &key))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ().serve(t).await.unwrap()
    });
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
                let mut args = serde_json::Map::new();
                args.insert("action".into(), "container.list".into());
                let r = client
                    .call_tool(
                        CallToolRequestParams::new("arcane_execute_action").with_arguments(args),
                    )
                    .await
                    .unwrap();
                assert_ne!(r.is_error, Some(true));
            })
        })
    });
    g.finish();
    rt.block_on(async {
        client.cancel().await.ok();
        sim.shutdown().await;
    });
}

criterion_group!(server, benches);
criterion_main!(server);
