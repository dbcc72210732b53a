//! Expansion bombs (docs/security.md, "Expansion budgets"): documents of a few kilobytes that
//! ask for gigabytes of work — a `$ref` fan-out and a YAML alias bomb — given to the real
//! binary under a memory limit at startup (`--spec`, an overlay, the document fetched from
//! ARCANE_URL) and written over the files of a running server, which keeps serving.

use crate::fixtures;
use crate::server_support::*;

use std::process::Stdio;

use rmcp::ServiceExt;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;

/// The memory the binary may use (`prlimit --data`: its heap, anonymous mappings and thread
/// stacks, not the address space it merely reserves). The server needs a small part of it; the
/// bombs, unbounded, need tens of gigabytes.
const MEMORY_LIMIT: u64 = 1 << 30;

fn fan_out_spec() -> String {
    arcane_test_support::bombs::fan_out_spec()
}

/// A list of 5,000 items repeated 5,000 times through aliases: about 30 KB of YAML that
/// yaml_serde would expand into 25 million values, under `key`.
fn alias_bomb(key: &str) -> String {
    let mut text = format!("{key}:\n  base: &a [");
    text.push_str(&vec!["x"; 5000].join(","));
    text.push_str("]\n  many: [");
    text.push_str(&vec!["*a"; 5000].join(","));
    text.push_str("]\n");
    assert!(text.len() < 40_000, "{}", text.len());
    text
}

/// A YAML OpenAPI document with the alias bomb in an extension field.
fn alias_spec() -> String {
    format!(
        "openapi: 3.1.0\ninfo: {{title: Arcane API, version: 2.8.0}}\npaths:\n  /environments/{{id}}/containers:\n    get:\n      responses: {{'200': {{description: ok}}}}\n{}",
        alias_bomb("x-bomb")
    )
}

/// `arcane-mcp ARGS` under [`MEMORY_LIMIT`], with a clean environment.
fn capped(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("prlimit");
    cmd.arg(format!("--data={MEMORY_LIMIT}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_arcane-mcp"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs a server that must not start: it exits with the status of a startup error (2), not
/// killed by the memory limit; its stderr.
async fn refused(args: &[&str]) -> String {
    let out = fixtures::guarded(capped(args).output()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", out.status);
    stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_bomb_given_with_spec_stops_startup_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let fan = dir.path().join("fan-out.json");
    std::fs::write(&fan, fan_out_spec()).unwrap();
    let aliases = dir.path().join("aliases.yaml");
    std::fs::write(&aliases, alias_spec()).unwrap();
    for (file, says) in [
        (&fan, "produces more than 500000 JSON values"),
        (&aliases, "expands to more than 1000000 values"),
    ] {
        let f = file.to_str().unwrap();
        let stderr = refused(&[
            "--arcane-url",
            "http://127.0.0.1:9",
            "--api-key",
            "k",
            "--no-catalog-cache",
            "--spec",
            f,
        ])
        .await;
        assert!(stderr.contains(f), "names the file: {stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(
            stderr.contains("/api/openapi.json"),
            "says what to do: {stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overlay_alias_bomb_stops_startup_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.yaml");
    std::fs::write(&bomb, alias_bomb("vocabulary")).unwrap();
    let spec = fixtures::spec_v2();
    let stderr = refused(&[
        "--arcane-url",
        "http://127.0.0.1:9",
        "--api-key",
        "k",
        "--no-catalog-cache",
        "--spec",
        spec.to_str().unwrap(),
        "--overrides",
        dir.path().to_str().unwrap(),
    ])
    .await;
    assert!(stderr.contains(bomb.to_str().unwrap()), "{stderr}");
    assert!(
        stderr.contains("expands to more than 250000 values"),
        "{stderr}"
    );
}

/// A fake Arcane on loopback: every request is answered with `body` as `content_type`.
async fn fake_arcane(content_type: &'static str, body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bomb_served_at_arcanes_openapi_url_stops_startup_with_a_clear_error() {
    for (content_type, body, says) in [
        (
            "application/json",
            fan_out_spec(),
            "produces more than 500000 JSON values",
        ),
        (
            "application/yaml",
            alias_spec(),
            "expands to more than 1000000 values",
        ),
        (
            "application/vnd.oai.openapi+json",
            fan_out_spec(),
            "produces more than 500000 JSON values",
        ),
    ] {
        let base = fake_arcane(content_type, body).await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("openapi.json");
        let stderr = refused(&[
            "--arcane-url",
            &base,
            "--api-key",
            "k",
            "--no-catalog-cache",
            "--spec-cache",
            cache.to_str().unwrap(),
        ])
        .await;
        assert!(
            stderr.contains(&format!("{base}/api/openapi.json")),
            "names the URL: {stderr}"
        );
        assert!(stderr.contains(says), "{content_type}: {stderr}");
        assert!(!cache.exists(), "a document that fails is not cached");
    }
}

/// A running server whose spec and overlay files sit in a temporary directory, under the
/// memory limit; its stderr lines come out of the receiver.
async fn running_server(
    sim: &Sim,
    spec: &std::path::Path,
    overrides: &std::path::Path,
) -> (Client, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let cmd = capped(&[
        "--arcane-url",
        &sim.base(),
        "--api-key",
        sim.sim.api_key(),
        "--no-catalog-cache",
        "--spec",
        spec.to_str().unwrap(),
        "--overrides",
        overrides.to_str().unwrap(),
    ]);
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("arcane-mcp spawns");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut lines = tokio::io::BufReader::new(stderr.expect("stderr is piped")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
    let client = ().serve(transport).await.expect("MCP session starts");
    (client, rx)
}

/// The next line of the server's log saying a reload failed with `error`. Earlier failures
/// are skipped: the watcher may see a file half written (a truncated spec does not parse).
async fn failed_reload(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    error: &str,
) -> String {
    fixtures::guarded(async {
        loop {
            let line = rx.recv().await.expect("the server is still running");
            if line.contains("reload failed") && line.contains(error) {
                return line;
            }
        }
    })
    .await
}

/// The server still answers `tools/list` with the same tools, and a call works.
async fn still_serving(client: &Client, tools_before: usize) {
    let tools = fixtures::guarded(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), tools_before);
    let (tool, args) = shape("dynamic", "container.list", json!({}), false);
    let r = fixtures::guarded(call(client, &tool, args)).await;
    let v = ok(&r);
    assert!(v["items"].as_array().is_some_and(|a| !a.is_empty()), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bombs_written_over_a_running_servers_files_leave_the_previous_catalog_serving() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec").join("openapi.json");
    let overrides = dir.path().join("overrides");
    std::fs::create_dir_all(spec.parent().unwrap()).unwrap();
    std::fs::create_dir_all(&overrides).unwrap();
    std::fs::copy(fixtures::spec_v2(), &spec).unwrap();
    let (client, mut log) = running_server(&sim, &spec, &overrides).await;
    let before = fixtures::guarded(client.list_all_tools())
        .await
        .unwrap()
        .len();
    still_serving(&client, before).await;

    let bomb = overrides.join("bomb.yaml");
    std::fs::write(&bomb, alias_bomb("vocabulary")).unwrap();
    let line = failed_reload(&mut log, "expands to more than 250000 values").await;
    assert!(line.contains(bomb.to_str().unwrap()), "{line}");
    assert!(line.contains("keeps serving"), "{line}");
    still_serving(&client, before).await;
    std::fs::remove_file(&bomb).unwrap();

    for (text, says) in [
        (fan_out_spec(), "produces more than 500000 JSON values"),
        (alias_spec(), "expands to more than 1000000 values"),
    ] {
        std::fs::write(&spec, text).unwrap();
        let line = failed_reload(&mut log, says).await;
        assert!(line.contains(spec.to_str().unwrap()), "{line}");
        still_serving(&client, before).await;
    }
    client.cancel().await.unwrap();
}

/// The fetched document is parsed as its `Content-Type` says, and read up to the spec's limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fetched_spec_is_read_as_its_content_type_says_and_bounded() {
    use arcane_mcp::load::spec::SpecSource;
    arcane_engine::ensure_crypto_provider();
    let load = |base: String| async move {
        let source = SpecSource {
            arcane_url: Some(base),
            ..Default::default()
        };
        tokio::task::spawn_blocking(move || source.load())
            .await
            .unwrap()
            .map_err(|e| format!("{e:#}"))
    };
    let json = std::fs::read_to_string(fixtures::spec_v2()).unwrap();
    let yaml = std::fs::read_to_string(fixtures::spec_v1()).unwrap();
    // Huma's own type for the document, and plain YAML.
    let doc = load(fake_arcane("application/vnd.oai.openapi+json", json.clone()).await)
        .await
        .unwrap();
    assert_eq!(doc.version(), "2.8.0");
    let doc = load(fake_arcane("application/yaml; charset=utf-8", yaml.clone()).await)
        .await
        .unwrap();
    assert_eq!(doc.version(), "1.11.2");
    // YAML under a JSON type is read as JSON, and fails as such.
    let err = load(fake_arcane("application/json", yaml).await)
        .await
        .unwrap_err();
    assert!(err.contains("invalid JSON"), "{err}");
    // A login page is not read at all.
    let err = load(fake_arcane("text/html; charset=utf-8", json.clone()).await)
        .await
        .unwrap_err();
    assert!(err.contains("\"text/html; charset=utf-8\""), "{err}");
    assert!(err.contains("ARCANE_URL"), "{err}");
    // Over the limit: refused, saying which limit.
    let padded = format!("{json}{}", " ".repeat(arcane_catalog::MAX_SPEC_BYTES));
    let err = load(fake_arcane("application/json", padded).await)
        .await
        .unwrap_err();
    assert!(
        err.contains("larger than the limit of 8388608 bytes"),
        "{err}"
    );
}
