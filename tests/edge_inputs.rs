//! Inputs at the edges, from the second outside attack (docs/security.md): undecodable JSON-RPC text
//! (a lone UTF-16 surrogate) over stdio and HTTP, header names in error texts, control
//! characters in quoted arguments, the `./catalog` directory of the working directory.

use crate::process_support::{HttpServer, INIT, raw_post};
use crate::server_support::{self, Sim};

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A `tools/call` whose argument holds a lone surrogate, as JSON text (serde_json would refuse
/// to write it).
fn lone_surrogate_call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"arcane_execute_action","arguments":{{"action":"container.get","params":{{"containerId":"ab\ud800cd"}}}}}}}}"#
    )
}

fn assert_surrogate_error(answer: &Value, id: u64) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let m = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        m.contains(r"\ud800") && m.contains("lone UTF-16 surrogate") && m.contains("pairs"),
        "{m}"
    );
}

/// Over stdio (the real binary), the call is answered with an error carrying its id, and the
/// session keeps serving. Unfixed, rmcp dropped the line and the client waited forever: the
/// hang guard fails the test instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lone_surrogate_gets_a_parse_error_with_its_id() {
    let sim = Sim::start().await;
    let mut child = server_support::command(&sim.base(), sim.sim.api_key(), &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |text: &str| {
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    };
    send(INIT).await;
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    send(&lone_surrogate_call(7)).await;
    // Broken JSON: answered with id null.
    send(r#"{"jsonrpc":"2.0","id":8,"method":"#).await;
    send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await;
    let mut answers = Vec::new();
    let guard = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            let done = v["id"] == 9;
            answers.push(v);
            if done {
                break;
            }
        }
    })
    .await;
    assert!(guard.is_ok(), "no answer within 60 s: {answers:?}");
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).cloned();
    assert_surrogate_error(&by_id(json!(7)).expect("call 7 answered"), 7);
    let broken = by_id(Value::Null).expect("the broken line is answered with id null");
    assert_eq!(broken["error"]["code"], -32700, "{broken}");
    assert!(
        by_id(json!(9)).unwrap().get("result").is_some(),
        "{answers:?}"
    );
}

/// Over Streamable HTTP, in a session and in the sessionless 2026-07-28 form, the body is
/// answered with a JSON-RPC error carrying the request's id (400), not rmcp's plain-text 415.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_lone_surrogate_gets_a_parse_error_with_its_id() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let auth = ("authorization", "Bearer tok");
    let post = |headers: Vec<(&'static str, String)>, body: String| {
        let base = server.base.clone();
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            tokio::time::timeout(Duration::from_secs(30), raw_post(&base, &h, body))
                .await
                .expect("answered within 30 s")
        }
    };
    // In a session.
    let (status, h, body) = post(vec![(auth.0, auth.1.into())], INIT.into()).await;
    assert_eq!(status, 200, "{body}");
    let session = h["mcp-session-id"].to_str().unwrap().to_string();
    let in_session = vec![
        (auth.0, auth.1.to_string()),
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-06-18".into()),
    ];
    let _ = post(
        in_session.clone(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
    )
    .await;
    let (status, h, body) = post(in_session, lone_surrogate_call(11)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        h["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_surrogate_error(&serde_json::from_str(&body).expect("JSON-RPC"), 11);

    // Sessionless (2026-07-28).
    let sessionless = r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"arcane_execute_action","arguments":{"action":"container.get","params":{"containerId":"\ud800"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}"#.to_string();
    let headers = vec![
        (auth.0, auth.1.to_string()),
        ("mcp-protocol-version", "2026-07-28".into()),
        ("mcp-method", "tools/call".into()),
        ("mcp-name", "arcane_execute_action".into()),
    ];
    let (status, _, body) = post(headers.clone(), sessionless).await;
    assert_eq!(status, 400, "{body}");
    assert_surrogate_error(&serde_json::from_str(&body).expect("JSON-RPC"), 12);
    // Broken JSON: id null.
    let (status, _, body) = post(headers, r#"{"jsonrpc":"2.0","id":13,"#.into()).await;
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON-RPC");
    assert_eq!(v["id"], Value::Null, "{v}");
    assert_eq!(v["error"]["code"], -32700, "{v}");
    server.stop().await;
}

/// The text of a failed call on the dynamic surface.
async fn failed(client: &server_support::Client, id: &str, params: Value) -> String {
    let (tool, args) = server_support::shape("dynamic", id, params, true);
    server_support::err(&server_support::call(client, &tool, args).await)
}

/// A header argument that cannot be sent is refused with the header's name (no secret) and,
/// unless the header carries a credential, its value with the bad characters shown. Unfixed,
/// the redactor took `auth.login:` before the name for a secret key and masked the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_header_value_is_refused_by_the_header_name() {
    let sim = Sim::start().await;
    let client = server_support::spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    sim.reset().await;
    let t = failed(
        &client,
        "auth.login",
        json!({"username": "u", "password": "p", "User-Agent": "probe\r\nX-Evil: 1"}),
    )
    .await;
    assert!(!t.contains("******** holds"), "{t}");
    assert!(t.contains("header User-Agent"), "{t}");
    assert!(t.contains(r"probe\u000d\u000aX-Evil"), "{t}");
    assert!(
        t.contains("visible ASCII") && t.contains("Nothing was sent"),
        "{t}"
    );
    // A credential header: named, its value never shown.
    let t = failed(
        &client,
        "auth.disable_mfa",
        json!({"X-Step-Up-Token": "s\u{e9}cret-step-up"}),
    )
    .await;
    assert!(t.contains("header X-Step-Up-Token"), "{t}");
    assert!(!t.contains("cret-step-up"), "{t}");
    assert!(sim.requests().await.is_empty(), "nothing is sent");
    client.cancel().await.unwrap();
}

/// A NUL or another invisible character in an ID argument is shown escaped, with the
/// parameter and what to send. Unfixed, it vanished: "No environment  in environment :".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_quoted_arguments_are_shown_escaped() {
    let sim = Sim::start().await;
    let client = server_support::spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let t = failed(&client, "container.list", json!({"environmentId": "\u{0}"})).await;
    assert!(t.contains(r"`\u0000`"), "{t}");
    assert!(!t.contains("environment  in"), "{t}");
    assert!(
        t.contains("environmentId takes the environment's ID") && t.contains("environment.list"),
        "{t}"
    );
    let t = failed(
        &client,
        "container.list",
        json!({"environmentId": "we\u{200b}b\u{1b}[31m-1"}),
    )
    .await;
    assert!(t.contains(r"`we\u200bb\u001b[31m-1`"), "{t}");
    // A path-structure refusal names the value the same way.
    let t = failed(&client, "container.get", json!({"containerId": "a/\u{0}"})).await;
    assert!(t.contains(r#"containerId "a/\u0000""#), "{t}");
    client.cancel().await.unwrap();
}

/// Found by an outside attack (docs/security.md): an invisible character in a target was refused with the value
/// quoted twice (`containerId "\\"a\\\u0000b\\""`). Once now, on the standard and the
/// flat profile alike (the flat profile's parameters arrive as JSON text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_target_is_quoted_once() {
    let sim = Sim::start().await;
    for profile in [&[][..], &["--client-profile", "flat"][..]] {
        let client = server_support::spawn(&sim.base(), sim.sim.api_key(), profile).await;
        for (v, shown) in [
            ("a\u{0}b", r#"containerId "a\u0000b" cannot be sent"#),
            (
                "web-1\r\nX: y",
                r#"containerId "web-1\u000d\u000aX: y" cannot be sent"#,
            ),
        ] {
            let params = json!({"containerId": v});
            let params = if profile.is_empty() {
                params
            } else {
                Value::String(params.to_string())
            };
            let t = server_support::err(
                &server_support::call(
                    &client,
                    "arcane_execute_action",
                    json!({"action": "container.get", "params": params}),
                )
                .await,
            );
            assert!(t.contains(shown), "{profile:?}: {t}");
            assert!(t.contains("invisible character U+"), "{profile:?}: {t}");
            assert!(!t.contains(r#"\""#), "quoted twice: {profile:?}: {t}");
        }
        client.cancel().await.unwrap();
    }
    assert!(sim.requests().await.is_empty(), "nothing is sent");
}

/// The server started in `cwd` (stdio, logs at INFO): its stderr up to the ready line.
async fn startup_log(sim: &Sim, cwd: &std::path::Path) -> String {
    let mut child = server_support::command(&sim.base(), sim.sim.api_key(), &[])
        .current_dir(cwd)
        .env("ARCANE_MCP_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            log.push_str(&line);
            log.push('\n');
            if line.contains("arcane-mcp ready") {
                return true;
            }
        }
        false
    })
    .await;
    let _ = child.start_kill();
    assert!(read == Ok(true), "no ready line within 60 s:\n{log}");
    log
}

/// A `catalog` directory in the working directory is still loaded (the default
/// `--catalog-dir`), but said at startup (WARN, the absolute directory, its files, how to
/// choose another) and by `check`; nothing is said without one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_directory_found_in_the_working_directory_is_announced() {
    let sim = Sim::start().await;
    let with = tempfile::tempdir().unwrap();
    let dir = with.path().join("catalog");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/websocket.yaml"),
        dir.join("websocket.yaml"),
    )
    .unwrap();
    let log = startup_log(&sim, with.path()).await;
    let abs = std::fs::canonicalize(&dir).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("catalog directory"))
        .unwrap_or_else(|| panic!("no word of the catalog directory:\n{log}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains(&abs.display().to_string()) || line.contains(&dir.display().to_string()),
        "{line}"
    );
    assert!(
        line.contains("1 declaration file(s) (websocket.yaml)") && line.contains("--catalog-dir"),
        "{line}"
    );

    let without = tempfile::tempdir().unwrap();
    let log = startup_log(&sim, without.path()).await;
    assert!(!log.contains("catalog directory"), "{log}");

    // `check` says it too, in the same words.
    let check = |cwd: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("check")
            .arg("--spec")
            .arg(server_support::spec_path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = check(with.path());
    assert!(
        out.contains("note: the catalog directory")
            && out.contains("1 declaration file(s) (websocket.yaml)"),
        "{out}"
    );
    assert!(!check(without.path()).contains("catalog directory"));
}
