//! The README's recipes started as the README writes them: its own text is read here (so the
//! README and the test cannot drift), then run with the real binary — the same environment
//! variables, the same flags, no extra key. Only values that must point at the test's own
//! simulator, ports and files are substituted (each substitution is listed in the test, and one
//! that no longer matches the README fails it): Arcane's URL, the public URL's host and port,
//! the listening port, the host name clients use, file paths. `HOME` is a scratch folder, so the
//! catalog cache a recipe writes is the test's, not the user's.
//!
//! Here: the stdio recipe, the team recipe (HTTP with tokens) and sign-in with Arcane
//! (`--oauth-issuer self`); the identity-provider recipe needs a real OpenID provider and is in
//! the end-to-end group (`e2e_oauth::the_readme_identity_provider_recipe_starts_as_written`).
//! Beside them, what those modes refuse at startup, and what they say.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::process_support::{BIN, free_port, post_call_2026, repo};
use crate::server_support::{Sim, call, ok, spec_path, text};

/// The fenced block of README.md that holds `marker` (exactly one does).
pub(crate) fn readme_block(marker: &str) -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(String::new()),
            }
            continue;
        }
        if let Some(b) = current.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    let found: Vec<String> = blocks.into_iter().filter(|b| b.contains(marker)).collect();
    assert_eq!(
        found.len(),
        1,
        "one README block holds {marker:?}: {found:?}"
    );
    found.into_iter().next().unwrap()
}

/// One command of a shell recipe: its environment (`export`ed before it, or `NAME=value`
/// before the program), the program, its arguments and where its output goes (`> FILE`).
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub env: BTreeMap<String, String>,
    pub program: String,
    pub args: Vec<String>,
    pub into: Option<String>,
}

/// The commands of a shell block: continuations (`\`) joined, comments dropped. The README's
/// recipes quote nothing, so words are split at blanks; a quote fails the parse rather than
/// being read wrong.
pub(crate) fn shell_lines(block: &str) -> Vec<Line> {
    let mut logical = Vec::new();
    let mut pending = String::new();
    for raw in block.lines() {
        let line = match raw.find(" #") {
            Some(at) => &raw[..at],
            None => raw,
        };
        let line = line.trim_end();
        match line.strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
            }
            None => {
                pending.push_str(line);
                if !pending.trim().is_empty() {
                    logical.push(std::mem::take(&mut pending));
                }
                pending.clear();
            }
        }
    }
    let mut exported = BTreeMap::new();
    let mut out = Vec::new();
    for l in logical {
        assert!(!l.contains(['"', '\'', '$']), "a recipe line to parse: {l}");
        let words: Vec<&str> = l.split_whitespace().collect();
        if words[0] == "export" {
            let (k, v) = words[1].split_once('=').expect("export NAME=value");
            exported.insert(k.to_string(), v.to_string());
            continue;
        }
        let mut env = exported.clone();
        let mut rest = words.as_slice();
        while let Some((k, v)) = rest.first().and_then(|w| w.split_once('=')) {
            env.insert(k.to_string(), v.to_string());
            rest = &rest[1..];
        }
        let mut args: Vec<String> = rest[1..].iter().map(|s| s.to_string()).collect();
        let into = match args.iter().position(|a| a == ">") {
            Some(at) => {
                let file = args[at + 1].clone();
                args.truncate(at);
                Some(file)
            }
            None => None,
        };
        out.push(Line {
            env,
            program: rest[0].to_string(),
            args,
            into,
        });
    }
    out
}

/// Whole values of a recipe replaced by the test's own; each must be used at least once.
pub(crate) struct Subs {
    pairs: Vec<(String, String)>,
    used: Mutex<Vec<bool>>,
}

impl Subs {
    pub(crate) fn new(pairs: &[(&str, String)]) -> Subs {
        Subs {
            pairs: pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.clone()))
                .collect(),
            used: Mutex::new(vec![false; pairs.len()]),
        }
    }

    pub(crate) fn of(&self, value: &str) -> String {
        match self.pairs.iter().position(|(a, _)| a == value) {
            Some(i) => {
                self.used.lock().unwrap()[i] = true;
                self.pairs[i].1.clone()
            }
            None => value.to_string(),
        }
    }

    /// Fails when a substitution matched nothing: the README changed under the test.
    pub(crate) fn all_used(&self) {
        let used = self.used.lock().unwrap();
        let unused: Vec<&str> = self
            .pairs
            .iter()
            .zip(used.iter())
            .filter(|(_, u)| !**u)
            .map(|((a, _), _)| a.as_str())
            .collect();
        assert!(
            unused.is_empty(),
            "values the test substitutes are no longer in the README recipe: {unused:?}"
        );
    }
}

/// The scratch `HOME` of the recipes (the catalog cache goes under it), shared by them.
fn home() -> std::path::PathBuf {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("recipes-home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// The binary, as the recipe runs `arcane-mcp`: its environment only (plus `PATH`, `HOME` and
/// what `extra` names for the recipe's other files), values substituted.
pub(crate) fn command(line: &Line, subs: &Subs, extra: &[(&str, &str)]) -> tokio::process::Command {
    assert_eq!(line.program, "arcane-mcp", "{line:?}");
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.current_dir(repo())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home())
        .args(line.args.iter().map(|a| subs.of(a)))
        .kill_on_drop(true);
    for (k, v) in &line.env {
        cmd.env(k, subs.of(v));
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// A recipe's HTTP server, killed when dropped; its log kept for failures.
pub(crate) struct Served {
    _child: tokio::process::Child,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `cmd` and waits for the line that says it listens; panics with its log if it
    /// exits first.
    pub(crate) async fn start(mut cmd: tokio::process::Command) -> Served {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("arcane-mcp spawns");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let serving = crate::fixtures::guarded(async {
            while let Some(l) = lines.next_line().await.unwrap() {
                let mut log = log.lock().unwrap();
                log.push_str(&l);
                log.push('\n');
                if l.contains("serving MCP over Streamable HTTP") {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            serving,
            "the recipe's server exited before serving:\n{}",
            log.lock().unwrap()
        );
        // Read on, so a full pipe never blocks the server.
        let keep = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                let mut log = keep.lock().unwrap();
                log.push_str(&l);
                log.push('\n');
            }
        });
        Served { _child: child, log }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

/// The users the simulator saw calling (sign-in requests left out).
pub(crate) async fn users_seen(sim: &Sim) -> Vec<String> {
    sim.requests()
        .await
        .iter()
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or("");
            !path.starts_with("/api/auth/") && path != "/api/openapi.json"
        })
        .map(|r| r["user"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// "Use it with your Arcane": the two variables exported, then `catalog`, `call` and the
/// server on stdio, which an MCP client uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_stdio_recipe_runs_as_written() {
    let sim = Sim::start().await;
    let lines = shell_lines(&readme_block("export ARCANE_URL="));
    let subs = Subs::new(&[
        ("https://arcane.example.com", sim.base()),
        ("arc_xxxxxxxx", sim.sim.api_key().to_string()),
    ]);
    let programs: Vec<Vec<&str>> = lines
        .iter()
        .map(|l| l.args.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        programs,
        [vec!["catalog"], vec!["call", "container.list"], vec![]]
    );
    let catalog = command(&lines[0], &subs, &[]).output().await.unwrap();
    let printed = String::from_utf8_lossy(&catalog.stdout);
    assert!(
        catalog.status.success()
            && printed.contains("actions in")
            && printed.contains("container "),
        "{printed}\n{}",
        String::from_utf8_lossy(&catalog.stderr)
    );
    let listed = command(&lines[1], &subs, &[]).output().await.unwrap();
    let printed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && printed.contains("web-1"),
        "{printed}\n{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(command(&lines[2], &subs, &[]))
            .stderr(Stdio::null())
            .spawn()
            .expect("arcane-mcp spawns");
    let client = crate::fixtures::guarded(().serve(transport))
        .await
        .expect("an MCP session over stdio");
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {}}),
    )
    .await;
    ok(&r);
    assert!(text(&r).contains("web-1"), "{}", text(&r));
    subs.all_used();
    let _ = client.cancel().await;
}

/// "Serve a team over HTTP": the compose service's command and environment, each user's key
/// in `X-Arcane-API-Key` beside the bearer token, as the client line sends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_team_recipe_runs_as_written() {
    use arcane_sim::{SimRole, SimUser};
    let sim = Sim::start_with_users(vec![SimUser {
        name: "carol".into(),
        key: "carol-key".into(),
        role: SimRole::Admin,
        password: None,
    }])
    .await;
    let compose: Value =
        yaml_serde::from_str(&readme_block("ARCANE_MCP_ARCANE_KEY_SOURCE: client")).unwrap();
    let service = &compose["services"]["arcane-mcp"];
    let args: Vec<String> = service["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let env: BTreeMap<String, String> = service["environment"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(service["secrets"], json!(["mcp_tokens"]));
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("mcp_tokens");
    std::fs::write(&tokens, "team-token-0123456789\n").unwrap();
    let audit = dir.path().join("audit.jsonl");
    let port = free_port();
    let subs = Subs::new(&[
        ("http://arcane:3552", sim.base()),
        ("0.0.0.0:8000", format!("0.0.0.0:{port}")),
        ("/run/secrets/mcp_tokens", tokens.display().to_string()),
        (
            "/var/log/arcane-mcp/audit.jsonl",
            audit.display().to_string(),
        ),
    ]);
    let line = Line {
        env,
        program: "arcane-mcp".into(),
        args,
        into: None,
    };
    let served = Served::start(command(&line, &subs, &[])).await;
    subs.all_used();
    // The client reaches it by the name the recipe allows (`mcp.example.com`), here on
    // loopback.
    let http = reqwest::Client::builder()
        .resolve(
            "mcp.example.com",
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        )
        .build()
        .unwrap();
    let post = |key: Option<&'static str>| {
        let mut r = http
            .post(format!("http://mcp.example.com:{port}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "arcane_execute_action")
            .bearer_auth("team-token-0123456789")
            .body(call_2026("container.list").to_string());
        if let Some(k) = key {
            r = r.header("x-arcane-api-key", k);
        }
        async move {
            let r = r.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, body) = post(Some("carol-key")).await;
    assert_eq!(status, 200, "{body}\n{}", served.log());
    assert!(body.contains("web-1"), "{body}");
    assert_eq!(users_seen(&sim).await, ["carol"]);
    // Without the user's key the gate says what to send.
    let (status, body) = post(None).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("X-Arcane-API-Key"), "{body}");
}

/// A sessionless 2026-07-28 `tools/call` of `arcane_execute_action` for `action`.
fn call_2026(action: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {
            "name": "arcane_execute_action",
            "arguments": {"action": action, "params": {}},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "recipe", "version": "1"}
            }
        }
    })
}

/// The state key file of a recipe's `openssl rand -hex 32 > FILE` line, made as that command
/// makes it (64 hexadecimal digits and a newline) at the test's own path.
pub(crate) fn write_state_key(line: &Line, subs: &Subs) {
    assert_eq!(
        (line.program.as_str(), line.args.as_slice()),
        ("openssl", &["rand", "-hex", "32"].map(String::from)[..]),
        "{line:?}"
    );
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).unwrap();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(subs.of(line.into.as_deref().unwrap()), hex + "\n").unwrap();
}

/// "Sign in with your Arcane account": the key file made, the server started with the
/// recipe's variables and flags — no key of its own —, a person signs in with their Arcane
/// password and calls with the key made for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_sign_in_with_arcane_recipe_starts_without_a_key() {
    let sim = crate::oauth_self::sim_with_people().await;
    let lines = shell_lines(&readme_block("ARCANE_MCP_OAUTH_ISSUER=self"));
    assert_eq!(lines.len(), 2, "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let subs = Subs::new(&[
        ("https://arcane.example.com", sim.base()),
        ("https://mcp.example.com", public.clone()),
        ("0.0.0.0:8000", format!("0.0.0.0:{port}")),
        ("mcp.example.com", "127.0.0.1".into()),
        ("/etc/arcane-mcp/state.key", key_file.display().to_string()),
    ]);
    write_state_key(&lines[0], &subs);
    // Owner-only, as a key file should be (the server warns otherwise).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let served = Served::start(command(&lines[1], &subs, &[])).await;
    subs.all_used();
    let client = crate::oauth_self::client_id(&public, "claude.ai").await;
    let (code, verifier) =
        crate::oauth_self::code_for(&public, &client, &crate::oauth_self::PASSWORD).await;
    let (status, tokens) = crate::oauth_self::exchange(&public, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}\n{}", served.log());
    let access = tokens["access_token"].as_str().unwrap();
    let (status, _, body) =
        post_call_2026(&public, access, "claude.ai", "container.list", json!({})).await;
    assert_eq!(status, 200, "{body}\n{}", served.log());
    assert!(body.contains("web-1"), "{body}");
    // The call ran as the person who signed in: the server has no key to run it with.
    assert_eq!(users_seen(&sim).await, ["alice"]);
}

/// Runs the binary with `args` and `env` only (spec given, so nothing is fetched); its exit
/// status and stderr.
fn start_fails(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(BIN)
        .current_dir(repo())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home())
        .args(["--arcane-url", "http://127.0.0.1:9", "--spec"])
        .arg(spec_path())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} started: {err}");
    err
}

/// Without a key of its own the server starts only where every caller brings one; where some
/// caller would run with the server's key it refuses, saying who and what to set.
#[test]
fn without_a_key_only_modes_that_would_use_one_are_refused() {
    let http = ["--transport", "http", "--listen", "127.0.0.1:0"];
    let tokens = [("ARCANE_MCP_AUTH_TOKEN", "a-token-0123456789")];
    for (args, env, says) in [
        (
            vec![],
            &[][..],
            "Set ARCANE_API_KEY (--api-key; create one in Arcane under Settings → API Keys) or \
             ARCANE_TOKEN (--token)",
        ),
        (
            http.to_vec(),
            &tokens[..],
            "Callers with a bearer token of ARCANE_MCP_AUTH_TOKEN or --auth-token-file run \
             with the server's own key",
        ),
        (
            [&http[..], &["--arcane-key-source", "either"]].concat(),
            &tokens[..],
            "ARCANE_MCP_ARCANE_KEY_SOURCE=client so that each caller sends its own key",
        ),
        (
            [
                &http[..],
                &["--oauth-issuer", "https://idp.example.com"],
                &["--public-url", "https://mcp.example.com"],
            ]
            .concat(),
            &[][..],
            "ARCANE_MCP_OAUTH_USERS (--oauth-users) to give each person a key",
        ),
        (
            // Static tokens beside sign-in with Arcane run with the server's key.
            [
                &http[..],
                &["--oauth-issuer", "self"],
                &["--public-url", "https://mcp.example.com"],
            ]
            .concat(),
            &tokens[..],
            "Callers with a bearer token of ARCANE_MCP_AUTH_TOKEN",
        ),
    ] {
        let err = start_fails(&args, env);
        assert!(
            err.contains("no Arcane credential was given"),
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("********"), "nothing is masked: {err}");
    }
}

/// A state key file that is not text (raw bytes, as `openssl rand 32` without `-hex` writes)
/// is named, with the command that makes a good one.
#[test]
fn a_state_key_file_of_raw_bytes_says_what_it_should_hold() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.key");
    std::fs::write(&file, [0xffu8, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x9a, 0x10]).unwrap();
    let file = file.to_str().unwrap();
    let err = start_fails(
        &[
            "--api-key",
            "a-key-0123456789",
            "--transport",
            "http",
            "--listen",
            "127.0.0.1:0",
            "--allow-unauthenticated",
        ],
        &[("ARCANE_MCP_STATE_KEY_FILE", file)],
    );
    assert!(err.contains(file), "{err}");
    assert!(err.contains("openssl rand -hex 32"), "{err}");
    assert!(err.contains("64 hexadecimal digits"), "{err}");
    assert!(!err.contains("UTF-8"), "{err}");
}

/// What OAuth mode refuses at startup, with what to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_settings_are_checked_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let bad_users = dir.path().join("users.yaml");
    std::fs::write(
        &bad_users,
        "users:\n  - match: {sub: a}\n    arcaneKeyEnv: K\n    colour: red\n",
    )
    .unwrap();
    let bad_users = bad_users.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--oauth-issuer", "https://idp.example.com"],
            "--oauth-issuer needs --public-url",
        ),
        (
            vec![
                "--oauth-issuer",
                "https://idp.example.com",
                "--public-url",
                "http://mcp.example.com",
            ],
            "must be https://",
        ),
        (
            vec![
                "--oauth-issuer",
                "http://idp.example.com",
                "--public-url",
                "https://mcp.example.com",
            ],
            "--oauth-issuer http://idp.example.com must be an https:// URL",
        ),
        (
            vec!["--oauth-users", bad_users],
            "--oauth-users needs --oauth-issuer",
        ),
        (
            vec![
                "--oauth-issuer",
                "https://idp.example.com",
                "--public-url",
                "https://mcp.example.com",
                "--oauth-users",
                bad_users,
            ],
            "users.yaml:4:",
        ),
        (
            vec![
                "--oauth-issuer",
                "self",
                "--public-url",
                "https://mcp.example.com",
                "--state-key-file",
                bad_users,
            ],
            "holds neither 64 hexadecimal digits nor base64",
        ),
        (
            vec![
                "--oauth-issuer",
                "self",
                "--public-url",
                "https://mcp.example.com",
                "--oauth-users",
                bad_users,
            ],
            "are for an outside identity provider",
        ),
        (
            // Read in every HTTP mode (it seals the confirmations' request states too).
            vec!["--state-key-file", bad_users],
            "holds neither 64 hexadecimal digits nor base64",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .current_dir(repo())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args([
                "--arcane-url",
                "http://127.0.0.1:9",
                "--api-key",
                "k",
                "--spec",
            ])
            .arg(spec_path())
            .args(["--transport", "http", "--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
