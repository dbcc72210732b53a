//! Fuzzes JSON-RPC messages into the server in-process: the stdio line transport
//! (`transport::jsonrpc::Lines`, which answers what rmcp would drop), rmcp's decoding, and the
//! handler (`mcp/handler.rs`: routing, tools/call through `mcp/call.rs`, resources, prompts,
//! completions) over Arcane 2.8.0's catalog. Arcane is a closed loopback port: every call that
//! reaches it fails as unreachable, so no state carries from one input to the next.
//!
//! The first byte picks the server (dynamic surface; meta surface with the flat profile;
//! individual surface); each further line of the input is one message of a session opened
//! with `initialize`. Invariants: no panic and no hang — after any messages the session
//! still answers a `ping`; every line the server writes is one JSON-RPC 2.0 message; the
//! server's own credential appears in none of them, even when a message carries it (it is
//! masked by value); `undecodable` answers exactly what cannot be read.
#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use arcane_mcp::app::App;
use arcane_mcp::transport::jsonrpc::{Lines, lone_surrogate, undecodable};
use clap::Parser;
use libfuzzer_sys::fuzz_target;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The server's own credential: masked by value wherever text leaves the server.
const KEY: &str = "fuzzKey-7f3a9c21d4e8b6";
const LAST: &str = "fuzz-last-ping";

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
});

static APPS: LazyLock<Vec<App>> = LazyLock::new(|| {
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../third_party/arcane/openapi-v2.8.0.json"
    );
    // A loopback port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    [
        &["--tool-surface", "dynamic"][..],
        &["--tool-surface", "meta", "--client-profile", "flat"],
        &["--tool-surface", "individual"],
    ]
    .iter()
    .map(|extra| {
        let argv = [
            "arcane-mcp",
            "--arcane-url",
            &url,
            "--api-key",
            KEY,
            "--spec",
            spec,
            "--no-catalog-cache",
            "--timeout",
            "2",
        ]
        .into_iter()
        .chain(extra.iter().copied());
        let cli = arcane_mcp::config::Cli::try_parse_from(argv).expect("fuzz server flags");
        let args = cli.serve;
        let (base_url, auth) = arcane_mcp::app::connection(&args).expect("connection settings");
        let sources = arcane_mcp::load::sources::Sources::from_args(&args.source, Some(&base_url));
        App::build(&args, sources, base_url, auth).expect("the server builds")
    })
    .collect()
});

fn check_undecodable(line: &[u8]) {
    let Some(reply) = undecodable(line) else {
        // Left to rmcp: it reads as JSON, or it is a notification (never answered).
        let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        assert!(
            serde_json::from_slice::<Value>(text).is_ok() || lone_surrogate(text).is_some(),
            "{:?} neither read nor answered",
            String::from_utf8_lossy(line)
        );
        return;
    };
    assert_eq!(reply["jsonrpc"], "2.0");
    assert!(
        matches!(
            reply["id"],
            Value::Null | Value::String(_) | Value::Number(_)
        ),
        "{reply}"
    );
    let code = reply["error"]["code"].as_i64().expect("an error code");
    assert!([-32700, -32600, -32602].contains(&code), "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{reply}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    for line in rest.split(|b| *b == b'\n') {
        check_undecodable(line);
    }
    let app = &APPS[which as usize % APPS.len()];
    RT.block_on(async {
        let (client, server_io) = tokio::io::duplex(1 << 20);
        let (r, w) = tokio::io::split(server_io);
        let server = app.server();
        let pacing = arcane_mcp::mcp::pacing::Pacing::new(app.max_calls_in_flight());
        let session = tokio::spawn(async move {
            let transport = arcane_mcp::mcp::pacing::Paced::new(Lines::new(r, w), pacing);
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let (read, mut write) = tokio::io::split(client);
        let mut input = Vec::new();
        input.extend_from_slice(br#"{"jsonrpc":"2.0","id":"fuzz-init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#);
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        input.extend_from_slice(rest);
        input.extend_from_slice(format!("\n{{\"jsonrpc\":\"2.0\",\"id\":\"{LAST}\",\"method\":\"ping\"}}\n").as_bytes());
        let writer = async move {
            let _ = write.write_all(&input).await;
            let _ = write.flush().await;
            write
        };
        let reader = async {
            let mut lines = BufReader::new(read).lines();
            loop {
                let Ok(Some(line)) = lines.next_line().await else {
                    panic!("the session ended before answering the last ping");
                };
                assert!(!line.contains(KEY), "the server's credential in {line}");
                let msg: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                assert_eq!(msg["jsonrpc"], "2.0", "{line}");
                if msg["id"] == LAST && msg.get("result").is_some() {
                    return;
                }
            }
        };
        let done = tokio::time::timeout(Duration::from_secs(30), async {
            let (w, ()) = tokio::join!(writer, reader);
            w
        })
        .await
        .expect("the session hung: the last ping was not answered within 30 s");
        drop(done);
        session.abort();
        let _ = session.await;
    });
});
