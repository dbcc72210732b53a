//! The Streamable HTTP listener under attack, through the real binary against the simulator:
//! a stranger on the network (tokens, slow clients), a team member holding a valid token who
//! reaches for another member's session, an operator's broken files (token lists, the audit
//! log's path), and what the logs, metrics and health answers may show.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::fixtures::GUARD;
use crate::process_support::{
    BIN, HttpServer, INIT, free_port, http_client, http_client_with, raw_post, raw_post_headers,
    repo,
};
use crate::server_support::{Sim, call, is_error, shape, spec_path, text, writes};

/// Runs `arcane-mcp --transport http` with `args`/`env` expecting it to refuse to start; its
/// stderr. A server that starts serving instead fails the test (it is killed after 10 s).
async fn refused_to_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.current_dir(repo())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "warn")
        .args([
            "--arcane-url",
            "http://127.0.0.1:9",
            "--api-key",
            "k",
            "--spec",
        ])
        .arg(spec_path())
        .args(["--transport", "http", "--listen"])
        .arg(format!("127.0.0.1:{}", free_port()))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("arcane-mcp spawns");
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .unwrap_or_else(|_| {
            panic!("arcane-mcp {args:?} {env:?} started serving instead of refusing")
        })
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A token file that holds no token (an empty Docker secret, only comments, only a byte order
/// mark and blank CRLF lines) or a blank ARCANE_MCP_AUTH_TOKEN stops startup, also with
/// --allow-unauthenticated: it is a broken secret, never a wish to serve without a token. A file
/// written on Windows (BOM, CRLF) still yields its token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_token_list_never_turns_authentication_off() {
    let dir = tempfile::tempdir().unwrap();
    for (i, content) in ["", "\n\n", "# rotated out\n   \n", "\u{feff}\r\n\r\n"]
        .into_iter()
        .enumerate()
    {
        let file = write(dir.path(), &format!("tokens{i}"), content);
        for extra in [&[][..], &["--allow-unauthenticated"][..]] {
            let mut args = vec!["--auth-token-file", &file];
            args.extend_from_slice(extra);
            let err = refused_to_start(&args, &[]).await;
            assert!(err.contains("hold no token"), "{content:?}: {err}");
            assert!(err.contains(&file), "names the file: {err}");
        }
    }
    let err = refused_to_start(
        &["--allow-unauthenticated"],
        &[("ARCANE_MCP_AUTH_TOKEN", " , ")],
    )
    .await;
    assert!(err.contains("hold no token"), "{err}");

    let sim = Sim::start().await;
    let file = write(dir.path(), "windows", "\u{feff}tok-file\r\n# old\r\n");
    let server = HttpServer::start(
        &sim.base(),
        Some(sim.sim.api_key()),
        &["--auth-token-file", &file],
        &[],
    )
    .await;
    let (status, _, body) = raw_post(
        &server.base,
        &[("authorization", "Bearer tok-file")],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = raw_post(
        &server.base,
        &[("authorization", "Bearer \u{feff}tok-file")],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 401);
    server.stop().await;
}

/// One raw request to `/mcp` with the given method, headers and body; status and body.
async fn mcp(
    base: &str,
    method: reqwest::Method,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    // An SSE stream may stay open: read up to the first JSON-RPC message (or 2 s).
    let mut r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let mut text = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(Some(b)) = r.chunk().await {
            text.push_str(&String::from_utf8_lossy(&b));
            if text.contains("\"jsonrpc\"") {
                break;
            }
        }
    })
    .await;
    (status, text)
}

/// A session ID is a capability: whoever holds it can answer the session's elicitation
/// questions, read its notification stream or end it. Another team member with a valid token
/// of their own, the same member with another Arcane key, or a request that dropped its key (and
/// would run with the server's) is told the session does not exist; the session keeps serving
/// the caller that opened it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_serves_only_the_caller_that_opened_it() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(
        &sim,
        &["--arcane-key-source", "either", "--rate-limit", "100000"],
        "tok-a,tok-b",
    )
    .await;
    let base = server.base.clone();
    // The scheme is case-insensitive (RFC 9110): a client writing BEARER is not a stranger.
    let (status, h, body) = raw_post(
        &base,
        &[
            ("authorization", "BEARER tok-a"),
            ("x-arcane-api-key", "key-a"),
        ],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let sid = h["mcp-session-id"].to_str().unwrap().to_string();
    let owner = [
        ("authorization", "Bearer tok-a"),
        ("x-arcane-api-key", "key-a"),
        ("mcp-session-id", sid.as_str()),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, body) = mcp(&base, reqwest::Method::POST, &owner, Some(initialized)).await;
    assert!(status == 202 || status == 200, "{status} {body}");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // A forged answer to an elicitation question the session may have asked.
    let forged = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"confirm": true}}});
    let strangers: [&[(&str, &str)]; 3] = [
        &[
            ("authorization", "Bearer tok-b"),
            ("x-arcane-api-key", "key-a"),
        ],
        &[
            ("authorization", "Bearer tok-a"),
            ("x-arcane-api-key", "key-b"),
        ],
        &[("authorization", "Bearer tok-a")],
    ];
    for who in strangers {
        let mut headers = who.to_vec();
        headers.push(("mcp-session-id", &sid));
        for (method, body) in [
            (reqwest::Method::POST, Some(list.clone())),
            (reqwest::Method::POST, Some(forged.clone())),
            (reqwest::Method::GET, None),
            (reqwest::Method::DELETE, None),
        ] {
            let (status, text) = mcp(&base, method.clone(), &headers, body).await;
            assert_eq!(status, 404, "{who:?} {method}: {text}");
            assert!(text.contains("Session not found"), "{text}");
        }
    }
    // Credentials twice (a proxy appending its header to the client's) are refused, whichever
    // comes first; so are keys that are not text.
    for twice in [
        vec![
            ("authorization", "Bearer tok-a"),
            ("authorization", "Bearer tok-b"),
        ],
        vec![
            ("authorization", "Bearer tok-a"),
            ("x-arcane-api-key", "key-b"),
            ("x-arcane-api-key", "key-a"),
        ],
    ] {
        let (status, _, body) = raw_post(&base, &twice, INIT.into()).await;
        assert_eq!(status, 400, "{twice:?}: {body}");
        assert!(body.contains("More than one"), "{body}");
    }
    let mut bad = reqwest::header::HeaderMap::new();
    bad.insert("authorization", "Bearer tok-a".parse().unwrap());
    bad.insert(
        "x-arcane-api-key",
        reqwest::header::HeaderValue::from_bytes(b"key-\xff\xfe").unwrap(),
    );
    let (status, _, _) = raw_post_headers(&base, bad, INIT.into()).await;
    assert_eq!(status, 400);
    // A session opened by a request whose session header is not text is bound all the same.
    let mut odd = reqwest::header::HeaderMap::new();
    odd.insert("authorization", "Bearer tok-a".parse().unwrap());
    odd.insert(
        "mcp-session-id",
        reqwest::header::HeaderValue::from_bytes(b"\xff").unwrap(),
    );
    let (_, headers, _) = raw_post_headers(&base, odd, INIT.into()).await;
    let other = headers["mcp-session-id"].to_str().unwrap().to_string();
    let (status, _) = mcp(
        &base,
        reqwest::Method::DELETE,
        &[
            ("authorization", "Bearer tok-b"),
            ("mcp-session-id", &other),
        ],
        None,
    )
    .await;
    assert_eq!(status, 404);
    // Still the owner's session.
    let (status, text) = mcp(&base, reqwest::Method::POST, &owner, Some(list.clone())).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("arcane_"), "{text}");
    let (status, _) = mcp(&base, reqwest::Method::DELETE, &owner, None).await;
    assert!((200..300).contains(&status), "{status}");
    let (status, _) = mcp(&base, reqwest::Method::POST, &owner, Some(list)).await;
    assert_eq!(status, 404);
    server.stop().await;
}

/// The audit log's name for a key: the first 12 hex digits of its SHA-256 (docs/security.md).
fn fingerprint(key: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(key.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads from `stream` until the server closes it; `Err` when it is still open after `GUARD`.
async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> Result<(), String> {
    let mut buf = [0u8; 1024];
    tokio::time::timeout(GUARD, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .map_err(|_| format!("still open after {GUARD:?}"))
}

/// Slowloris: a client that opens connections and sends a request head slowly (a header line
/// now and then) or not at all is disconnected, instead of holding a connection, a task and a
/// file descriptor for as long as it likes; the server keeps answering others.
/// The head of the next answer on `sock`, lower-cased.
async fn answer_head(sock: &mut tokio::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(GUARD, async {
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("an answer's head");
    String::from_utf8_lossy(&got).to_lowercase()
}

/// A refusal answered before the request's body arrived (a 401 to an MCP client's first POST,
/// its body sent after its head, as clients do) says `Connection: close`: the server drops such
/// a connection after the answer, and a client that reused it got no answer at all ("Server
/// disconnected without sending a response", the Python SDK's OAuth discovery under load). A
/// refusal of a request without a body keeps the connection for the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_before_the_body_says_the_connection_closes() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#;
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    sock.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let head = answer_head(&mut sock).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    let _ = sock.write_all(body).await;
    assert_eq!(closed_by_server(&mut sock).await, Ok(()));
    // Without a body the connection stays for the next request.
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let get = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    sock.write_all(get.as_bytes()).await.unwrap();
    let head = answer_head(&mut sock).await;
    assert!(
        head.starts_with("http/1.1 401") && !head.contains("connection: close"),
        "{head}"
    );
    sock.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = answer_head(&mut sock).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_trickles_its_headers_is_disconnected() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut trickle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    trickle
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let (mut read, mut write) = trickle.into_split();
    let feeder = tokio::spawn(async move {
        for i in 0.. {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if write
                .write_all(format!("X-Slow-{i}: a\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    });
    let silent_closed = closed_by_server(&mut silent).await;
    let mut buf = [0u8; 1024];
    let trickle_closed = tokio::time::timeout(GUARD, async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    feeder.abort();
    assert_eq!(silent_closed, Ok(()), "a connection that sends nothing");
    assert!(trickle_closed.is_ok(), "a head trickled a line a second");
    let ok = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    server.stop().await;
}

/// Containers send logs to standard output, often through a symbolic link (nginx's image links
/// its log files to `/dev/stdout`). An audit log sent that way used to be "rotated" at its size
/// limit: the link was renamed to `PATH.1` and a plain file created in its place, so the lines
/// stopped reaching the output. A log that is not a regular file is never rotated; it keeps
/// receiving every line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg(unix)]
async fn an_audit_log_sent_to_a_device_is_never_rotated_away() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("audit.jsonl");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let path = link.display().to_string();
    let server = HttpServer::for_sim(
        &sim,
        &["--audit-log", &path, "--audit-log-max-bytes", "4096"],
        "tok",
    )
    .await;
    let client = http_client(&server.base, "tok", &[]).await;
    // About 350 bytes a line: well past the limit.
    for _ in 0..20 {
        let (tool, args) = shape(
            "dynamic",
            "container.restart",
            json!({"containerId": "web-1"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        assert!(!text(&r).is_empty());
    }
    client.cancel().await.unwrap();
    server.stop().await;
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "the link is still there");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("/dev/null"));
    assert!(
        !dir.path().join("audit.jsonl.1").exists(),
        "nothing rotated"
    );
}

/// At the most verbose log level, the bearer tokens (accepted or wrong) and a caller's own
/// Arcane key appear nowhere the server writes or answers: logs, metrics, health, the audit
/// log (which names the key by its fingerprint only), error texts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_client_key_is_shown_at_trace_level() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl").display().to_string();
    let user_key = sim.sim.api_key().to_string();
    let server = HttpServer::start(
        &sim.base(),
        None,
        &["--arcane-key-source", "client", "--audit-log", &audit],
        &[
            ("ARCANE_MCP_AUTH_TOKEN", "planted-team-token"),
            ("ARCANE_MCP_LOG", "trace"),
        ],
    )
    .await;
    let base = server.base.clone();
    let client = http_client(
        &base,
        "planted-team-token",
        &[("x-arcane-api-key", &user_key)],
    )
    .await;
    let (tool, args) = shape("dynamic", "container.list", json!({}), false);
    let r = call(&client, &tool, args).await;
    assert!(text(&r).contains("web-1"), "{}", text(&r));
    let (tool, args) = shape(
        "dynamic",
        "container.restart",
        json!({"containerId": "web-1"}),
        false,
    );
    let r = call(&client, &tool, args).await;
    let shown = text(&r);
    client.cancel().await.unwrap();
    let (status, _, wrong) = raw_post(
        &base,
        &[
            ("authorization", "Bearer planted-wrong-token"),
            ("x-arcane-api-key", "planted-other-key"),
        ],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 401);
    let http = reqwest::Client::new();
    let metrics = http
        .get(format!("{base}/metrics"))
        .bearer_auth("planted-team-token")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("arcane_mcp_tool_calls_total"), "{metrics}");
    let ready = http
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let log = server.stop().await;
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace logging is on: {log}"
    );
    let audit = std::fs::read_to_string(&audit).unwrap();
    assert!(audit.contains("container.restart"), "{audit}");
    assert!(
        audit.contains(&format!("key:{}", fingerprint(&user_key))),
        "{audit}"
    );
    for (place, text) in [
        ("the log", &log),
        ("the audit log", &audit),
        ("/metrics", &metrics),
        ("/readyz", &ready),
        ("the 401", &wrong),
        ("a result", &shown),
    ] {
        for secret in [
            "planted-team-token",
            "planted-wrong-token",
            "planted-other-key",
            user_key.as_str(),
        ] {
            assert!(!text.contains(secret), "{secret} in {place}:\n{text}");
        }
    }
}

/// Every MCP session holds memory until it ends or idles out (about 75 KB each in a debug
/// build, measured), so a client opening sessions in a loop would grow the process without
/// bound: beyond --max-sessions a new one is refused with 503, Retry-After and what to do, the
/// open ones keep working, and a session ended frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_beyond_the_limit_are_refused_until_one_ends() {
    let sim = Sim::start().await;
    // One token may hold them all here (its share is tested in `team`).
    let server = HttpServer::for_sim(
        &sim,
        &["--max-sessions", "3", "--max-sessions-per-token", "3"],
        "tok",
    )
    .await;
    let base = server.base.clone();
    let auth = ("authorization", "Bearer tok");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, h, body) = raw_post(&base, &[auth], INIT.into()).await;
        assert_eq!(status, 200, "{body}");
        ids.push(h["mcp-session-id"].to_str().unwrap().to_string());
    }
    let (status, h, body) = raw_post(&base, &[auth], INIT.into()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("--max-sessions"), "{body}");
    assert!(h.contains_key("retry-after"));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, text) = mcp(
        &base,
        reqwest::Method::POST,
        &[auth, ("mcp-session-id", &ids[0])],
        Some(list),
    )
    .await;
    assert_eq!(status, 200, "an open session keeps working: {text}");
    let (status, _) = mcp(
        &base,
        reqwest::Method::DELETE,
        &[auth, ("mcp-session-id", &ids[1])],
        None,
    )
    .await;
    assert!((200..300).contains(&status), "{status}");
    let (status, _, body) = raw_post(&base, &[auth], INIT.into()).await;
    assert_eq!(status, 200, "a place was freed: {body}");
    server.stop().await;
}

/// DNS rebinding: a web page whose name is made to point at this address reads the listener
/// with its own name as Host. `/mcp` refused it; `/healthz`, `/readyz` and `/metrics` answered
/// it. Now every route refuses a foreign Host or a browser Origin, and still answers the
/// allowed names in any case and with a port, IPv6 included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_rebound_host_or_a_foreign_origin() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let http = reqwest::Client::new();
    let get = |path: &str, headers: &[(&str, String)]| {
        let mut req = http
            .get(format!("{}{path}", server.base))
            .bearer_auth("tok");
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };
    for path in ["/healthz", "/readyz", "/metrics"] {
        for host in ["evil.example".to_string(), format!("evil.example:{port}")] {
            assert_eq!(
                get(path, &[("host", host.clone())]).await,
                403,
                "{path} {host}"
            );
        }
        for origin in ["https://evil.example", "null"] {
            assert_eq!(
                get(path, &[("origin", origin.into())]).await,
                403,
                "{path} {origin}"
            );
        }
        for host in [
            format!("LOCALHOST:{port}"),
            format!("[::1]:{port}"),
            "127.0.0.1".into(),
        ] {
            assert_eq!(
                get(path, &[("host", host.clone())]).await,
                200,
                "{path} {host}"
            );
        }
    }
    server.stop().await;
}

/// A client over HTTP that declares form elicitation and accepts every question with `content`,
/// counting the questions.
#[derive(Clone)]
struct Accepts {
    content: Value,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Accepts {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps = rmcp::model::ClientCapabilities::builder()
            .enable_elicitation()
            .build();
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("accepts", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(self.content.clone()),
        )
    }
}

/// A malicious or sloppy client "accepts" a confirmation with anything but the box ticked — the
/// string "true", 1, an array, nothing — and the destructive call is refused with nothing sent;
/// only `true` runs it. With `--confirm-mode never-destructive` no surface runs a destructive
/// action, not with `"confirm": true`, not with a client that would accept any question (it is
/// never asked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmations_take_only_a_ticked_box_and_never_destructive_refuses_everywhere() {
    let sim = Sim::start().await;
    let kill = json!({"containerId": "web-1"});
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    for (content, runs) in [
        (json!({"confirm": "true"}), false),
        (json!({"confirm": 1}), false),
        (json!({"confirm": [true]}), false),
        (json!({}), false),
        (json!({"confirm": true}), true),
    ] {
        sim.reset().await;
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let handler = Accepts {
            content: content.clone(),
            asked: asked.clone(),
        };
        let client = http_client_with(handler, &server.base, "tok", &[]).await;
        let (tool, args) = shape("dynamic", "container.kill", kill.clone(), false);
        let r = call(&client, &tool, args).await;
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{content}"
        );
        assert_eq!(is_error(&r), !runs, "{content}: {}", text(&r));
        assert_eq!(
            writes(&sim.requests().await).len(),
            usize::from(runs),
            "{content}"
        );
        if !runs {
            assert!(text(&r).contains("nothing was sent"), "{}", text(&r));
        }
        client.cancel().await.ok();
    }
    server.stop().await;

    for surface in ["dynamic", "meta", "individual"] {
        sim.reset().await;
        let server = HttpServer::for_sim(
            &sim,
            &[
                "--confirm-mode",
                "never-destructive",
                "--tool-surface",
                surface,
            ],
            "tok",
        )
        .await;
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let handler = Accepts {
            content: json!({"confirm": true}),
            asked: asked.clone(),
        };
        let client = http_client_with(handler, &server.base, "tok", &[]).await;
        for confirm in [false, true] {
            let (tool, args) = shape(surface, "container.kill", kill.clone(), confirm);
            let r = call(&client, &tool, args).await;
            assert!(is_error(&r), "{surface} confirm={confirm}: {}", text(&r));
        }
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "{surface}"
        );
        assert!(writes(&sim.requests().await).is_empty(), "{surface}");
        client.cancel().await.ok();
        server.stop().await;
    }
}

/// Over HTTP, an Arcane echoing credentials — the caller's own key (`X-Arcane-API-Key`, which
/// the server forwards) and the listener's bearer token — in an answer's body and in an
/// error: neither is in the result (text or structuredContent), the audit log or the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_echoed_by_arcane_are_masked_over_http() {
    let sim = Sim::start().await;
    let user_key = sim.sim.api_key().to_string();
    let token = "echoed-team-token-Zr4";
    let mut state = sim.state().await;
    let web = state["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "web-1")
        .unwrap();
    web["labels"]["echo.key"] = json!(format!("sent {user_key} and Bearer%20{token}"));
    sim.set_state(state).await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl").display().to_string();
    let server = HttpServer::start(
        &sim.base(),
        None,
        &["--arcane-key-source", "client", "--audit-log", &audit],
        &[
            ("ARCANE_MCP_AUTH_TOKEN", token),
            ("ARCANE_MCP_LOG", "debug"),
        ],
    )
    .await;
    let client = http_client(&server.base, token, &[("x-arcane-api-key", &user_key)]).await;
    let (tool, args) = shape(
        "dynamic",
        "container.get",
        json!({"containerId": "web-1"}),
        false,
    );
    let r = call(&client, &tool, args).await;
    let shown = format!(
        "{}\n{}",
        text(&r),
        r.structured_content.clone().unwrap_or_default()
    );
    assert!(shown.contains("sent ********"), "{shown}");
    sim.fault(json!({"path": "/restart$", "kind": "status", "status": 401,
        "body": {"success": false, "error": format!("bad key {user_key}, token {token}")}}))
        .await;
    let (tool, args) = shape(
        "dynamic",
        "container.restart",
        json!({"containerId": "web-1"}),
        false,
    );
    let r = call(&client, &tool, args).await;
    assert!(is_error(&r), "{}", text(&r));
    let error = text(&r);
    assert!(error.contains("bad key"), "{error}");
    client.cancel().await.unwrap();
    let log = server.stop().await;
    let audit = std::fs::read_to_string(&audit).unwrap();
    assert!(audit.contains("bad key"), "{audit}");
    for (place, text) in [
        ("a result", &shown),
        ("an error", &error),
        ("the audit log", &audit),
        ("the log", &log),
    ] {
        for secret in [user_key.as_str(), token] {
            assert!(!text.contains(secret), "{secret} in {place}:\n{text}");
        }
    }
}
