//! A team member holding a valid token against the listener, through the real binary over
//! loopback sockets: request bodies that never end, connections held from one address or with
//! one token, sessions opened with one token until nobody else can open one; and what the audit
//! log and the warnings say of people (named tokens, the 2026-07-28 client, plain error text,
//! the setting a refused request needs).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::fixtures::GUARD;
use crate::process_support::{HttpServer, INIT, http_client, post_call_2026, raw_post};
use crate::server_support::{Sim, call, shape, text};

/// The listening address of `server`.
fn addr(server: &HttpServer) -> SocketAddr {
    server.base.trim_start_matches("http://").parse().unwrap()
}

/// A loopback source address other than 127.0.0.1 (Linux answers the whole 127/8): another
/// client, as the listener sees it.
fn other(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// A connection to `to` from `from`.
async fn connect(from: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// The head of a POST to `/mcp` announcing a body of 1000 bytes, with `token`.
fn head(token: &str, expect: bool) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 1000\r\n{}\r\n",
        if expect {
            "Expect: 100-continue\r\n"
        } else {
            ""
        }
    )
}

/// A connection from `from` that sends a request head and the start of a body that never
/// ends. It returns once the server reads the body (its `100 Continue`), so the connection is
/// counted against its address and its token by then.
///
/// A connection the test closed a moment ago (the start-up probe's) may still be counted by
/// the server until it reads the close; a `503` for `--max-connections` is then tried again
/// (within the hang guard), anything else is a failure.
async fn hold(from: IpAddr, to: SocketAddr, token: &str) -> TcpStream {
    tokio::time::timeout(GUARD, async {
        loop {
            let mut s = connect(from, to).await;
            s.write_all(head(token, true).as_bytes()).await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 256];
            while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before reading the body");
                got.extend_from_slice(&buf[..n]);
            }
            let got = String::from_utf8_lossy(&got);
            if got.starts_with("HTTP/1.1 503") {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            assert!(got.starts_with("HTTP/1.1 100"), "{got}");
            s.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
            return s;
        }
    })
    .await
    .expect("the server reads the body (hang guard)")
}

/// Everything the server sends on `s` until it closes it; panics when it is still open after
/// [`GUARD`].
async fn until_closed(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(GUARD, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "still open after {GUARD:?}: {}",
            String::from_utf8_lossy(&got)
        )
    });
    String::from_utf8_lossy(&got).into_owned()
}

/// One whole request from `from`, on a connection of its own; the server's answer.
async fn exchange(from: IpAddr, to: SocketAddr, request: &str) -> String {
    let mut s = connect(from, to).await;
    s.write_all(request.as_bytes()).await.unwrap();
    until_closed(&mut s).await
}

fn healthz() -> &'static str {
    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
}

/// An `initialize` POST with `token` that closes its connection after the answer.
fn initialize(token: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{INIT}",
        INIT.len()
    )
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

/// Only the head had a deadline: a client that sent a request head and never finished the
/// body held its connection (a task, a file descriptor, one of the 1024 places) for as long
/// as it liked, so 1024 of them took the listener down. Now each is answered 408 at the
/// body's deadline and closed, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_never_end_are_cut_at_the_deadline() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--request-body-timeout", "2"], "tok").await;
    let to = addr(&server);
    let mut slow = Vec::new();
    for i in 0..8u8 {
        let mut s = connect(other(10 + i), to).await;
        s.write_all(head("tok", false).as_bytes()).await.unwrap();
        s.write_all(b"{\"jsonrpc\":").await.unwrap();
        slow.push(s);
    }
    for s in &mut slow {
        let answer = until_closed(s).await;
        assert_eq!(status(&answer), 408, "{answer}");
        assert!(answer.contains("--request-body-timeout"), "{answer}");
    }
    let answer = exchange(other(2), to, &initialize("tok")).await;
    assert_eq!(status(&answer), 200, "{answer}");
    let log = server.stop().await;
    assert!(log.contains("--request-body-timeout"), "{log}");
}

/// One address, before any token is read, holds at most --max-connections-per-address
/// connections (an IPv6 client: its /64): beyond, it is told so (429); /healthz still answers
/// it; another client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_the_listener() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--max-connections-per-address", "3"], "tok").await;
    let to = addr(&server);
    let greedy = other(20);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(hold(greedy, to, "tok").await);
    }
    let answer = exchange(greedy, to, &initialize("tok")).await;
    assert_eq!(status(&answer), 429, "{answer}");
    assert!(answer.contains("--max-connections-per-address"), "{answer}");
    // Refused before authentication: no token needed to be told, none accepted to pass.
    let answer = exchange(greedy, to, &initialize("wrong")).await;
    assert_eq!(status(&answer), 429, "{answer}");
    let answer = exchange(greedy, to, healthz()).await;
    assert_eq!(
        status(&answer),
        200,
        "/healthz while the address is full: {answer}"
    );
    assert!(answer.ends_with("ok\n"), "{answer}");
    let answer = exchange(other(21), to, &initialize("tok")).await;
    assert_eq!(status(&answer), 200, "another client is served: {answer}");
    // A connection closed gives its place back.
    drop(held.pop());
    let served = tokio::time::timeout(GUARD, async {
        loop {
            let answer = exchange(greedy, to, &initialize("tok")).await;
            if status(&answer) == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        served.is_ok(),
        "the address is served again once it holds fewer"
    );
    let log = server.stop().await;
    assert!(
        log.contains("ARCANE_MCP_MAX_CONNECTIONS_PER_ADDRESS"),
        "{log}"
    );
}

/// One token, from as many addresses as it likes, holds at most --max-connections-per-token
/// requests in flight: beyond, 429 with the setting; another token is served; a request that
/// ends gives its place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_cannot_take_the_listener() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(
        &sim,
        &["--max-connections-per-token", "3"],
        "alice=tok-a,bob=tok-b",
    )
    .await;
    let to = addr(&server);
    let mut held = Vec::new();
    for i in 0..3 {
        held.push(hold(other(30 + i), to, "tok-a").await);
    }
    let answer = exchange(other(40), to, &initialize("tok-a")).await;
    assert_eq!(status(&answer), 429, "{answer}");
    assert!(answer.contains("--max-connections-per-token"), "{answer}");
    let answer = exchange(other(40), to, &initialize("tok-b")).await;
    assert_eq!(status(&answer), 200, "another token is served: {answer}");
    drop(held.pop());
    let served = tokio::time::timeout(GUARD, async {
        loop {
            let answer = exchange(other(41), to, &initialize("tok-a")).await;
            if status(&answer) == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        served.is_ok(),
        "the token is served again once it holds fewer"
    );
    let log = server.stop().await;
    assert!(
        log.contains("'alice' (fingerprint") && log.contains("--max-connections-per-token"),
        "the warning names the token by its name: {log}"
    );
    assert!(!log.contains("tok-a"), "never the token: {log}");
}

/// With every connection of the listener taken (--max-connections), /healthz still answers —
/// a liveness probe that failed there would restart a server that is only busy — and any other
/// request is told to retry (503), instead of waiting in the kernel's queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_the_listener_is_full() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--max-connections", "4"], "tok").await;
    let to = addr(&server);
    let mut held = Vec::new();
    for i in 0..4 {
        held.push(hold(other(50 + i), to, "tok").await);
    }
    let answer = exchange(other(60), to, healthz()).await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
    // A foreign Host is refused on /healthz as ever, also from the overflow.
    let rebound = "GET /healthz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
    assert_eq!(status(&exchange(other(60), to, rebound).await), 403);
    let answer = exchange(other(60), to, &initialize("tok")).await;
    assert_eq!(status(&answer), 503, "{answer}");
    assert!(answer.contains("--max-connections"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after"),
        "{answer}"
    );
    held.clear();
    let served = tokio::time::timeout(GUARD, async {
        loop {
            let answer = exchange(other(60), to, &initialize("tok")).await;
            if status(&answer) == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "served again once connections close");
    server.stop().await;
}

/// Connections that send nothing give their places up when a new connection finds none: its
/// address's own oldest waiting one, else one of the address holding more than 32. So neither
/// the address's own `/healthz` probe nor another client waits behind them — before, 1,030
/// such connections kept `/healthz` unanswered for the 10 s head timeout (here: 60, with a
/// listener of 40, left `/healthz` from that address unanswered and another client refused
/// with 503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_make_room_for_newer_ones() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--max-connections", "40"], "tok").await;
    let to = addr(&server);
    let silent = other(70);
    let mut idle = Vec::new();
    for _ in 0..60 {
        idle.push(connect(silent, to).await);
    }
    // Accepted in order: the probe comes after the 60, from the same address.
    let answer = exchange(silent, to, healthz()).await;
    assert_eq!(
        status(&answer),
        200,
        "/healthz from the same address: {answer}"
    );
    assert!(answer.ends_with("ok\n"), "{answer}");
    let answer = exchange(other(71), to, &initialize("tok")).await;
    assert_eq!(status(&answer), 200, "another client is served: {answer}");
    // The oldest silent ones were closed without an answer; the newest still wait.
    assert_eq!(until_closed(&mut idle[0]).await, "");
    // A connection whose request was admitted no longer counts: an address's sessions are
    // never closed to make room.
    let mut working = connect(silent, to).await;
    working
        .write_all(
            initialize("tok")
                .replace("Connection: close\r\n", "")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        let n = working.read(&mut buf).await.unwrap();
        assert!(n > 0, "answered");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    for _ in 0..40 {
        idle.push(connect(silent, to).await);
    }
    let answer = exchange(silent, to, healthz()).await;
    assert_eq!(status(&answer), 200, "{answer}");
    working.write_all(healthz().as_bytes()).await.unwrap();
    let answer = until_closed(&mut working).await;
    assert!(answer.contains("HTTP/1.1 200"), "still served: {answer}");
    server.stop().await;
}

/// One token could open sessions until --max-sessions was reached and lock every other member
/// out for the idle timeout. A token now holds at most --max-sessions-per-token: beyond, 429
/// saying how to free one; the refused session is not kept (it would count against the
/// ceiling); another token opens its own; a session ended frees a place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_cannot_fill_the_sessions_of_the_server() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(
        &sim,
        &["--max-sessions", "4", "--max-sessions-per-token", "2"],
        "alice=tok-a,tok-b",
    )
    .await;
    let base = server.base.clone();
    let open = |token: &'static str| {
        let base = base.clone();
        async move {
            let auth = format!("Bearer {token}");
            raw_post(&base, &[("authorization", auth.as_str())], INIT.into()).await
        }
    };
    let mut alice = Vec::new();
    for _ in 0..2 {
        let (status, h, body) = open("tok-a").await;
        assert_eq!(status, 200, "{body}");
        alice.push(h["mcp-session-id"].to_str().unwrap().to_string());
    }
    for _ in 0..3 {
        let (status, h, body) = open("tok-a").await;
        assert_eq!(status, 429, "{body}");
        assert!(body.contains("--max-sessions-per-token"), "{body}");
        assert!(body.contains("DELETE"), "says how to end one: {body}");
        assert!(h.contains_key("retry-after"));
        assert!(!h.contains_key("mcp-session-id"), "{h:?}");
    }
    // The ceiling is 4: the refused sessions were closed, so the other token opens its two.
    for _ in 0..2 {
        let (status, _, body) = open("tok-b").await;
        assert_eq!(status, 200, "{body}");
    }
    let ended = reqwest::Client::new()
        .delete(format!("{base}/mcp"))
        .bearer_auth("tok-a")
        .header("mcp-session-id", &alice[0])
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let (status, _, body) = open("tok-a").await;
    assert_eq!(status, 200, "a place was freed: {body}");
    let log = server.stop().await;
    assert!(
        log.contains("'alice' (fingerprint") && log.contains("ARCANE_MCP_MAX_SESSIONS_PER_TOKEN"),
        "{log}"
    );
}

/// The audit log's name for a secret: the first 12 hex digits of its SHA-256.
fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(secret.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One sessionless tools/call of the 2026-07-28 protocol, naming its client in `_meta`.
async fn call_2026(base: &str, token: &str, action: &str, params: Value) -> Value {
    let (status, _, text) = post_call_2026(base, token, "field-laptop", action, params).await;
    assert_eq!(status, 200, "{text}");
    Value::String(text)
}

/// The audit log names people: a token given as `alice=TOKEN` in the token file is logged as
/// `alice` with its fingerprint (a plain token by its fingerprint alone); a 2026-07-28 request
/// is logged with the client its `_meta` names (not rmcp's placeholder) and its protocol; an
/// error is plain text (no Markdown escapes, secrets masked, one line). A refused Host,
/// Origin or token is a warning that names what to set — never the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_names_people_and_warnings_say_what_to_set() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "# the team\nalice=tok-alice\nplain-token-1\n").unwrap();
    let audit = dir.path().join("audit.jsonl");
    let server = HttpServer::start(
        &sim.base(),
        Some(sim.sim.api_key()),
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    let base = server.base.clone();
    // A legacy session with a plain token.
    let client = http_client(&base, "plain-token-1", &[]).await;
    let (tool, args) = shape(
        "dynamic",
        "container.restart",
        json!({"containerId": "web-1"}),
        false,
    );
    assert!(!text(&call(&client, &tool, args).await).is_empty());
    client.cancel().await.unwrap();
    // 2026-07-28 requests by alice: one done, one that fails with Markdown in its text.
    call_2026(
        &base,
        "tok-alice",
        "container.restart",
        json!({"containerId": "web-1"}),
    )
    .await;
    call_2026(
        &base,
        "tok-alice",
        "container.restart",
        json!({"containerId": "no_such*box"}),
    )
    .await;
    // Refused: a rebound Host, a foreign Origin, a wrong token, no token.
    let http = reqwest::Client::new();
    let refused = [
        http.get(format!("{base}/healthz"))
            .header("host", "evil.example:1234"),
        http.get(format!("{base}/healthz"))
            .header("origin", "https://evil.example"),
        http.post(format!("{base}/mcp"))
            .bearer_auth("planted-wrong-token"),
        http.post(format!("{base}/mcp")),
    ];
    for req in refused {
        let status = req.send().await.unwrap().status().as_u16();
        assert!(status == 403 || status == 401, "{status}");
    }
    let log = server.stop().await;

    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    let plain = &lines[0];
    assert_eq!(plain["token"], Value::Null, "{plain}");
    assert_eq!(
        plain["tokenFingerprint"],
        fingerprint("plain-token-1"),
        "{plain}"
    );
    assert!(
        plain["session"].as_str().is_some_and(|s| !s.is_empty()),
        "{plain}"
    );
    assert!(
        plain["protocol"].as_str().is_some_and(|p| p < "2026-07-28"),
        "the version the session negotiated: {plain}"
    );
    for line in &lines[1..] {
        assert_eq!(line["token"], "alice", "{line}");
        assert_eq!(line["tokenFingerprint"], fingerprint("tok-alice"), "{line}");
        assert_eq!(
            line["client"], "field-laptop",
            "the client its _meta names: {line}"
        );
        assert_eq!(line["protocol"], "2026-07-28", "{line}");
        assert_eq!(
            line["session"],
            Value::Null,
            "the protocol has no sessions: {line}"
        );
    }
    assert_eq!(lines[1]["outcome"], "ok", "{}", lines[1]);
    let failed = &lines[2];
    assert_eq!(failed["outcome"], "error", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("no_such*box"), "the value as sent: {error}");
    assert!(!error.contains('\\'), "no Markdown escapes: {error}");
    assert!(!error.chars().any(char::is_control), "{error:?}");
    for secret in ["tok-alice", "plain-token-1"] {
        assert!(!text.contains(secret), "{secret} in the audit log: {text}");
    }

    for wanted in [
        "Host 'evil.example:1234' not allowed",
        "--allowed-hosts / ARCANE_MCP_ALLOWED_HOSTS",
        "Origin 'https://evil.example' not allowed",
        "--allowed-origins / ARCANE_MCP_ALLOWED_ORIGINS",
        "bearer token not accepted",
        "request without a bearer token",
        "ARCANE_MCP_AUTH_TOKEN",
    ] {
        assert!(log.contains(wanted), "{wanted:?} in the log:\n{log}");
    }
    assert!(log.contains(&fingerprint("planted-wrong-token")), "{log}");
    assert!(log.contains("WARN"), "{log}");
    for secret in ["planted-wrong-token", "tok-alice", "plain-token-1"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}
