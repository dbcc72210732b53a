//! Server benchmarks, each beside the floor it is judged against (measured in the same run):
//!
//! - `floor/version`: spawn `arcane-mcp --version` and wait (the process floor);
//! - `server/startup_to_first_tools_list`: spawn → `initialize` answered → first `tools/list`,
//!   with rmcp's client (`rmcp_client`) and with a raw client (`raw_client`: writes each request
//!   line and reads the answer line, what any client pays before its own decoding), both with
//!   the catalog cache warm (the bench's own directory), and `raw_client_uncached` with
//!   `--no-catalog-cache` (the catalog built from the files);
//! - `tools_list/<surface>`: one `tools/list` round trip over stdio with rmcp's client,
//!   `tools_list_raw/<surface>` the same with the raw client, and `tools_list_encode/…` the
//!   server's share of it (the clone and JSON encoding rmcp does per request);
//! - `list_containers/raw_http` vs `through_mcp_server` (rmcp's client), `through_raw_client`
//!   and `in_process` (`ArcaneServer::call`, no protocol): the per-call overhead;
//! - `under_load/ping_during_burst`: a `ping` sent while 2,000 `container.list` calls are in
//!   flight (fairness), with rmcp's client and with the raw client, with the burst's throughput
//!   and the server's peak RSS printed; `find_during_burst/raw_client` the same with an
//!   `arcane_find_action` search instead of the ping.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use arcane_mcp::surface::Surface;
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;

// The one finder of Arcane's documents, shared with the integration tests.
use arcane_test_support as fixtures;

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
        .arg(spec())
        // A cache of the bench's own: the first start builds and stores the catalog, the
        // others read it (`startup…/uncached` turns it off).
        .arg("--catalog-cache-dir")
        .arg(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-catalog-cache"));
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

/// A server driven by a raw client: JSON-RPC lines written to its stdin, answers read as lines
/// from its stdout and only located (never decoded) by their `id`.
struct RawServer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    line: String,
}

impl RawServer {
    /// Spawns the server and completes the `initialize` handshake.
    fn start(base: &str, key: &str, surface: &str) -> RawServer {
        RawServer::start_command(command(base, key, surface))
    }

    fn start_command(cmd: tokio::process::Command) -> RawServer {
        let mut cmd = cmd.into_std();
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut raw = RawServer {
            child,
            stdin,
            stdout,
            line: String::new(),
        };
        raw.initialize();
        raw
    }

    fn initialize(&mut self) {
        self.send(INITIALIZE);
        self.answer_to("\"init\"");
        self.send(INITIALIZED);
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// Reads lines until the answer whose `id` is `id` (as JSON text); returns its length.
    fn answer_to(&mut self, id: &str) -> usize {
        use std::io::BufRead;
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).unwrap();
            assert!(n > 0, "the server closed its output");
            if id_of(&self.line) == Some(id) {
                return n;
            }
        }
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","#,
    r#""capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    "\n"
);
const INITIALIZED: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// The `id` of a JSON-RPC answer line as JSON text, read from its start (rmcp writes
/// `{"jsonrpc":"2.0","id":…,` first), without decoding the rest.
fn id_of(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(r#"{"jsonrpc":"2.0","id":"#)?;
    rest.split_once(',').map(|(id, _)| id)
}

/// Sent right after a raw burst; both are answered with the ID `probe`.
const PING_PROBE: &str = "{\"jsonrpc\":\"2.0\",\"id\":\"probe\",\"method\":\"ping\"}\n";
const FIND_PROBE: &str = concat!(
    "{\"jsonrpc\":\"2.0\",\"id\":\"probe\",\"method\":\"tools/call\",\"params\":",
    "{\"name\":\"arcane_find_action\",\"arguments\":{\"query\":\"restart a container\"}}}\n"
);

fn raw_call(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"arcane_execute_action","arguments":{{"action":"container.list"}}}}}}"#
    ) + "\n"
}

fn list_call() -> CallToolRequestParams {
    let mut args = serde_json::Map::new();
    args.insert("action".into(), "container.list".into());
    CallToolRequestParams::new("arcane_execute_action").with_arguments(args)
}

fn benches(c: &mut Criterion) {
    arcane_engine::ensure_crypto_provider();
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
    // Timed from the spawn to the answer; the session's end and the process's exit are not.
    g.bench_function("startup_to_first_tools_list/rmcp_client", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(async {
                    let started = Instant::now();
                    let (client, _) = connect(&base, &key, "dynamic").await;
                    let tools = client.list_all_tools().await.unwrap();
                    total += started.elapsed();
                    assert_eq!(tools.len(), 2);
                    client.cancel().await.ok();
                })
            }
            total
        })
    });
    g.bench_function("startup_to_first_tools_list/raw_client", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let mut raw = RawServer::start(&base, &key, "dynamic");
                raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
                let answer = raw.answer_to("1");
                total += started.elapsed();
                assert!(answer > 500);
            }
            total
        })
    });
    g.bench_function("startup_to_first_tools_list/raw_client_uncached", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let mut cmd = command(&base, &key, "dynamic");
                cmd.arg("--no-catalog-cache");
                let mut raw = RawServer::start_command(cmd);
                raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
                let answer = raw.answer_to("1");
                total += started.elapsed();
                assert!(answer > 500);
            }
            total
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

    let mut g = c.benchmark_group("tools_list_raw");
    g.sample_size(20);
    for surface in ["dynamic", "meta", "individual"] {
        let mut raw = RawServer::start(&base, &key, surface);
        let request = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n";
        g.bench_function(surface, |b| {
            b.iter(|| {
                raw.send(request);
                raw.answer_to("7")
            })
        });
    }
    g.finish();

    // The server's share of a tools/list: rmcp takes an owned result and encodes it per request.
    let sources = arcane_mcp::load::sources::Sources::from_args(
        &arcane_mcp::config::CatalogSourceArgs {
            spec: Some(spec()),
            overrides: None,
            catalog_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("catalog"),
            spec_cache: None,
        },
        None,
    );
    let mut g = c.benchmark_group("tools_list_encode");
    for surface in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        let snap = arcane_mcp::load::snapshot::Snapshot::build(
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
    let mut raw = RawServer::start(&base, &key, "dynamic");
    g.bench_function("through_raw_client", |b| {
        b.iter(|| {
            raw.send(&raw_call(1));
            raw.answer_to("1")
        })
    });
    drop(raw);
    // The server's own work per call, without the protocol: ArcaneServer::call in this process.
    let app = {
        use clap::Parser;
        let cli = arcane_mcp::config::Cli::try_parse_from([
            "arcane-mcp",
            "--arcane-url",
            base.as_str(),
            "--api-key",
            key.as_str(),
            "--spec",
            spec().to_str().unwrap(),
        ])
        .unwrap();
        let (base_url, auth) = arcane_mcp::app::connection(&cli.serve).unwrap();
        let sources =
            arcane_mcp::load::sources::Sources::from_args(&cli.serve.source, Some(&base_url));
        arcane_mcp::app::App::build(&cli.serve, sources, base_url, auth).unwrap()
    };
    let server = app.server();
    let args = list_call().arguments.unwrap();
    g.bench_function("in_process", |b| {
        b.iter(|| {
            rt.block_on(async {
                let ctx = arcane_engine::CallContext::default();
                let r = server
                    .call("arcane_execute_action", Some(&args), &ctx)
                    .await;
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
    // The same with the raw client: the burst is written as fast as the server reads it, the
    // ping right after its last request; answers are read as lines and located by their id.
    let mut raw = RawServer::start(&base, &key, "dynamic");
    let raw_pid = raw.child.id();
    // A `ping`, then an `arcane_find_action` search (which never waits for a call's slot).
    let probes = [
        ("ping_during_burst/raw_client", PING_PROBE),
        ("find_during_burst/raw_client", FIND_PROBE),
    ];
    for (name, probe) in probes {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut stdin = raw.stdin.take().unwrap();
                    let started = Instant::now();
                    let writer = std::thread::spawn(move || {
                        use std::io::Write;
                        let burst: String = (1..=BURST).map(raw_call).collect();
                        stdin.write_all(burst.as_bytes()).unwrap();
                        stdin.flush().unwrap();
                        let sent = Instant::now();
                        stdin.write_all(probe.as_bytes()).unwrap();
                        stdin.flush().unwrap();
                        (stdin, sent)
                    });
                    let (mut answered, mut pinged) = (0, None);
                    while answered < BURST || pinged.is_none() {
                        use std::io::BufRead;
                        raw.line.clear();
                        assert!(raw.stdout.read_line(&mut raw.line).unwrap() > 0);
                        match id_of(&raw.line) {
                            Some("\"probe\"") => pinged = Some(Instant::now()),
                            Some(_) => answered += 1,
                            None => {}
                        }
                    }
                    let (stdin, sent) = writer.join().unwrap();
                    raw.stdin = Some(stdin);
                    total += pinged.unwrap().saturating_duration_since(sent);
                    eprintln!(
                        "raw client: burst of {BURST} container.list: {:.0} calls/s; server RSS (peak, now) MB: {:?}",
                        BURST as f64 / started.elapsed().as_secs_f64(),
                        rss_mb(raw_pid)
                    );
                }
                total
            })
        });
    }
    drop(raw);
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
