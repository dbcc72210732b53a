//! What reaches Arcane and what is read back: path segments, redirects, size and time caps,
//! concurrency, header arguments. Against the simulator (its request log shows what went out)
//! or a fake upstream answering raw HTTP.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::server_support::*;

// ---------------------------------------------------------------------------------------------
// A fake upstream: a TcpListener answering raw HTTP/1.1, one request per connection.

/// One request the fake upstream received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// What the fake answers.
enum Reply {
    /// Head and body, written at once.
    Raw(Vec<u8>),
    /// The head, then `chunk` again and again until the client goes away.
    Endless { head: String, chunk: Vec<u8> },
    /// `total` bytes of body under a `Content-Length` head (or none), in 64 KiB pieces.
    Sized {
        head: String,
        total: usize,
        fill: u8,
    },
    /// Waits, then answers.
    Slow(Duration, Box<Reply>),
    /// The head, then one byte of `body` every `every` (a slowloris body), without end.
    Trickle {
        head: String,
        body: Vec<u8>,
        every: Duration,
    },
}

fn json_reply(status: u16, body: &Value) -> Reply {
    let body = body.to_string();
    Reply::Raw(
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn redirect(status: u16, location: &str) -> Reply {
    Reply::Raw(
        format!(
            "HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes(),
    )
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Most requests being answered at the same time.
    peak: Arc<AtomicUsize>,
}

impl Fake {
    async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let now = Arc::new(AtomicUsize::new(0));
        let handler: Handler = Arc::new(handler);
        let (s, p) = (seen.clone(), peak.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (seen, peak, now, handler) =
                    (s.clone(), p.clone(), now.clone(), handler.clone());
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut sock).await else {
                        return;
                    };
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    seen.lock().unwrap().push(req.clone());
                    let reply = handler(&req);
                    // Still "in flight" while a slow reply waits; done once the answer starts.
                    if let Reply::Slow(d, _) = &reply {
                        tokio::time::sleep(*d).await;
                    }
                    now.fetch_sub(1, Ordering::SeqCst);
                    let reply = match reply {
                        Reply::Slow(_, then) => *then,
                        other => other,
                    };
                    answer(&mut sock, reply).await;
                });
            }
        });
        Fake { base, seen, peak }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    let head_end = loop {
        let n = sock.read(&mut byte).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut have = buf.len() - head_end - 4;
    while have < len {
        let n = sock.read(&mut byte).await.ok()?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Some(Seen {
        method,
        path,
        headers,
    })
}

fn answer(sock: &mut tokio::net::TcpStream, reply: Reply) -> futures::future::BoxFuture<'_, ()> {
    Box::pin(async move {
        match reply {
            Reply::Raw(bytes) => {
                let _ = sock.write_all(&bytes).await;
            }
            Reply::Endless { head, chunk } => {
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                while sock.write_all(&chunk).await.is_ok() {}
            }
            Reply::Sized { head, total, fill } => {
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![fill; 64 * 1024];
                let mut sent = 0;
                while sent < total {
                    let n = piece.len().min(total - sent);
                    if sock.write_all(&piece[..n]).await.is_err() {
                        return;
                    }
                    sent += n;
                }
            }
            Reply::Slow(d, then) => {
                tokio::time::sleep(d).await;
                answer(sock, *then).await;
            }
            Reply::Trickle { head, body, every } => {
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for b in body.iter().cycle() {
                    if sock.write_all(&[*b]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(every).await;
                }
            }
        }
        let _ = sock.shutdown().await;
    })
}

/// The dynamic surface's call of `id`.
async fn run(
    client: &Client,
    id: &str,
    params: Value,
    confirm: bool,
) -> rmcp::model::CallToolResult {
    let (tool, args) = shape("dynamic", id, params, confirm);
    call(client, &tool, args).await
}

/// The size of a result as it travels (one JSON-RPC line).
fn wire_size(r: &rmcp::model::CallToolResult) -> usize {
    serde_json::to_vec(r).unwrap().len()
}

const RMCP_LINE_CAP: usize = 16 * 1024 * 1024;

fn list_page(n: usize, pad: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("c{i:08}"), "name": format!("web-{i}"), "image": "x".repeat(pad), "state": "running"}))
        .collect();
    json!({"success": true, "data": items, "pagination": {"totalPages": 1, "totalItems": n, "currentPage": 1, "itemsPerPage": n, "grandTotalItems": n}})
}

// ---------------------------------------------------------------------------------------------
// Path segments

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_and_empty_path_segments_send_nothing() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    sim.reset().await;
    let cases: Vec<(&str, Value, bool)> = vec![
        ("container.get", json!({"containerId": ".."}), false),
        ("container.get", json!({"containerId": "."}), false),
        ("container.get", json!({"containerId": ""}), false),
        ("container.get", json!({"containerId": "%2e%2e"}), false),
        ("container.get", json!({"containerId": "%2E."}), false),
        ("container.get", json!({"containerId": "%252e%252e"}), false),
        ("container.delete", json!({"containerId": ".."}), true),
        ("gitops_sync.sync", json!({"syncId": ".."}), true),
        (
            "container.get",
            json!({"containerId": "web-1", "environmentId": ".."}),
            false,
        ),
        ("container.logs", json!({"containerId": ".."}), false),
        ("container.stats", json!({"containerId": "%2e"}), false),
    ];
    for (id, params, confirm) in cases {
        let r = run(&client, id, params.clone(), confirm).await;
        let t = err(&r);
        assert!(
            t.contains("Nothing was sent") || t.contains("nothing was sent"),
            "{id} {params}: {t}"
        );
        assert!(
            sim.requests().await.is_empty(),
            "{id} {params} reached Arcane: {:?}",
            sim.requests().await
        );
    }
    // The dot-segment cases name the reason.
    let t = err(&run(
        &client,
        "container.delete",
        json!({"containerId": ".."}),
        true,
    )
    .await);
    assert!(t.contains("another endpoint"), "{t}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_uris_with_dot_segments_send_nothing() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    sim.reset().await;
    for uri in [
        "arcane://container/..",
        "arcane://container/%2e%2e",
        "arcane://environment/../container/web-1",
        "arcane://environment/%2E/container/web-1",
        "arcane://environment/..",
    ] {
        let r = client
            .read_resource(ReadResourceRequestParams::new(uri.to_string()))
            .await;
        assert!(r.is_err(), "{uri} answered {r:?}");
        assert!(
            sim.requests().await.is_empty(),
            "{uri} reached Arcane: {:?}",
            sim.requests().await
        );
    }
    // A normal one still works and goes out as typed.
    let r = client
        .read_resource(ReadResourceRequestParams::new(
            "arcane://container/web-1".to_string(),
        ))
        .await;
    assert!(r.is_ok(), "{r:?}");
    client.cancel().await.unwrap();
}

/// Arcane 2.8.x decodes a remote environment's path before proxying it to the agent
/// (docs/security.md, "Path parameters"), as the simulator does: a `/` in a value, in any
/// encoding, would address another endpoint there — a volume backup past `--tools volume`, an
/// agent removal, a vulnerability route. Each is refused and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_structure_in_a_value_reaches_no_other_endpoint_of_a_remote_environment() {
    let sim = Sim::start().await;
    let full = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let made = ok(&run(
        &full,
        "volume_backup.create",
        json!({"volumeName": "jobs_worker-data", "environmentId": "env-2"}),
        false,
    )
    .await);
    let backup = made
        .get("id")
        .or_else(|| made.pointer("/item/id"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("a backup ID in {made}"))
        .to_string();
    let backups = |v: Value| v["items"].as_array().map(Vec::len).unwrap_or(0);
    let listed = json!({"volumeName": "jobs_worker-data", "environmentId": "env-2"});
    assert_eq!(
        backups(ok(
            &run(&full, "volume_backup.list", listed.clone(), false).await
        )),
        1
    );

    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tools", "volume,image.get,swarm_node.delete"],
    )
    .await;
    let env = "env-2";
    let cases: Vec<(&str, Value)> = vec![
        (
            "volume.delete",
            json!({"volumeName": format!("backups/{backup}")}),
        ),
        (
            "volume.delete",
            json!({"volumeName": format!("backups%2F{backup}")}),
        ),
        (
            "volume.delete",
            json!({"volumeName": format!("backups%252f{backup}")}),
        ),
        (
            "volume.delete",
            json!({"volumeName": format!("backups\\{backup}")}),
        ),
        (
            "volume.get",
            json!({"volumeName": format!("backups/{backup}/download")}),
        ),
        ("volume.get", json!({"volumeName": "jobs_worker-data?x"})),
        ("volume.get", json!({"volumeName": "jobs_worker-data%23x"})),
        (
            "swarm_node.delete",
            json!({"nodeId": "node-1/agent/deployment"}),
        ),
        (
            "image.get",
            json!({"imageId": "sha256:0b7f/vulnerabilities/list"}),
        ),
    ];
    for (id, mut params) in cases {
        params["environmentId"] = json!(env);
        let before = sim.requests().await.len();
        let t = err(&run(&client, id, params.clone(), true).await);
        assert!(t.contains("another endpoint"), "{id} {params}: {t}");
        assert!(
            t.to_lowercase().contains("nothing was sent"),
            "{id} {params}: {t}"
        );
        assert!(t.contains("ID"), "says what to pass instead: {t}");
        // Only the environment's lookup by name (environment.list) may have been sent.
        let log = sim.requests().await;
        let sent: Vec<&Value> = log[before..]
            .iter()
            .filter(|r| r["path"] != "/api/environments")
            .collect();
        assert!(sent.is_empty(), "{id} {params} was sent: {sent:?}");
    }
    assert_eq!(
        backups(ok(&run(&full, "volume_backup.list", listed, false).await)),
        1,
        "the backup is still there"
    );
    // A real name still goes out, to the remote environment.
    ok(&run(
        &client,
        "volume.get",
        json!({"volumeName": "jobs_worker-data", "environmentId": env}),
        false,
    )
    .await);
    // A parameter declared as taking a path (overrides/actions.yaml) may hold `/`.
    let image = json!({"name": "ghcr.io/acme/api:1.2"});
    let before = sim.requests().await.len();
    let _ = run(&full, "image.history", image, false).await;
    let log = sim.requests().await;
    assert_eq!(
        log.last().unwrap()["path"],
        "/api/environments/0/images/ghcr.io%2Facme%2Fapi:1.2/history",
        "{:?}",
        &log[before..]
    );
    client.cancel().await.unwrap();
    full.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colons_and_at_signs_go_out_raw() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    // container.get: its parameter goes out as given (image references are first looked up
    // and sent as `sha256:` IDs, see overrides/resolvers.yaml).
    for (id, want) in [
        ("sha256:abc", "/api/environments/0/containers/sha256:abc"),
        ("nginx:1.27", "/api/environments/0/containers/nginx:1.27"),
        (
            "a@b!$&'()*+,;=",
            "/api/environments/0/containers/a@b!$&'()*+,;=",
        ),
        (
            "a b\"<e%f",
            "/api/environments/0/containers/a%20b%22%3Ce%25f",
        ),
    ] {
        sim.reset().await;
        let _ = run(&client, "container.get", json!({"containerId": id}), false).await;
        let log = sim.requests().await;
        assert_eq!(log.len(), 1, "{log:?}");
        assert_eq!(log[0]["path"], want, "{id}");
    }
    // A WebSocket endpoint too: `-` is not escaped.
    sim.reset().await;
    let r = run(
        &client,
        "container.logs",
        json!({"containerId": "worker-1", "environmentId": "env-2", "timeoutSeconds": 3}),
        false,
    )
    .await;
    ok(&r);
    // (An environment ID other than "0" is first checked against the environment list.)
    let log = sim.requests().await;
    assert_eq!(
        log.last().unwrap()["path"],
        "/api/environments/env-2/ws/containers/worker-1/logs",
        "{log:?}"
    );
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Redirects

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_origin_redirect_is_not_followed() {
    let other = Fake::start(|_| json_reply(200, &list_page(1, 1))).await;
    let target = format!("{}/api/environments/0/containers", other.base);
    let fake = Fake::start(move |_| redirect(302, &target)).await;
    let client = spawn(&fake.base, "the-key", &[]).await;
    let t = err(&run(&client, "container.list", json!({}), false).await);
    assert!(t.contains(&other.base), "names the Location: {t}");
    assert!(t.contains("ARCANE_URL"), "{t}");
    assert!(other.seen().is_empty(), "the other origin was contacted");
    assert_eq!(fake.seen().len(), 1);
    assert_eq!(fake.seen()[0].header("x-api-key"), ["the-key"]);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_origin_redirect_of_a_read_is_followed() {
    let fake = Fake::start(|req| {
        if req.path.starts_with("/api/moved") {
            json_reply(200, &list_page(2, 1))
        } else {
            redirect(307, "/api/moved/containers")
        }
    })
    .await;
    let client = spawn(&fake.base, "the-key", &[]).await;
    let v = ok(&run(&client, "container.list", json!({}), false).await);
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2), "{v}");
    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.header("x-api-key") == ["the-key"]));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_write_is_not_replayed() {
    let fake = Fake::start(|_| redirect(307, "/api/environments/0/containers/other")).await;
    let client = spawn(&fake.base, "the-key", &[]).await;
    let t = err(&run(
        &client,
        "container.delete",
        json!({"containerId": "web-1"}),
        true,
    )
    .await);
    assert!(t.contains("/api/environments/0/containers/other"), "{t}");
    assert!(t.contains("not sent there"), "{t}");
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].method, "DELETE");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_websocket_upgrade_is_not_followed() {
    let other = Fake::start(|_| json_reply(200, &json!({}))).await;
    let target = format!("{}/api/elsewhere", other.base);
    let fake = Fake::start(move |_| redirect(302, &target)).await;
    let client = spawn(&fake.base, "the-key", &[]).await;
    let t = err(&run(
        &client,
        "container.logs",
        json!({"containerId": "web-1"}),
        false,
    )
    .await);
    assert!(t.contains(&other.base), "{t}");
    assert!(t.contains("ARCANE_URL"), "{t}");
    assert!(other.seen().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spec_fetch_does_not_follow_a_cross_origin_redirect() {
    let other = Fake::start(|_| json_reply(200, &json!({}))).await;
    let target = format!("{}/api/openapi.json", other.base);
    let fake = Fake::start(move |_| redirect(301, &target)).await;
    let source = arcane_mcp::load::spec::SpecSource {
        arcane_url: Some(fake.base.clone()),
        ..Default::default()
    };
    let e = tokio::task::spawn_blocking(move || source.load())
        .await
        .unwrap()
        .unwrap_err();
    assert!(format!("{e:#}").contains(&other.base), "{e:#}");
    assert!(other.seen().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Size and time caps

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_json_body_ends_with_a_size_error() {
    let fake = Fake::start(|_| Reply::Endless {
        head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"success\":true,\"data\":[".into(),
        chunk: b"{\"id\":\"abcdef\",\"name\":\"web\"},".repeat(1000),
    })
    .await;
    let client = spawn(
        &fake.base,
        "k",
        &["--max-response-bytes", "1048576", "--timeout", "600"],
    )
    .await;
    let t = err(&run(&client, "container.list", json!({}), false).await);
    assert!(t.contains("larger than the limit"), "{t}");
    assert!(t.contains("`limit`"), "says how to page: {t}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_body_is_refused_with_a_paging_hint_under_the_client_cap() {
    // Announced with Content-Length, and streamed without one.
    for declared in [true, false] {
        let fake = Fake::start(move |_| Reply::Sized {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{}Connection: close\r\n\r\n",
                if declared {
                    "Content-Length: 50000000\r\n"
                } else {
                    ""
                }
            ),
            total: 50_000_000,
            fill: b' ',
        })
        .await;
        let client = spawn(&fake.base, "k", &[]).await;
        let r = run(&client, "container.list", json!({}), false).await;
        let t = err(&r);
        assert!(t.contains("larger than the limit"), "{t}");
        assert!(t.contains("`limit`") && t.contains("`search`"), "{t}");
        assert!(wire_size(&r) < RMCP_LINE_CAP);
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_big_for_a_client_says_how_to_page() {
    // 20 MB of JSON under a raised read cap: read, but too big to send as one message.
    let page = list_page(20_000, 1000);
    let fake = Fake::start(move |_| json_reply(200, &page)).await;
    let client = spawn(&fake.base, "k", &["--max-response-bytes", "67108864"]).await;
    let r = run(&client, "container.list", json!({}), false).await;
    let t = err(&r);
    assert!(t.contains("more than fits in one MCP message"), "{t}");
    assert!(t.contains("`limit`"), "{t}");
    assert!(wire_size(&r) < RMCP_LINE_CAP);
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_wait_for_a_slot() {
    let fake = Fake::start(|_| {
        Reply::Slow(
            Duration::from_millis(40),
            Box::new(json_reply(200, &list_page(1, 1))),
        )
    })
    .await;
    let client = spawn(&fake.base, "k", &["--max-concurrent-requests", "4"]).await;
    let calls = (0..200).map(|_| run(&client, "container.list", json!({}), false));
    let results = futures::future::join_all(calls).await;
    for r in &results {
        ok(r);
    }
    assert_eq!(fake.seen().len(), 200);
    let peak = fake.peak.load(Ordering::SeqCst);
    assert!(peak <= 4, "the upstream saw {peak} requests at once");
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Header arguments

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_arguments_cannot_carry_credentials_hosts_or_line_breaks() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    sim.reset().await;
    for (id, params, confirm, want) in [
        (
            "oidc.config",
            json!({"Host": "evil.example"}),
            false,
            "cannot be set from an argument",
        ),
        (
            "oidc.config",
            json!({"X-Forwarded-Host": "evil.example"}),
            false,
            "cannot be set from an argument",
        ),
        (
            "notification.dispatch",
            json!({"X-API-Key": "another-key", "kind": "test"}),
            true,
            "cannot be set from an argument",
        ),
        (
            "environment.pair",
            json!({"X-API-Key": "another-key"}),
            true,
            "cannot be set from an argument",
        ),
        (
            "oidc.config",
            json!({"User-Agent": "a\r\nX-API-Key: other"}),
            false,
            "not allowed in an HTTP header",
        ),
        (
            "oidc.config",
            json!({"Origin": "caf\u{e9}"}),
            false,
            "not allowed in an HTTP header",
        ),
    ] {
        let t = err(&run(&client, id, params.clone(), confirm).await);
        assert!(t.contains(want), "{id} {params}: {t}");
        assert!(t.contains("Nothing was sent"), "{t}");
        assert!(sim.requests().await.is_empty(), "{id} {params} was sent");
    }
    // A plain one still goes out.
    let _ = run(
        &client,
        "oidc.config",
        json!({"User-Agent": "probe/1"}),
        false,
    )
    .await;
    let log = sim.requests().await;
    assert_eq!(log.len(), 1, "{log:?}");
    client.cancel().await.unwrap();
}

/// The binary under a low open-file limit, with `args`.
async fn spawn_with_nofile(base: &str, nofile: u32, args: &[&str]) -> Client {
    use rmcp::ServiceExt;
    let inner = command(base, "k", args);
    let std = inner.as_std();
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(std.get_program())
        .args(std.get_args())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "error");
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("arcane-mcp spawns");
    ().serve(transport).await.expect("MCP session starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn running_out_of_open_files_is_named_as_such() {
    let fake = Fake::start(|_| {
        Reply::Slow(
            Duration::from_millis(300),
            Box::new(json_reply(200, &list_page(1, 1))),
        )
    })
    .await;
    // 100 connections at once cannot fit in 48 descriptors.
    let client = spawn_with_nofile(&fake.base, 48, &["--max-concurrent-requests", "100"]).await;
    let calls = (0..100).map(|_| run(&client, "container.list", json!({}), false));
    let results = futures::future::join_all(calls).await;
    let failed: Vec<String> = results.iter().filter(|r| is_error(r)).map(text).collect();
    assert!(!failed.is_empty(), "every call fitted in 48 descriptors");
    for t in &failed {
        assert!(t.contains("open files"), "{t}");
        assert!(!t.contains("Check ARCANE_URL"), "{t}");
    }
    client.cancel().await.unwrap();
    // The bound keeps the same load within the same limit.
    let client = spawn_with_nofile(&fake.base, 48, &["--max-concurrent-requests", "8"]).await;
    let calls = (0..100).map(|_| run(&client, "container.list", json!({}), false));
    for r in futures::future::join_all(calls).await {
        ok(&r);
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_waiting_for_a_slot_can_be_cancelled() {
    let fake = Fake::start(|_| {
        Reply::Slow(
            Duration::from_millis(1500),
            Box::new(json_reply(200, &list_page(1, 1))),
        )
    })
    .await;
    let client = spawn(&fake.base, "k", &["--max-concurrent-requests", "1"]).await;
    let first = run(&client, "container.list", json!({}), false);
    let waiting = async {
        // Starts once the first holds the only slot, and is given up (cancelled) while it waits.
        while fake.seen().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let second = run(
            &client,
            "container.list",
            json!({"search": "second"}),
            false,
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(300), second)
                .await
                .is_err(),
            "the second call waits for the slot"
        );
    };
    let (r, ()) = tokio::join!(first, waiting);
    ok(&r);
    // Once the slot is free, the cancelled call does not go out.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    client.cancel().await.unwrap();
}

/// Peak resident memory of a process, in bytes (Linux).
fn vm_hwm(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_an_endless_stream_to_a_client_that_does_not_read_stays_bounded() {
    // Every stream line is a progress notification. A client that reads its stdout slowly (or
    // not at all) must not make the server queue one notification per line without end.
    let line = format!("{{\"log\":\"{}\"}}\n", "x".repeat(150));
    let fake = Fake::start(move |_| Reply::Endless {
        head: "HTTP/1.1 200 OK\r\nContent-Type: application/x-json-stream\r\nConnection: close\r\n\r\n"
            .into(),
        chunk: line.repeat(1000).into_bytes(),
    })
    .await;
    let mut cmd = command(&fake.base, "k", &["--timeout", "3"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let send = |msg: Value| format!("{msg}\n").into_bytes();
    // First the server's own start: answered, and its search index built (a search waits for
    // it) — what start-up holds is not what the stream may add.
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "arcane_find_action", "arguments": {"query": "pull image"}}}),
    ] {
        stdin.write_all(&send(msg)).await.unwrap();
    }
    stdin.flush().await.unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == 2) {
            break;
        }
    }
    let before = vm_hwm(pid);
    // From here the client never reads: the pipe fills and the server's writes wait.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "arcane_execute_action",
        "arguments": {"action": "image.pull", "params": {"imageName": "nginx:latest"}},
        "_meta": {"progressToken": 1}}});
    stdin.write_all(&send(call)).await.unwrap();
    stdin.flush().await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let peak = vm_hwm(pid);
    child.kill().await.unwrap();
    drop(lines);
    assert!(
        peak.saturating_sub(before) < 64 * 1024 * 1024,
        "the server's peak grew by {} MB while its client did not read",
        peak.saturating_sub(before) / (1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_error_body_does_not_hold_a_stream_call() {
    // A stream's request may run for 20 × --timeout, so its error body (a 502 whose body
    // arrives a byte at a time, without end) must have a read time of its own: the message is
    // what arrived by then.
    let fake = Fake::start(|_| Reply::Trickle {
        head: "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
            .into(),
        body: b"upstream down ".to_vec(),
        // The phrase whole within a second, so a loaded machine still delivers it inside
        // the error body's read time (10 s); the body never ends all the same.
        every: Duration::from_millis(50),
    })
    .await;
    let client = spawn(&fake.base, "k", &["--timeout", "30"]).await;
    // A hang guard, far below the stream's own cap (600 s) and far above the error body's.
    let r = tokio::time::timeout(
        Duration::from_secs(120),
        run(
            &client,
            "image.pull",
            json!({"imageName": "nginx:latest"}),
            false,
        ),
    )
    .await
    .expect("the stream call answers instead of reading the error body for 10 minutes");
    let t = err(&r);
    assert!(t.contains("502"), "{t}");
    assert!(t.contains("upstream down"), "what arrived is used: {t}");
    client.cancel().await.unwrap();
}
