//! A bounded load generator for the HTTP transport (docs/measurements.md): N concurrent MCP
//! sessions over Streamable HTTP, each calling `container.list` M times one after another.
//! Prints one JSON object: calls, errors, wall time, throughput, p50/p99 latency.
//!
//! `cargo run --example http_load -- URL TOKEN [SESSIONS] [CALLS_PER_SESSION]`

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(token)) = (args.first(), args.get(1)) else {
        anyhow::bail!("usage: http_load URL TOKEN [SESSIONS] [CALLS_PER_SESSION]");
    };
    let sessions: usize = args.get(2).map_or(Ok(200), |s| s.parse())?;
    let calls: usize = args.get(3).map_or(Ok(20), |s| s.parse())?;
    arcane_engine::ensure_crypto_provider();
    // Every session connects first, so the timed part is calls only.
    let mut clients = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token);
        clients.push(
            ().serve(StreamableHttpClientTransport::from_config(config))
                .await?,
        );
    }
    let args = serde_json::json!({"action": "container.list", "params": {}});
    let args = args.as_object().cloned().unwrap_or_default();
    let started = Instant::now();
    let runs = clients.iter().map(|c| {
        let args = args.clone();
        async move {
            let mut took = Vec::with_capacity(calls);
            let mut errors = 0usize;
            for _ in 0..calls {
                let t = Instant::now();
                let r = c
                    .call_tool(
                        CallToolRequestParams::new("arcane_execute_action")
                            .with_arguments(args.clone()),
                    )
                    .await;
                took.push(t.elapsed());
                if !matches!(r, Ok(ref res) if res.is_error != Some(true)) {
                    errors += 1;
                }
            }
            (took, errors)
        }
    });
    let results = futures::future::join_all(runs).await;
    let wall = started.elapsed();
    let mut all: Vec<Duration> = results.iter().flat_map(|(t, _)| t.clone()).collect();
    let errors: usize = results.iter().map(|(_, e)| e).sum();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!(
        "{}",
        serde_json::json!({
            "sessions": sessions,
            "calls": all.len(),
            "errors": errors,
            "wall_s": wall.as_secs_f64(),
            "calls_per_s": all.len() as f64 / wall.as_secs_f64(),
            "p50_ms": pct(0.50).as_secs_f64() * 1000.0,
            "p99_ms": pct(0.99).as_secs_f64() * 1000.0,
        })
    );
    for c in clients {
        let _ = c.cancel().await;
    }
    Ok(())
}
