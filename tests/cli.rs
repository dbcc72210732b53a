//! The command line, logs and packaging, through the real binary: `demo`, `call`, `find`, what
//! the logs may contain at any level, an MCP client in another language (the Python SDK), and
//! the distribution files (Dockerfile, server.json, manifest.json, release workflow).

use crate::server_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use server_support::{Sim, call, spec_path, text};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_arcane-mcp");

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with a clean environment (PATH only), in `dir`.
fn cmd_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args)
        .stdin(Stdio::null());
    c
}

/// `arcane-mcp demo …` on the test spec.
fn demo(args: &[&str]) -> Output {
    let mut full = vec!["demo"];
    full.extend_from_slice(args);
    cmd_in(&repo(), &full)
        .env("ARCANE_MCP_SPEC", spec_path())
        .output()
        .expect("arcane-mcp runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// ---- demo, call, find ----------------------------------------------------------------------

#[test]
fn demo_call_prints_the_demo_containers_table() {
    let out = demo(&["call", "container.list"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("# List containers"), "{text}");
    assert!(text.contains("7 item(s)"), "{text}");
    for name in ["web-1", "db-1", "api-1"] {
        assert!(text.contains(&format!("| {name} |")), "{name} in {text}");
    }
    assert!(text.contains("**Next steps**"), "{text}");
    assert!(
        !stderr(&out).contains("\x1b["),
        "no colour codes off a terminal"
    );
}

/// Found by an outside attack: an exclusion that names nothing (a misspelt ID) left the action
/// it meant served, with only a warning. It is refused now, naming the closest IDs.
#[test]
fn an_exclusion_that_names_nothing_is_refused_at_startup() {
    let out = demo(&[
        "--exclude-tools",
        "Container.Delete",
        "call",
        "container.list",
    ]);
    assert_eq!(out.status.code(), Some(2), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("Container.Delete") && err.contains("container.delete"),
        "{err}"
    );
    assert!(err.contains("would be served"), "{err}");
    let out = demo(&[
        "--exclude-tools",
        "container.delete",
        "call",
        "container.list",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
}

/// A key with a line break in it is a bad setting, said at startup — not an error of every
/// call's parameters.
#[test]
fn a_credential_with_a_line_break_is_refused_at_startup() {
    let out = cmd_in(&repo(), &["call", "container.list"])
        .env("ARCANE_URL", "http://127.0.0.1:9")
        .env("ARCANE_API_KEY", "arc_first\nsecond")
        .env("ARCANE_MCP_SPEC", spec_path())
        .output()
        .expect("arcane-mcp runs");
    assert_eq!(out.status.code(), Some(2), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ARCANE_API_KEY") && err.contains("line break"),
        "{err}"
    );
    assert!(!err.contains("arc_first"), "the key is not repeated: {err}");
}

/// A read whose purpose is to hand out a credential is recorded like a change: who took the
/// swarm's join tokens is the audit log's business.
#[test]
fn a_credential_reveal_is_written_to_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let out = demo(&[
        "--audit-log",
        log.to_str().unwrap(),
        "call",
        "swarm.join_tokens",
        "--confirm",
    ]);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.lines().any(|l| l.contains("\"swarm.join_tokens\"")),
        "exit {:?}, stdout {}, log {text}",
        out.status.code(),
        stdout(&out)
    );
}

#[test]
fn demo_call_json_params_and_exit_codes() {
    // --json prints structuredContent; --param fills the action's parameters.
    let out = demo(&[
        "call",
        "container.get",
        "--param",
        "containerId=web-1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("--json prints JSON");
    assert_eq!(v["name"], "web-1");
    assert!(stderr(&out).contains("arcane://environment/0/container/web-1"));

    // A typed parameter from --params JSON, overridden by --param.
    let out = demo(&[
        "call",
        "container.list",
        "--params",
        r#"{"limit": 50}"#,
        "--param",
        "limit=2",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("2 item(s)"), "{}", stdout(&out));

    // A destructive call without --confirm is an error result: exit 1, nothing sent.
    let out = demo(&["call", "container.delete", "--param", "containerId=web-1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("Nothing was sent"),
        "{}",
        stdout(&out)
    );

    // An unknown action answers as the model would see it.
    let out = demo(&["call", "container.lst"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("container.list"), "{}", stdout(&out));

    // Broken local input is a usage error (exit 2) that says what to do.
    let out = demo(&["call", "container.list", "--params", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--params"), "{}", stderr(&out));
    let out = demo(&["call", "container.list", "--param", "novalue"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("NAME=VALUE"), "{}", stderr(&out));
}

#[test]
fn demo_call_speaks_as_the_chosen_surface_and_find_searches() {
    let out = demo(&["call", "container.list", "--tool-surface", "individual"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).contains("`arcane_container_get`"),
        "next steps named as the individual surface: {}",
        stdout(&out)
    );

    // A stream's progress goes to stderr as it comes; the summary is the result.
    let out = demo(&[
        "call",
        "image.pull",
        "--param",
        "imageName=nginx",
        "--param",
        "tag=1.27",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("Completed."), "{}", stdout(&out));
    assert!(stderr(&out).contains("[1] "), "progress: {}", stderr(&out));
    assert!(!stdout(&out).contains("[1] "), "progress stays off stdout");

    let out = demo(&["find", "restart", "container"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let first = text.lines().nth(1).unwrap_or_default();
    assert!(first.contains("container.restart"), "{text}");
}

/// A fresh install has no spec file anywhere: `demo` serves Arcane 2.8.0's document built into
/// the binary, from any directory, and prints what it prints with the repository's copy.
#[test]
fn demo_without_a_spec_serves_the_builtin_document_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = cmd_in(dir.path(), &["demo", "call", "container.list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let builtin = stdout(&out);
    assert!(builtin.starts_with("# List containers"), "{builtin}");
    for name in ["| web-1 |", "| db-1 |", "| backup-1 |"] {
        assert!(builtin.contains(name), "{name} in {builtin}");
    }
    // The same text as with the repository's copy of the document, before or after the
    // subcommand: `--spec` still chooses the document.
    let spec = spec_path();
    let spec = spec.to_str().unwrap();
    for args in [
        ["demo", "--spec", spec, "call", "container.list"],
        ["demo", "call", "container.list", "--spec", spec],
    ] {
        let out = cmd_in(dir.path(), &args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), builtin, "{args:?}");
    }
    // --spec overrides the built-in document: one that does not exist is an error naming it.
    let out = cmd_in(
        dir.path(),
        &["demo", "--spec", "missing.json", "call", "container.list"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.json"), "{}", stderr(&out));
    // So does a document pinned in the catalog directory, as for the server.
    std::fs::create_dir(dir.path().join("catalog")).unwrap();
    std::fs::write(
        dir.path().join("catalog/openapi.json"),
        "{\"openapi\": \"3.1.0\"}",
    )
    .unwrap();
    let out = cmd_in(dir.path(), &["demo", "call", "container.list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("catalog/openapi.json") && err.contains("paths"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_prints_exactly_the_text_an_mcp_client_gets() {
    let sim = Sim::start().await;
    let key = sim.sim.api_key().to_string();
    let spec = spec_path();
    let out = tokio::process::Command::new(BIN)
        .current_dir(repo())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["call", "container.get", "--param", "containerId=db-1"])
        .args(["--arcane-url", &sim.base(), "--api-key", &key])
        .arg("--spec")
        .arg(&spec)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let client = server_support::spawn(&sim.base(), &key, &[]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.get", "params": {"containerId": "db-1"}}),
    )
    .await;
    assert_eq!(stdout(&out).trim_end(), text(&r).trim_end());
    client.cancel().await.unwrap();
}

// ---- logs -----------------------------------------------------------------------------------

/// Spawns the server against the simulator with extra environment, and returns the client and
/// a task collecting its stderr.
async fn spawn_logged(
    sim: &Sim,
    url: &str,
    key: &str,
    env: &[(&str, &str)],
) -> (
    server_support::Client,
    tokio::task::JoinHandle<String>,
    String,
) {
    let _ = sim;
    let mut cmd = server_support::command(url, key, &[]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, err) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("arcane-mcp spawns");
    let mut err = err.expect("stderr piped");
    let collect = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut err, &mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    });
    let client = ().serve(transport).await.expect("MCP session starts");
    (client, collect, key.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_level_prints_arguments_results_or_credentials() {
    const KEY: &str = "arc_planted_key_5f1d2c9e";
    const ENV_SECRET: &str = "planted-env-value-81c3";
    const ARG_SECRET: &str = "planted-argument-4b7a";
    arcane_engine::ensure_crypto_provider();
    let mut cfg = arcane_sim::SimConfig::new(spec_path());
    cfg.api_key = KEY.to_string();
    let sim = Sim {
        sim: arcane_sim::start(cfg).await.unwrap(),
        http: reqwest::Client::new(),
    };
    let (client, stderr_task, _) =
        spawn_logged(&sim, &sim.base(), KEY, &[("ARCANE_MCP_LOG", "trace")]).await;

    let created = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.create", "params": {
            "image": "nginx:1.27-alpine", "name": "leaky-1",
            "env": [format!("DB_PASSWORD={ENV_SECRET}")],
            "labels": {"note": ARG_SECRET}
        }, "confirm": true}),
    )
    .await;
    assert_ne!(created.is_error, Some(true), "{}", text(&created));
    // The secret comes back in a result body (the container's env) …
    let got = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.get", "params": {"containerId": "leaky-1"}}),
    )
    .await;
    let sc = serde_json::to_string(&got.structured_content).unwrap();
    assert!(
        sc.contains(ENV_SECRET),
        "the result carries the planted env value"
    );
    // … and the WebSocket handshake carries the key.
    let logs = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.logs", "params": {"containerId": "web-1"}}),
    )
    .await;
    assert_ne!(logs.is_error, Some(true), "{}", text(&logs));
    client.cancel().await.unwrap();
    let log = tokio::time::timeout(std::time::Duration::from_secs(20), stderr_task)
        .await
        .expect("the server exits when the client leaves")
        .unwrap();

    // The logs ran at trace: our own lines are there.
    assert!(log.contains("ready"), "startup line in {log}");
    assert!(log.contains("tools/call"), "debug lines in {log}");
    for secret in [KEY, ENV_SECRET, ARG_SECRET] {
        assert!(
            !log.contains(secret),
            "{secret} leaked into the logs:\n{log}"
        );
    }
    assert!(
        !log.contains("\x1b["),
        "colour codes off a terminal:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_have_one_startup_line_with_a_masked_url() {
    let sim = Sim::start().await;
    let key = sim.sim.api_key().to_string();
    let url = sim
        .base()
        .replace("http://", "http://operator:planted-url-password@");
    let (client, stderr_task, _) = spawn_logged(
        &sim,
        &url,
        &key,
        &[
            ("ARCANE_MCP_LOG", "info"),
            ("ARCANE_MCP_LOG_FORMAT", "json"),
        ],
    )
    .await;
    let tools = server_support::tools(&client).await;
    assert_eq!(tools.len(), 2);
    client.cancel().await.unwrap();
    let log = tokio::time::timeout(std::time::Duration::from_secs(20), stderr_task)
        .await
        .unwrap()
        .unwrap();
    assert!(!log.contains("planted-url-password"), "{log}");
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let ready: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["arcane_version"].is_string())
        .collect();
    assert_eq!(ready.len(), 1, "one startup line in {log}");
    let f = &ready[0]["fields"];
    assert_eq!(f["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(f["arcane_version"], "2.8.0");
    assert_eq!(f["surface"], "dynamic");
    assert_eq!(f["read_only"], false);
    assert_eq!(f["safe_mode"], false);
    assert!(f["actions"].as_u64().unwrap() > 300, "{f}");
    let shown = f["url"].as_str().unwrap();
    assert!(
        shown.starts_with("http://operator:***@127.0.0.1:"),
        "{shown}"
    );
    assert_eq!(ready[0]["level"], "INFO");
}

// ---- packaging ------------------------------------------------------------------------------

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn cargo_toml() -> Value {
    toml_like(&read("Cargo.toml"))
}

/// The few Cargo.toml facts the packaging checks need, read line by line (no TOML crate in
/// the tree): `[package] name`, `version`, `default-run`, `[features]` and whether
/// `arcane-sim` is an optional dependency.
fn toml_like(text: &str) -> Value {
    let mut section = String::new();
    let mut out = json!({"package": {}, "features": {}, "optional": []});
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match section.as_str() {
            "package" => {
                out["package"][k] = Value::String(v.trim_matches('"').to_string());
            }
            "features" => {
                let items: Vec<String> = v
                    .trim_matches(['[', ']'])
                    .split(',')
                    .map(|s| s.trim().trim_matches('"').to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                out["features"][k] = json!(items);
            }
            "dependencies" if v.contains("optional = true") => {
                out["optional"].as_array_mut().unwrap().push(json!(k));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn cargo_install_builds_the_server_with_the_demo() {
    let t = cargo_toml();
    assert_eq!(t["package"]["name"], "arcane-mcp");
    assert_eq!(t["package"]["default-run"], "arcane-mcp");
    assert_eq!(t["features"]["default"], json!(["demo"]));
    assert_eq!(t["features"]["demo"], json!(["dep:arcane-sim"]));
    assert!(
        t["optional"]
            .as_array()
            .unwrap()
            .contains(&json!("arcane-sim"))
    );
}

/// Dockerfile instructions with line continuations joined: (keyword, arguments).
fn dockerfile() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        let t = line.trim();
        if current.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (kw, rest) = current.split_once(' ').unwrap_or((&current, ""));
        out.push((kw.to_ascii_uppercase(), rest.trim().to_string()));
        current.clear();
    }
    out
}

#[test]
fn dockerfile_lint() {
    let ins = dockerfile();
    let known = [
        "FROM",
        "RUN",
        "COPY",
        "WORKDIR",
        "ENV",
        "USER",
        "ENTRYPOINT",
        "CMD",
        "ARG",
        "LABEL",
        "EXPOSE",
    ];
    for (kw, _) in &ins {
        assert!(known.contains(&kw.as_str()), "unknown instruction {kw}");
    }
    // Stages: a named build stage, and the final stage last.
    let froms: Vec<&String> = ins
        .iter()
        .filter(|(k, _)| k == "FROM")
        .map(|(_, a)| a)
        .collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    let mut stages = Vec::new();
    for from in &froms {
        let mut words = from.split_whitespace();
        let image = words.next().unwrap();
        if image != "scratch" {
            let (_, tag) = image
                .rsplit_once(':')
                .unwrap_or_else(|| panic!("{image}: pin the base image's version"));
            assert!(
                tag != "latest" && tag.chars().any(|c| c.is_ascii_digit()),
                "{image}: pin a version, not {tag}"
            );
        }
        if let (Some(as_kw), Some(name)) = (words.next(), words.next()) {
            assert!(as_kw.eq_ignore_ascii_case("as"));
            stages.push(name.to_string());
        }
    }
    // The final stage runs as a non-root user, with an exec-form entrypoint (no shell).
    let last_from = ins.iter().rposition(|(k, _)| k == "FROM").unwrap();
    let last = &ins[last_from..];
    let user = last
        .iter()
        .rev()
        .find(|(k, _)| k == "USER")
        .map(|(_, a)| a.clone())
        .expect("the final stage sets USER");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "root" && uid != "0", "non-root USER, got {user}");
    let entry = last
        .iter()
        .find(|(k, _)| k == "ENTRYPOINT")
        .map(|(_, a)| a.clone())
        .expect("ENTRYPOINT");
    let entry: Vec<String> = serde_json::from_str(&entry).expect("exec-form ENTRYPOINT");
    assert!(
        !last.iter().any(|(k, _)| k == "RUN"),
        "the final stage needs no shell"
    );
    // No secrets baked in.
    for (kw, args) in &ins {
        if kw == "ENV" || kw == "ARG" {
            let upper = args.to_ascii_uppercase();
            for s in ["API_KEY", "TOKEN", "PASSWORD", "SECRET"] {
                assert!(!upper.contains(s), "{kw} {args} bakes a secret");
            }
        }
    }
    // Every path copied from the context exists in the repository.
    for (kw, args) in &ins {
        if kw != "COPY" || args.contains("--from=") {
            continue;
        }
        let parts: Vec<&str> = args
            .split_whitespace()
            .filter(|p| !p.starts_with("--"))
            .collect();
        for src in &parts[..parts.len() - 1] {
            assert!(
                repo().join(src).exists(),
                "COPY {src}: not in the repository"
            );
        }
    }
    // COPY --from names a stage.
    for (kw, args) in &ins {
        if let Some(rest) = args.strip_prefix("--from=").filter(|_| kw == "COPY") {
            let stage = rest.split_whitespace().next().unwrap();
            assert!(stages.iter().any(|s| s == stage), "COPY --from={stage}");
        }
    }
    // The build command builds this crate's binary with its default features, locked.
    let t = cargo_toml();
    let bin = t["package"]["name"].as_str().unwrap();
    let build = ins
        .iter()
        .find(|(k, a)| k == "RUN" && a.contains("cargo build"))
        .map(|(_, a)| a.clone())
        .expect("a cargo build step");
    for flag in ["--release", "--locked", &format!("--bin {bin}")] {
        assert!(build.contains(flag), "{flag} in {build}");
    }
    if let Some(f) = build.split("--features ").nth(1) {
        for feat in f.split_whitespace().next().unwrap().split(',') {
            assert!(t["features"].get(feat).is_some(), "feature {feat}");
        }
    }
    // The binary the final stage runs is the one built.
    assert!(build.contains(&format!("target/release/{bin}")), "{build}");
    let copied = last
        .iter()
        .filter(|(k, a)| k == "COPY" && a.contains(&format!("/{bin}")))
        .map(|(_, a)| a.split_whitespace().last().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(copied.contains(&entry[0]), "{copied:?} vs {entry:?}");
    // Every file the crate compiles in is copied into the build stage.
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "sim",
        "benches",
        "catalog",
        "overrides",
        "schemas",
        "third_party",
    ] {
        assert!(
            ins.iter()
                .any(|(k, a)| k == "COPY" && a.split_whitespace().any(|w| w == needed)),
            "COPY {needed}"
        );
    }
}

/// The shipped binary carries no debug info, and its licences go with it: the MIT licence, and
/// Arcane's BSD-3 notice for the OpenAPI document compiled into it (the demo's).
#[test]
fn release_builds_are_stripped_and_ship_both_licences() {
    let cargo = read("Cargo.toml");
    let section = |name: &str| -> Vec<String> {
        cargo
            .lines()
            .skip_while(|l| l.trim() != format!("[{name}]"))
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .map(|l| l.split('#').next().unwrap().replace(' ', ""))
            .filter(|l| !l.is_empty())
            .collect()
    };
    let release = section("profile.release");
    assert!(release.contains(&"strip=true".to_string()), "{release:?}");
    assert!(release.contains(&"debug=false".to_string()), "{release:?}");
    let profiling = section("profile.profiling");
    for want in ["inherits=\"release\"", "debug=true"] {
        assert!(profiling.contains(&want.to_string()), "{profiling:?}");
    }
    let mit = read("LICENSE");
    assert!(mit.starts_with("MIT License"), "{mit}");
    assert!(mit.contains("the arcane-mcp authors"));
    assert!(
        mit.contains("third_party/arcane/LICENSE"),
        "names the third-party notice"
    );
    let bsd = read("third_party/arcane/LICENSE");
    assert!(bsd.starts_with("BSD 3-Clause License"));
    // The image: both files in the final stage.
    let ins = dockerfile();
    let last = &ins[ins.iter().rposition(|(k, _)| k == "FROM").unwrap()..];
    for src in ["LICENSE", "third_party/arcane/LICENSE"] {
        assert!(
            last.iter()
                .any(|(k, a)| k == "COPY" && a.split_whitespace().next() == Some(src)),
            "the image ships {src}"
        );
    }
    // The release archives: scripts/dist.sh makes them, on every release runner.
    let wf = read(".github/workflows/release.yml");
    assert!(
        wf.contains("scripts/dist.sh --target"),
        "the release packs with dist.sh"
    );
    let dist = read("scripts/dist.sh");
    assert!(
        dist.contains("cp README.md LICENSE \"$STAGE/$name/\""),
        "archives ship LICENSE"
    );
    assert!(
        dist.contains("cp third_party/arcane/LICENSE \"$STAGE/$name/LICENSE-arcane\""),
        "archives ship Arcane's notice"
    );
}

/// The requirements of the MCP registry's server.json schema (2025-12-11) that this file
/// uses, written as a JSON Schema (the published one cannot be fetched in CI).
fn registry_schema() -> Value {
    let input = json!({
        "type": "object",
        "required": ["name", "description"],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "description": {"type": "string", "minLength": 1},
            "isRequired": {"type": "boolean"},
            "isSecret": {"type": "boolean"},
            "format": {"enum": ["string", "number", "boolean", "filepath"]},
            "default": {"type": "string"},
            "value": {"type": "string"},
            "choices": {"type": "array", "items": {"type": "string"}}
        },
        "additionalProperties": false
    });
    json!({
        "type": "object",
        "required": ["$schema", "name", "description", "version"],
        "properties": {
            "$schema": {"const": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"},
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", "minLength": 3, "maxLength": 200},
            "description": {"type": "string", "minLength": 1, "maxLength": 100},
            "version": {"type": "string", "maxLength": 255, "not": {"pattern": "^[\\^~><=]|[xX*]$|latest"}},
            "repository": {
                "type": "object", "required": ["url", "source"],
                "properties": {"url": {"type": "string", "pattern": "^https://"}, "source": {"type": "string"}}
            },
            "websiteUrl": {"type": "string", "pattern": "^https?://"},
            "packages": {"type": "array", "items": {
                "type": "object",
                "required": ["registryType", "identifier", "transport"],
                "additionalProperties": false,
                "properties": {
                    "registryType": {"enum": ["npm", "pypi", "oci", "nuget", "mcpb"]},
                    "registryBaseUrl": {"type": "string", "pattern": "^https://"},
                    "identifier": {"type": "string", "minLength": 1},
                    "version": {"type": "string", "not": {"const": "latest"}},
                    "runtimeHint": {"type": "string"},
                    "transport": {
                        "type": "object", "required": ["type"],
                        "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}}
                    },
                    "environmentVariables": {"type": "array", "items": input},
                    "runtimeArguments": {"type": "array"},
                    "packageArguments": {"type": "array"},
                    "fileSha256": {"type": "string", "pattern": "^[a-f0-9]{64}$"}
                }
            }},
            "remotes": {"type": "array", "items": {
                "type": "object", "required": ["type", "url"],
                "properties": {"type": {"enum": ["streamable-http", "sse"]}, "url": {"type": "string", "pattern": "^(https?://|\\{)"}}
            }}
        }
    })
}

fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let v = jsonschema::draft202012::new(schema).expect("the test schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn server_json_meets_the_registry_schema() {
    let doc: Value = serde_json::from_str(&read("server.json")).expect("server.json is JSON");
    let errors = validate(&registry_schema(), &doc);
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema's own rules this file relies on are enforced (the check can fail).
    let mut broken = doc.clone();
    broken["description"] = json!("x".repeat(101));
    assert!(!validate(&registry_schema(), &broken).is_empty());

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(doc["version"], version);
    let pkg = &doc["packages"][0];
    assert_eq!(pkg["registryType"], "oci");
    assert_eq!(pkg["transport"]["type"], "stdio");
    let id = pkg["identifier"].as_str().unwrap();
    assert!(
        id.ends_with(&format!(":{version}")),
        "OCI tag is the version: {id}"
    );
    let env: BTreeMap<&str, &Value> = pkg["environmentVariables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e))
        .collect();
    assert_eq!(env["ARCANE_API_KEY"]["isSecret"], true);
    assert_eq!(env["ARCANE_API_KEY"]["isRequired"], true);
    assert_eq!(env["ARCANE_URL"]["isSecret"], false);
    assert_eq!(env["ARCANE_URL"]["isRequired"], true);
    // Every variable it names is one the server reads.
    let help = stdout(&cmd_in(&repo(), &["--help"]).output().unwrap());
    for name in env.keys() {
        assert!(help.contains(name), "{name} is not a setting of arcane-mcp");
    }
}

/// The MCPB manifest's requirements (manifest spec 0.2) as a JSON Schema.
fn mcpb_schema() -> Value {
    json!({
        "type": "object",
        "required": ["manifest_version", "name", "version", "description", "author", "server"],
        "properties": {
            "manifest_version": {"type": "string"},
            "name": {"type": "string", "minLength": 1},
            "version": {"type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+"},
            "description": {"type": "string", "minLength": 1},
            "author": {"type": "object", "required": ["name"]},
            "server": {
                "type": "object",
                "required": ["type", "entry_point", "mcp_config"],
                "properties": {
                    "type": {"enum": ["node", "python", "binary"]},
                    "entry_point": {"type": "string"},
                    "mcp_config": {
                        "type": "object", "required": ["command"],
                        "properties": {
                            "command": {"type": "string"},
                            "args": {"type": "array", "items": {"type": "string"}},
                            "env": {"type": "object", "additionalProperties": {"type": "string"}}
                        }
                    }
                }
            },
            "compatibility": {"type": "object", "properties": {"platforms": {"type": "array", "items": {"enum": ["darwin", "win32", "linux"]}}}},
            "user_config": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["type", "title", "description"],
                "properties": {
                    "type": {"enum": ["string", "number", "boolean", "directory", "file"]},
                    "sensitive": {"type": "boolean"},
                    "required": {"type": "boolean"}
                }
            }}
        }
    })
}

#[test]
fn mcpb_manifest_meets_its_schema() {
    let doc: Value = serde_json::from_str(&read("manifest.json")).expect("manifest.json is JSON");
    let errors = validate(&mcpb_schema(), &doc);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["server"]["type"], "binary");
    let uc = &doc["user_config"];
    assert_eq!(uc["api_key"]["sensitive"], true);
    assert_eq!(uc["api_key"]["required"], true);
    assert_eq!(uc["arcane_url"]["required"], true);
    assert_ne!(uc["arcane_url"]["sensitive"], true);
    let env = &doc["server"]["mcp_config"]["env"];
    assert_eq!(env["ARCANE_URL"], "${user_config.arcane_url}");
    assert_eq!(env["ARCANE_API_KEY"], "${user_config.api_key}");
    // Every ${user_config.X} names a declared option.
    let text = read("manifest.json");
    for part in text.split("${user_config.").skip(1) {
        let key = part.split('}').next().unwrap();
        assert!(uc.get(key).is_some(), "user_config.{key} is not declared");
    }
}

#[test]
fn release_workflow_builds_every_platform_with_checksums() {
    let text = read(".github/workflows/release.yml");
    let wf: Value = yaml_serde::from_str(&text).expect("release.yml is YAML");
    // `on` is a plain key in YAML 1.2.
    let on = wf.get("on").expect("on:");
    assert!(on["push"]["tags"].is_array(), "runs on tags: {on}");
    let jobs = wf["jobs"].as_object().expect("jobs");
    for (name, job) in jobs {
        assert!(job["runs-on"].is_string(), "{name}: runs-on");
        let steps = job["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: steps"));
        for s in steps {
            assert!(
                s.get("uses").is_some() || s.get("run").is_some(),
                "{name}: a step needs uses or run: {s}"
            );
            if let Some(u) = s["uses"].as_str() {
                assert!(u.contains('@'), "{name}: pin {u}");
            }
        }
        if let Some(needs) = job.get("needs").and_then(Value::as_str) {
            assert!(jobs.contains_key(needs), "{name} needs {needs}");
        }
    }
    let targets: Vec<&str> = jobs["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .expect("a build matrix")
        .iter()
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    for t in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(targets.contains(&t), "{t} in {targets:?}");
    }
    assert!(
        text.contains("cargo build --release --locked --bin arcane-mcp"),
        "builds the binary"
    );
    assert!(text.contains("sha256sum"), "publishes checksums");
}

#[test]
fn a_fatal_error_never_prints_the_password_in_arcane_url() {
    // Nothing listens on port 9 and there is no spec: the spec fetch fails and the error names
    // the URL it tried.
    let dir = tempfile::tempdir().unwrap();
    let out = cmd_in(dir.path(), &["serve"])
        .env(
            "ARCANE_URL",
            "http://operator:planted-url-password@127.0.0.1:9/",
        )
        .env("ARCANE_API_KEY", "k")
        .env("ARCANE_MCP_SPEC_CACHE", dir.path().join("cache.json"))
        .output()
        .expect("arcane-mcp runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot fetch the OpenAPI document"), "{err}");
    assert!(err.contains("operator:********@"), "{err}");
    assert!(!err.contains("planted-url-password"), "{err}");
}

// ---- Streamable HTTP transport ----------------------------------------------------------------

/// A free loopback port (bound and released; the server binds it right after).
///
/// Chosen below Linux's ephemeral range (32768–60999): a port the kernel hands out for
/// `:0` is also what it hands out as the source port of the tests' many outgoing
/// connections, so between release and bind another test's connection could take it
/// ("Address already in use" in a run of the whole suite). Ports here are never given out
/// that way. A port is handed out once per process: a port checked free but not yet bound by
/// its test's server is still free to the next check, and two parallel tests once got the same
/// one this way.
pub(crate) fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static HANDED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..2_000 {
        let n = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(97));
        let port = 20_000 + (n % 12_000) as u16;
        let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
        if !handed.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.push(port);
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `arcane-mcp --transport http` against an Arcane at `arcane`, killed when dropped.
pub(crate) struct HttpServer {
    child: tokio::process::Child,
    pub(crate) base: String,
}

impl HttpServer {
    /// Starts the server with `args` and `env` (key: `--api-key` when given) and waits until
    /// `/healthz` answers; panics with the server's stderr if it exits first.
    pub(crate) async fn start(
        arcane: &str,
        key: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_at(free_port(), arcane, key, args, env).await
    }

    /// [`HttpServer::start`] on a port chosen beforehand (an OAuth public URL names it).
    pub(crate) async fn start_at(
        port: u16,
        arcane: &str,
        key: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.current_dir(repo())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ARCANE_MCP_LOG", "warn")
            .args(["--arcane-url", arcane, "--spec"])
            .arg(spec_path())
            .args(["--transport", "http", "--listen", &listen])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(k) = key {
            cmd.args(["--api-key", k]);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("arcane-mcp spawns");
        let base = format!("http://{listen}");
        let http = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(
                    child.stderr.as_mut().unwrap(),
                    &mut err,
                )
                .await;
                panic!("arcane-mcp exited ({status}) before serving:\n{err}");
            }
            if http
                .get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return HttpServer { child, base };
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("arcane-mcp did not serve /healthz within 10 s");
    }

    /// Starts the server against the simulator, with its key, the bearer token `token` and
    /// `args`.
    pub(crate) async fn for_sim(sim: &Sim, args: &[&str], token: &str) -> Self {
        let env = [("ARCANE_MCP_AUTH_TOKEN", token)];
        Self::start(&sim.base(), Some(sim.sim.api_key()), args, &env).await
    }

    /// Stops the server and returns what it logged.
    pub(crate) async fn stop(mut self) -> String {
        let _ = self.child.start_kill();
        let out = self.child.wait_with_output().await.unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// An MCP client session over Streamable HTTP with a bearer token and extra headers.
pub(crate) async fn http_client(
    base: &str,
    token: &str,
    headers: &[(&'static str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    http_client_with((), base, token, headers).await
}

/// [`http_client`] with a client handler (progress, list-changed…).
pub(crate) async fn http_client_with<H: rmcp::ClientHandler>(
    handler: H,
    base: &str,
    token: &str,
    headers: &[(&'static str, &str)],
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let custom = headers
        .iter()
        .map(|(k, v)| {
            (
                http::HeaderName::from_static(k),
                http::HeaderValue::from_str(v).unwrap(),
            )
        })
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
        .auth_header(token)
        .custom_headers(custom);
    handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP session over HTTP starts")
}

pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// One sessionless `tools/call` of `arcane_execute_action` in the 2026-07-28 protocol (the
/// client named `client` in `_meta`, `confirm: true`) with `token`: status, headers and body.
pub(crate) async fn post_call_2026(
    base: &str,
    token: &str,
    client: &str,
    action: &str,
    params: Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {
            "name": "arcane_execute_action",
            "arguments": {"action": action, "params": params, "confirm": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"}
            }
        }
    });
    post_execute(base, token, &body).await
}

/// A sessionless 2026-07-28 `tools/call` of `arcane_execute_action` (`body`, the whole
/// JSON-RPC request) with `token`: its status, headers and body.
async fn post_execute(
    base: &str,
    token: &str,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let auth = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "arcane_execute_action"),
        ("authorization", auth.as_str()),
    ];
    raw_post(base, &headers, body.to_string()).await
}

/// A raw `initialize` POST to `/mcp` with extra headers; its status, headers and body.
pub(crate) async fn raw_post(
    base: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        // Appended: a name given twice is sent twice.
        map.append(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    raw_post_headers(base, map, body).await
}

/// [`raw_post`] with headers that need not be text (bytes a client may send).
pub(crate) async fn raw_post_headers(
    base: &str,
    headers: reqwest::header::HeaderMap,
    body: String,
) -> (u16, reqwest::header::HeaderMap, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .headers(headers)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let h = r.headers().clone();
    (status, h, r.text().await.unwrap_or_default())
}

#[test]
fn http_refuses_unsafe_settings_with_what_to_do() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = cmd_in(
            &repo(),
            &[
                &["--arcane-url", "http://127.0.0.1:9", "--api-key", "k"],
                args,
            ]
            .concat(),
        );
        c.arg("--spec").arg(spec_path());
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(!out.status.success(), "{args:?} must not start");
        stderr(&out)
    };
    let err = run(&["--transport", "http", "--listen", "127.0.0.1:0"], &[]);
    assert!(
        err.contains("without authentication") && err.contains("ARCANE_MCP_AUTH_TOKEN"),
        "{err}"
    );
    let err = run(
        &[
            "--transport",
            "http",
            "--listen",
            "0.0.0.0:0",
            "--allow-unauthenticated",
        ],
        &[],
    );
    assert!(err.contains("loopback"), "{err}");
    let err = run(
        &["--transport", "http", "--listen", "0.0.0.0:0"],
        &[("ARCANE_MCP_AUTH_TOKEN", "secret-token-xyz")],
    );
    assert!(err.contains("ARCANE_MCP_ALLOWED_HOSTS"), "{err}");
    assert!(!err.contains("secret-token-xyz"), "{err}");
    let err = run(
        &[
            "--transport",
            "http",
            "--auth-token-file",
            "/nonexistent/tokens",
        ],
        &[],
    );
    assert!(err.contains("--auth-token-file"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_gate_refuses_strangers_and_serves_every_surface() {
    let sim = Sim::start().await;
    let tokens = "tok-one,tok-two";
    for surface in ["dynamic", "meta", "individual"] {
        let server = HttpServer::for_sim(
            &sim,
            &["--tool-surface", surface, "--max-request-bytes", "4096"],
            tokens,
        )
        .await;
        let base = server.base.clone();
        if surface == "dynamic" {
            // 401 without a token or with a wrong one, with the challenge.
            let (status, h, body) = raw_post(&base, &[], INIT.into()).await;
            assert_eq!(status, 401, "{body}");
            assert!(
                h["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer")
            );
            assert!(body.contains("Authorization: Bearer"), "{body}");
            let (status, h, _) =
                raw_post(&base, &[("authorization", "Bearer tok-three")], INIT.into()).await;
            assert_eq!(status, 401);
            assert!(
                h["www-authenticate"]
                    .to_str()
                    .unwrap()
                    .contains("invalid_token")
            );
            // 403 for a foreign Origin or Host, even with a good token.
            let ok = ("authorization", "Bearer tok-two");
            let (status, _, body) = raw_post(
                &base,
                &[ok, ("origin", "https://evil.example")],
                INIT.into(),
            )
            .await;
            assert_eq!(status, 403, "{body}");
            let (status, _, body) =
                raw_post(&base, &[ok, ("host", "evil.example")], INIT.into()).await;
            assert_eq!(status, 403, "{body}");
            // 413 beyond the body limit; the server's own key policy refuses a client key.
            let (status, _, _) = raw_post(&base, &[ok], format!("{:5000}", INIT)).await;
            assert_eq!(status, 413);
            let (status, _, body) =
                raw_post(&base, &[ok, ("x-arcane-api-key", "mine")], INIT.into()).await;
            assert_eq!(status, 400, "{body}");
            assert!(body.contains("X-Arcane-API-Key"), "{body}");
            let (status, _, _) = raw_post(&base, &[ok], INIT.into()).await;
            assert_eq!(status, 200);
            // Health without a token; metrics with one.
            let http = reqwest::Client::new();
            let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
            assert_eq!(ready.status(), 200);
            let m = http.get(format!("{base}/metrics")).send().await.unwrap();
            assert_eq!(m.status(), 401);
        }
        let client = http_client(&base, "tok-one", &[]).await;
        let tools = client.list_all_tools().await.unwrap();
        let (tool, args) = server_support::shape(surface, "container.list", json!({}), false);
        assert!(tools.iter().any(|t| t.name == tool), "{surface}: {tool}");
        let r = call(&client, &tool, args).await;
        assert!(text(&r).contains("| web-1 |"), "{surface}: {}", text(&r));
        let res = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                "arcane://tools",
            ))
            .await
            .unwrap();
        assert_eq!(res.contents.len(), 1);
        // A name the list does not have is counted as `unknown`: clients cannot grow the table.
        let _ = client
            .call_tool(rmcp::model::CallToolRequestParams::new("no_such_tool_x1"))
            .await;
        client.cancel().await.unwrap();
        let metrics = reqwest::Client::new()
            .get(format!("{base}/metrics"))
            .bearer_auth("tok-two")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains(&format!(
                "arcane_mcp_tool_calls_total{{tool=\"{tool}\",outcome=\"ok\"}} 1"
            )),
            "{metrics}"
        );
        assert!(
            metrics.contains("arcane_mcp_tool_calls_total{tool=\"unknown\",outcome=\"error\"} 1")
                && !metrics.contains("no_such_tool_x1"),
            "{metrics}"
        );
        assert!(metrics.contains("arcane_mcp_tool_call_duration_seconds_count 2"));
        let log = server.stop().await;
        assert!(
            !log.contains("tok-one") && !log.contains("tok-two"),
            "{log}"
        );
    }
}

/// Each session's own Arcane key reaches Arcane with each of its requests, never another's:
/// 50 sessions at once with different keys, each marking its requests with its own search.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_per_user_keys_never_mix_across_50_sessions() {
    // Arcane with 50 users, each with its own key; its request log names the user of each
    // request.
    let users = (0..50)
        .map(|i| format!("user-{i}=user-key-{i}").parse().unwrap())
        .collect();
    let sim = Sim::start_with_users(users).await;
    // No server key at all: with client keys only, none is needed.
    let server = HttpServer::start(
        &sim.base(),
        None,
        &["--arcane-key-source", "client", "--rate-limit", "100000"],
        &[("ARCANE_MCP_AUTH_TOKEN", "team-token")],
    )
    .await;
    // Without a key the request is refused before anything reaches Arcane.
    let (status, _, body) = raw_post(
        &server.base,
        &[("authorization", "Bearer team-token")],
        INIT.into(),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("X-Arcane-API-Key"), "{body}");
    let sessions = (0..50).map(|i| {
        let base = server.base.clone();
        async move {
            let key = format!("user-key-{i}");
            let client = http_client(&base, "team-token", &[("x-arcane-api-key", &key)]).await;
            for round in 0..3 {
                let r = call(
                    &client,
                    "arcane_execute_action",
                    json!({"action": "container.list", "params": {"search": format!("marker-{i}-{round}")}}),
                )
                .await;
                assert!(!server_support::is_error(&r), "{}", text(&r));
            }
            // A name looked up with this session's key (resource completion reads too).
            let r = call(
                &client,
                "arcane_execute_action",
                json!({"action": "container.get", "params": {"containerId": "web-1"}}),
            )
            .await;
            assert!(!server_support::is_error(&r), "{}", text(&r));
            client.cancel().await.unwrap();
        }
    });
    futures::future::join_all(sessions).await;
    // The readiness probe reads the public health route, without a user.
    let seen: Vec<Value> = sim
        .requests()
        .await
        .into_iter()
        .filter(|r| r["path"] != "/api/health")
        .collect();
    let mut marked = 0;
    for r in &seen {
        let (path, query, user) = (&r["path"], r["query"].as_str().unwrap(), &r["user"]);
        // Every request reached Arcane as one of the 50 users (never unauthenticated, never
        // as the simulator's own admin).
        let user = user
            .as_str()
            .unwrap_or_else(|| panic!("{path} {query}: {r}"));
        assert!(user.starts_with("user-"), "{path} {query} ran as {user}");
        if let Some(rest) = query.split("search=marker-").nth(1) {
            let session = rest.split('-').next().unwrap();
            assert_eq!(user, format!("user-{session}"), "{path} {query}");
            marked += 1;
        }
    }
    assert_eq!(marked, 150, "every marked request reached Arcane once");
    let users: std::collections::BTreeSet<_> = seen.iter().map(|r| r["user"].to_string()).collect();
    assert_eq!(users.len(), 50, "{users:?}");
    let log = server.stop().await;
    assert!(
        !log.contains("user-key-"),
        "a client key was logged:\n{log}"
    );
}

/// The audit log names each mutating call with its user's key fingerprint (never the key) and
/// its outcome: sent, failed, refused for want of confirmation, previewed in safe mode; reads
/// leave no line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_audit_log_has_a_line_per_mutating_call() {
    let sim = Sim::start_with_users(vec!["alice=alice-secret-key".parse().unwrap()]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let server = HttpServer::start(
        &sim.base(),
        Some("server-key-unused"),
        &[
            "--arcane-key-source",
            "either",
            "--audit-log",
            path.to_str().unwrap(),
        ],
        &[("ARCANE_MCP_AUTH_TOKEN", "team-token")],
    )
    .await;
    let client = http_client(
        &server.base,
        "team-token",
        &[("x-arcane-api-key", "alice-secret-key")],
    )
    .await;
    let run = |action: &str, params: Value, confirm: bool| {
        call(
            &client,
            "arcane_execute_action",
            json!({"action": action, "params": params, "confirm": confirm}),
        )
    };
    assert!(!server_support::is_error(
        &run("container.list", json!({}), false).await
    ));
    let refused = run("container.kill", json!({"containerId": "web-1"}), false).await;
    assert!(server_support::is_error(&refused));
    let done = run("container.restart", json!({"containerId": "web-1"}), true).await;
    assert!(!server_support::is_error(&done), "{}", text(&done));
    let failed = run("container.restart", json!({"containerId": "no-such"}), true).await;
    assert!(server_support::is_error(&failed));
    client.cancel().await.unwrap();
    // Every request reached Arcane as alice, not with the server's key.
    let seen = sim.requests().await;
    assert!(seen.iter().any(|r| r["method"] == "POST"), "{seen:?}");
    assert!(
        seen.iter()
            .filter(|r| r["path"] != "/api/health")
            .all(|r| r["user"] == "alice"),
        "{seen:?}"
    );
    let log = server.stop().await;
    assert!(!log.contains("alice-secret-key"), "{log}");

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("alice-secret-key"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["action"].as_str().unwrap().to_string(),
                l["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("container.kill".into(), "refused".into()),
            ("container.restart".into(), "ok".into()),
            ("container.restart".into(), "error".into()),
        ],
        "{text}"
    );
    let user = format!("key:{}", arcane_redact::fingerprint("alice-secret-key"));
    for l in &lines {
        assert_eq!(l["user"], user.as_str(), "{l}");
        assert!(l["session"].as_str().is_some_and(|s| !s.is_empty()), "{l}");
        assert_eq!(l["environment"], "0");
        assert!(l["durationMs"].is_u64());
    }
    assert_eq!(lines[0]["confirmed"], Value::Null);
    assert_eq!(lines[1]["confirmed"], "param");
    assert!(
        lines[1]["targets"]["containerId"].is_string(),
        "{}",
        lines[1]
    );

    // Safe mode: a preview line (through the one-shot command, which runs the same call path).
    let preview = dir.path().join("preview.jsonl");
    let out = demo(&[
        "call",
        "--safe-mode",
        "--audit-log",
        preview.to_str().unwrap(),
        "container.restart",
        "--param",
        "containerId=web-1",
        "--confirm",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&preview).unwrap().trim()).unwrap();
    assert_eq!(line["outcome"], "preview", "{line}");
    assert_eq!(line["user"], "server-key");
}

/// Records progress and list-changed notifications.
#[derive(Clone, Default)]
struct Notes(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Notes {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("progress {}", params.progress));
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.lock().unwrap().push("tools".into());
    }

    async fn on_resource_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push("resources".into());
    }
}

/// Over HTTP as over stdio: progress of a stream reaches the client, a cancelled call drops
/// the request to Arcane, and a hot reload sends list-changed to every open session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_progress_cancel_and_list_changed() {
    use std::time::Duration;
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server =
        HttpServer::for_sim(&sim, &["--overrides", dir.path().to_str().unwrap()], "tok").await;
    let notes = Notes::default();
    let client = http_client_with(notes.clone(), &server.base, "tok", &[]).await;
    let other = http_client(&server.base, "tok", &[]).await;
    let pull = json!({"action": "image.pull", "params": {"imageName": "redis:7.2-alpine"}});
    let r = call(&client, "arcane_execute_action", pull).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let progress = notes
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.starts_with("progress"))
        .count();
    assert!(progress >= 2, "{:?}", notes.0.lock().unwrap());

    sim.hooks().set_stream_pace_ms(300).await.unwrap();
    // Deploying is asked (changes-workload); this client cannot ask, so the model confirms.
    let up = json!({"action": "project.up", "params": {"projectId": "webshop"}, "confirm": true});
    let pending = client.call_tool(
        rmcp::model::CallToolRequestParams::new("arcane_execute_action")
            .with_arguments(up.as_object().unwrap().clone()),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(700), pending)
            .await
            .is_err()
    );
    let mut aborted = false;
    for _ in 0..100 {
        let streams = sim.hooks().streams().await.unwrap();
        aborted = streams
            .iter()
            .any(|s| s["path"].as_str().unwrap_or("").ends_with("/up") && s["aborted"] == true);
        if aborted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        aborted,
        "the cancelled call's request to Arcane was dropped"
    );

    std::fs::write(
        dir.path().join("maintenance.yaml"),
        "actions:\n  container.restart: {exclude: \"withdrawn for maintenance\"}\n",
    )
    .unwrap();
    // A generous guard against a hang, not a timing assertion.
    for _ in 0..600 {
        let seen = notes.0.lock().unwrap().clone();
        if seen.iter().any(|n| n == "tools") && seen.iter().any(|n| n == "resources") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = notes.0.lock().unwrap().clone();
    assert!(seen.contains(&"tools".to_string()), "{seen:?}");
    assert!(seen.contains(&"resources".to_string()), "{seen:?}");
    let r = call(
        &other,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"containerId": "web-1"}}),
    )
    .await;
    assert!(
        text(&r).contains("withdrawn for maintenance"),
        "{}",
        text(&r)
    );
    client.cancel().await.ok();
    other.cancel().await.ok();
    server.stop().await;
}

/// A caller's key that Arcane refuses is named as the caller's (the header), not the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_a_refused_client_key_is_named_as_the_callers() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--arcane-key-source", "either"], "tok").await;
    let client = http_client(&server.base, "tok", &[("x-arcane-api-key", "not-a-key")]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {}}),
    )
    .await;
    assert!(server_support::is_error(&r));
    let e = text(&r);
    assert!(e.contains("X-Arcane-API-Key"), "{e}");
    assert!(
        !e.contains("not-a-key") && !e.contains("ARCANE_API_KEY"),
        "{e}"
    );
    // The same server still serves a caller without a key of their own, with its own key.
    let plain = http_client(&server.base, "tok", &[]).await;
    let r = call(
        &plain,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {}}),
    )
    .await;
    assert!(!server_support::is_error(&r), "{}", text(&r));
    client.cancel().await.ok();
    plain.cancel().await.ok();
    server.stop().await;
}

/// Past the per-address rate, requests get 429 with Retry-After; an idle session is closed,
/// and a request naming it is told so (the client starts a new one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rate_limit_and_idle_session_expiry() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(
        &sim,
        &["--rate-limit", "30", "--session-idle-timeout", "1"],
        "tok",
    )
    .await;
    let auth = ("authorization", "Bearer tok");
    let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    // The idle session is closed: a later request naming it is refused. Each look is itself
    // activity, so looks are spaced beyond the idle time (a bounded number: a guard against a
    // hang, not a timing assertion).
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let mut closed = None;
    for _ in 0..15 {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let (status, _, body) = raw_post(
            &server.base,
            &[
                auth,
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-06-18"),
            ],
            ping.into(),
        )
        .await;
        if status == 429 {
            continue;
        }
        if status != 200 {
            closed = Some((status, body));
            break;
        }
    }
    let (status, _) = closed.expect("the idle session was closed");
    assert_eq!(status, 404);
    // A burst of 30 is allowed; more within the same second are not.
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
        if status == 429 {
            assert!(headers.contains_key("retry-after"));
        }
        statuses.push(status);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    server.stop().await;
}

/// A client that shows elicitation forms and ticks (or not) the box.
#[derive(Clone)]
struct Ticks(bool);

impl rmcp::ClientHandler for Ticks {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("ticks", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"confirm": self.0})),
        )
    }
}

/// Over HTTP the confirmation form reaches the user too (a server-to-client request on the
/// session's stream): a ticked box runs the destructive call, an unticked one refuses it, and
/// the audit log says which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_destructive_call_is_confirmed_by_the_user() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let server = HttpServer::for_sim(&sim, &["--audit-log", path.to_str().unwrap()], "tok").await;
    let kill = json!({"action": "container.kill", "params": {"containerId": "web-1"}});
    for tick in [false, true] {
        let client = http_client_with(Ticks(tick), &server.base, "tok", &[]).await;
        let r = call(&client, "arcane_execute_action", kill.clone()).await;
        assert_eq!(r.is_error == Some(true), !tick, "{}", text(&r));
        client.cancel().await.ok();
    }
    server.stop().await;
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[0]["confirmed"], Value::Null);
    assert_eq!(lines[1]["outcome"], "ok");
    assert_eq!(lines[1]["confirmed"], "elicitation");
    assert_eq!(lines[1]["client"], "ticks");
}

/// An allow-list entry that names nothing (a typo) is warned about at startup, not silently
/// withdrawing what it meant.
#[test]
fn an_allow_list_typo_is_warned_about() {
    let out = demo(&[
        "call",
        "container.list",
        "--tools",
        "container.list,contianer.get",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("contianer.get") && err.contains("names no action"),
        "{err}"
    );
}

/// 2026-07-28 clients send sessionless requests (protocol version and client data in each
/// request's `_meta`): served behind the same gate, without a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessionless_2026_07_28_requests_are_served() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": "arcane_execute_action",
            "arguments": {"action": "container.list", "params": {}},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
            }
        }
    });
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "arcane_execute_action"),
    ];
    let (status, _, _) = raw_post(&server.base, &headers, body.to_string()).await;
    assert_eq!(status, 401, "sessionless requests pass the gate too");
    let mut with_token = headers.to_vec();
    with_token.push(("authorization", "Bearer tok"));
    let (status, h, text) = raw_post(&server.base, &with_token, body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    assert!(!h.contains_key("mcp-session-id"), "no session: {h:?}");
    assert!(text.contains("web-1"), "{text}");
    server.stop().await;
}

/// A 2026-07-28 client over HTTP (`server/discover`, no session) hears a hot reload through
/// `subscriptions/listen`, as it does over stdio (`server_reload`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_2026_07_28_client_hears_list_changes_through_subscriptions() {
    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::for_sim(
        &sim,
        &[
            "--tool-surface",
            "meta",
            "--overrides",
            dir.path().to_str().unwrap(),
        ],
        "tok",
    )
    .await;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.base))
        .auth_header("tok");
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("a 2026-07-28 client discovers the server over HTTP");
    let before = client.list_all_tools().await.unwrap();
    assert!(before.iter().any(|t| t.name == "arcane_volume"));
    let mut sub = client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen accepted over HTTP");
    let mut overlay = String::from("actions:\n");
    let catalog = crate::server_support::catalog();
    for id in &catalog.domain("volume").unwrap().actions {
        overlay.push_str(&format!("  {id}: {{exclude: \"managed elsewhere\"}}\n"));
    }
    std::fs::write(dir.path().join("no-volumes.yaml"), overlay).unwrap();
    loop {
        let n = tokio::time::timeout(std::time::Duration::from_secs(60), sub.next())
            .await
            .expect("list_changed arrives (hang guard)")
            .unwrap()
            .expect("subscription open");
        if matches!(n, ServerNotification::ToolListChangedNotification(_)) {
            break;
        }
    }
    let after = client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), before.len() - 1);
    assert!(!after.iter().any(|t| t.name == "arcane_volume"));
    client.cancel().await.ok();
    server.stop().await;
}

/// A sessionless 2026-07-28 `container.kill` of `container` with `token`, by a client that
/// shows forms (`forms`) or not, with `extra` (`requestState`, `inputResponses` of a retry) in
/// its params; the call's result and the response's headers.
pub(crate) async fn kill_2026(
    base: &str,
    token: &str,
    container: &str,
    forms: bool,
    extra: Value,
) -> (Value, reqwest::header::HeaderMap) {
    let caps = if forms {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    let mut params = json!({
        "name": "arcane_execute_action",
        "arguments": {"action": "container.kill", "params": {"containerId": container}},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let (status, h, text) = post_execute(base, token, &body).await;
    assert_eq!(status, 200, "{text}");
    (rpc_answer(&text)["result"].clone(), h)
}

/// The JSON-RPC answer of a POST to `/mcp`, whether sent as JSON or as an event stream.
fn rpc_answer(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}

/// 2026-07-28 clients that declared elicitation are asked by an incomplete result: the call
/// answers with the question and a sealed request state, and runs only when retried with that
/// state and an accepted, ticked answer. A declined answer, an altered state, a state used
/// twice, made for another call or for another caller are refused with nothing sent; a client
/// that declared no elicitation keeps the `confirm: true` rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_2026_07_28_confirmation_takes_a_round_trip() {
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let server = HttpServer::for_sim(
        &sim,
        &["--audit-log", audit.to_str().unwrap()],
        "tok,other-tok",
    )
    .await;
    let base = server.base.clone();
    // One sessionless tools/call; `extra` holds requestState / inputResponses of a retry.
    let post = |token: &'static str, container: &'static str, forms: bool, extra: Value| {
        let base = base.clone();
        async move { kill_2026(&base, token, container, forms, extra).await.0 }
    };
    let answer = |action: &str, tick: bool, state: &Value| {
        json!({
            "requestState": state,
            "inputResponses": {"confirm": {"action": action, "content": {"confirm": tick}}}
        })
    };
    let refused = |r: &Value, what: &str| {
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(what) && text.contains("nothing was sent"),
            "{text}"
        );
    };

    // Asked: the question names the action and its target; nothing is sent yet.
    let asked = post("tok", "web-1", true, json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("container.kill") && message.contains("web-1"),
        "{message}"
    );
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    let state = asked["requestState"].clone();
    assert!(state.as_str().is_some_and(|s| !s.is_empty()), "{asked}");
    assert_eq!(sim.kills().await, 0);

    // An altered state is refused (a flipped character in the middle of the seal).
    let mut altered = state.as_str().unwrap().to_string().into_bytes();
    let mid = altered.len() / 2;
    altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
    let altered = Value::String(String::from_utf8(altered).unwrap());
    refused(
        &post("tok", "web-1", true, answer("accept", true, &altered)).await,
        "does not belong to it",
    );
    // The state of web-1's question does not confirm a kill of another container, nor a call
    // by another token holder.
    refused(
        &post("tok", "api-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    refused(
        &post("other-tok", "web-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    assert_eq!(sim.kills().await, 0);

    // Accepted with the box ticked: it runs, once.
    let done = post("tok", "web-1", true, answer("accept", true, &state)).await;
    assert_ne!(done["isError"], true, "{done}");
    assert_ne!(done["resultType"], "input_required", "{done}");
    assert_eq!(sim.kills().await, 1);
    // The same yes again is refused: one answer runs one call.
    refused(
        &post("tok", "web-1", true, answer("accept", true, &state)).await,
        "does not belong to it",
    );
    assert_eq!(sim.kills().await, 1);

    // Declined, or accepted without the tick: refused.
    for (action, tick, why) in [
        ("decline", false, "declined"),
        ("accept", false, "did not tick the box"),
        ("cancel", false, "cancelled"),
    ] {
        let asked = post("tok", "web-1", true, json!({})).await;
        let state = asked["requestState"].clone();
        refused(
            &post("tok", "web-1", true, answer(action, tick, &state)).await,
            why,
        );
    }
    assert_eq!(sim.kills().await, 1);

    // A client without elicitation: not asked; the `confirm: true` rule.
    let plain = post("tok", "web-1", false, json!({})).await;
    assert_eq!(plain["isError"], true, "{plain}");
    assert!(
        plain["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"confirm\": true"),
        "{plain}"
    );
    assert_eq!(sim.kills().await, 1);
    server.stop().await;
    // The audit log has a line per finished call, none for a question: the one yes ran it,
    // every other retry (and the call without elicitation) was refused.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcomes: Vec<(&str, &Value)> = lines
        .iter()
        .map(|l| (l["outcome"].as_str().unwrap(), &l["confirmed"]))
        .collect();
    let ran = ("ok", &json!("elicitation"));
    let no = ("refused", &Value::Null);
    assert_eq!(outcomes, [no, no, no, ran, no, no, no, no, no], "{lines:?}");
}

// ---- where settings are written ----------------------------------------------------------------

/// Every subcommand path of the command tree (`[]` for none), from clap's own tree.
fn command_paths(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
    out.push(prefix.to_vec());
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut path = prefix.to_vec();
        path.push(sub.get_name().to_string());
        command_paths(sub, &path, out);
    }
}

/// The built (sub)command at `path`.
fn command_at<'a>(cmd: &'a mut clap::Command, path: &[String]) -> &'a mut clap::Command {
    path.iter().fold(cmd, |c, name| {
        c.find_subcommand_mut(name)
            .expect("a subcommand of the tree")
    })
}

/// The settings' tokens on a command line: the flag alone for a switch, `--flag=VALUE` with a
/// value that parses and differs from the default otherwise.
fn setting_tokens(arg: &clap::Arg) -> String {
    let long = arg.get_long().expect("every setting has a long name");
    if arg.get_num_args().is_some_and(|r| r.min_values() == 0) {
        return format!("--{long}");
    }
    let default = arg
        .get_default_values()
        .first()
        .map(|v| v.to_string_lossy().into_owned());
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .map(|p| p.get_name().to_string())
        .collect();
    let candidates: Vec<String> = if choices.is_empty() {
        ["5000", "2000", "7", "127.0.0.1:8123"]
            .map(String::from)
            .to_vec()
    } else {
        choices
    };
    candidates
        .into_iter()
        .filter(|c| Some(c) != default.as_ref())
        .map(|c| format!("--{long}={c}"))
        .find(|t| parse(&[t.as_str()]).is_ok())
        .unwrap_or_else(|| panic!("no sample value parses for --{long}"))
}

fn parse(args: &[&str]) -> Result<arcane_mcp::config::Cli, clap::Error> {
    use clap::Parser;
    arcane_mcp::config::Cli::try_parse_from(
        std::iter::once("arcane-mcp").chain(args.iter().copied()),
    )
}

/// Whether a help text lists `--long` (not merely a longer flag that starts with it).
fn lists(help: &str, long: &str) -> bool {
    let flag = format!("--{long}");
    help.match_indices(&flag).any(|(at, _)| {
        !help[at + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// Item 1 of "A stranger's first hour": every setting, on every subcommand, written before or
/// after it, either reaches the settings the command runs with (the same from both places,
/// and not the default) and is listed in that subcommand's --help, or is refused in both places
/// with an error naming it — never accepted and ignored. Walked over clap's own tree, so a
/// setting or subcommand added later is covered without a change here.
#[test]
fn every_setting_takes_effect_before_or_after_every_subcommand_or_is_refused() {
    use clap::CommandFactory;
    let mut tree = arcane_mcp::config::Cli::command();
    tree.build();
    let settings: Vec<clap::Arg> = arcane_mcp::config::Cli::command()
        .get_arguments()
        .cloned()
        .collect();
    assert!(
        settings.len() > 30,
        "the settings are the top level's arguments"
    );
    let mut paths = Vec::new();
    command_paths(&tree, &[], &mut paths);
    assert!(paths.len() >= 10, "{paths:?}");
    let (mut taken, mut refused) = (0, 0);
    for path in &paths {
        let leaf = command_at(&mut tree, path);
        let help = leaf.render_long_help().to_string();
        // A required positional gets a placeholder (the action of `call`, the words of `find`).
        let positionals: Vec<String> = leaf
            .get_positionals()
            .filter(|p| p.is_required_set())
            .map(|_| "x".to_string())
            .collect();
        let base: Vec<&str> = path
            .iter()
            .chain(&positionals)
            .map(String::as_str)
            .collect();
        let without = format!("{:?}", parse(&base).expect("the bare command parses").serve);
        for arg in &settings {
            let long = arg.get_long().unwrap();
            let token = setting_tokens(arg);
            let before: Vec<&str> = std::iter::once(token.as_str())
                .chain(base.iter().copied())
                .collect();
            let after: Vec<&str> = base
                .iter()
                .copied()
                .chain(std::iter::once(token.as_str()))
                .collect();
            let shown = lists(&help, long);
            match (parse(&before), parse(&after)) {
                (Ok(b), Ok(a)) => {
                    let (b, a) = (format!("{:?}", b.serve), format!("{:?}", a.serve));
                    assert_eq!(b, a, "{token} before or after `{}`", path.join(" "));
                    assert_ne!(
                        b,
                        without,
                        "{token} changes the settings of `{}`",
                        path.join(" ")
                    );
                    assert!(
                        shown,
                        "`{} --help` lists --{long}, which it takes",
                        path.join(" ")
                    );
                    taken += 1;
                }
                (Err(b), Err(a)) => {
                    for (e, at) in [(b, "before"), (a, "after")] {
                        let e = e.to_string();
                        assert!(
                            e.contains(&format!(
                                "--{long} does not apply to `arcane-mcp {}`",
                                path.join(" ")
                            )),
                            "{token} {at} `{}`: {e}",
                            path.join(" ")
                        );
                    }
                    assert!(
                        !shown,
                        "`{} --help` hides --{long}, which it refuses",
                        path.join(" ")
                    );
                    refused += 1;
                }
                (b, a) => panic!(
                    "{token} on `{}`: before → {:?}, after → {:?}",
                    path.join(" "),
                    b.map(|_| "accepted").map_err(|e| e.to_string()),
                    a.map(|_| "accepted").map_err(|e| e.to_string())
                ),
            }
        }
        // A subcommand's own flags (`call --json`) are its own: written before it, they are an
        // error, not a setting of the parent.
        if let Some((name, parent)) = path.split_last() {
            let own: Vec<String> = command_at(&mut tree, path)
                .get_arguments()
                .filter(|a| {
                    !a.is_positional() && !settings.iter().any(|s| s.get_id() == a.get_id())
                })
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .filter(|l| l != "--help" && l != "--version")
                .collect();
            for flag in own {
                let mut args: Vec<&str> = parent.iter().map(String::as_str).collect();
                args.push(&flag);
                args.push(name);
                args.extend(positionals.iter().map(String::as_str));
                assert!(parse(&args).is_err(), "{flag} before `{name}`: {args:?}");
            }
        }
    }
    assert!(
        taken > 100 && refused > 50,
        "taken {taken}, refused {refused}"
    );
}

#[test]
fn boolean_settings_are_switches_that_still_take_true_or_false() {
    use arcane_mcp::config::Command;
    let cli = parse(&["--read-only", "serve"]).expect("a switch before a subcommand");
    assert!(cli.serve.read_only);
    assert!(matches!(cli.command, Some(Command::Serve)));
    let cli = parse(&["--safe-mode", "call", "container.stop"]).unwrap();
    assert!(cli.serve.safe_mode);
    assert!(matches!(cli.command, Some(Command::Call(c)) if c.action == "container.stop"));
    for (token, want) in [
        ("--read-only=true", true),
        ("--read-only=false", false),
        ("--read-only=1", true),
        ("--read-only=off", false),
    ] {
        assert_eq!(parse(&[token]).unwrap().serve.read_only, want, "{token}");
    }
    let err = parse(&["--read-only=maybe"]).unwrap_err().to_string();
    assert!(err.contains("not a boolean"), "{err}");
    // A setting written twice in one place is refused, as clap refuses any repeated value.
    assert!(parse(&["call", "x", "--read-only", "--read-only=false"]).is_err());
}

/// A closed pipe as stdout: the reader is gone before the command writes a byte.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let spec = spec_path();
    let spec = spec.to_str().unwrap();
    for args in [
        &["catalog", "--spec", spec][..],
        &["catalog", "--spec", spec, "--show", "container.list"],
        &["catalog", "--spec", spec, "--json"],
        &["check", "--spec", spec],
        &["audit-tokens", "--spec", spec],
        &["find", "restart", "container", "--spec", spec],
        &[
            "demo",
            "--spec",
            spec,
            "find",
            "restart",
            "container",
            "--json",
        ],
        &["demo", "--spec", spec, "call", "container.list"],
        &["--help"],
    ] {
        let normal = cmd_in(&repo(), args).output().unwrap();
        let piped = cmd_in(&repo(), args)
            .stdout(closed_stdout())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&piped);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(piped.status.code(), normal.status.code(), "{args:?}: {err}");
        assert!(
            err.is_empty() || !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_or_safe_mode_before_the_subcommand_keeps_the_container_running() {
    let sim = Sim::start().await;
    let key = sim.sim.api_key().to_string();
    let running = |c: &Option<Value>| c.as_ref().unwrap()["state"] == "running";
    assert!(
        running(&sim.container("web-1").await),
        "web-1 starts running"
    );
    let stop = ["call", "container.stop", "--param", "containerId=web-1"];
    let run = |before: &[&str], env: &[(&str, &str)]| {
        let mut c = cmd_in(&repo(), before);
        c.args(stop)
            .args(["--arcane-url", &sim.base(), "--api-key", &key, "--spec"])
            .arg(spec_path());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    for (before, env, says) in [
        (&["--read-only"][..], &[][..], "read-only"),
        (&["--read-only=true"], &[], "read-only"),
        (&[], &[("ARCANE_MCP_READ_ONLY", "true")], "read-only"),
        (&["--safe-mode"], &[], "was not sent"),
        (&["--safe-mode=true"], &[], "was not sent"),
        (&[], &[("ARCANE_MCP_SAFE_MODE", "true")], "was not sent"),
    ] {
        let out = run(before, env);
        let text = stdout(&out);
        assert!(
            text.contains(says),
            "{before:?} {env:?}: {text}\n{}",
            stderr(&out)
        );
        assert!(
            running(&sim.container("web-1").await),
            "{before:?} {env:?} leaves web-1 running: {text}"
        );
        let stops = sim.requests().await;
        assert!(
            !stops.iter().any(|r| r["method"] == "POST"),
            "{before:?} {env:?} sends nothing: {stops:?}"
        );
    }
    // The control: without either, the same command stops it.
    let out = run(&[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!running(&sim.container("web-1").await), "{}", stdout(&out));

    // Through `demo`, before `call`: the simulated container is not stopped either.
    for before in [&["--read-only"][..], &["--safe-mode=true"]] {
        let mut args = vec!["demo"];
        args.extend_from_slice(before);
        args.extend_from_slice(&stop);
        let out = cmd_in(&repo(), &args)
            .env("ARCANE_MCP_SPEC", spec_path())
            .output()
            .unwrap();
        let text = stdout(&out);
        assert!(
            text.contains("read-only") || text.contains("was not sent"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn tool_surface_and_overrides_before_the_subcommand_take_effect() {
    let out = demo(&["--tool-surface", "meta", "call", "container.list"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("`arcane_container`"),
        "next steps named as the meta surface: {text}"
    );
    assert!(!text.contains("`arcane_execute_action`"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("titles.yaml"),
        "actions:\n  container.restart:\n    title: Bounce a container for the walk test\n",
    )
    .unwrap();
    let overrides = dir.path().to_str().unwrap();
    for args in [
        ["--overrides", overrides, "find", "restart", "container"],
        ["find", "restart", "container", "--overrides", overrides],
    ] {
        let out = demo(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("Bounce a container for the walk test"),
            "{args:?}: {}",
            stdout(&out)
        );
    }
    // A setting `find` does not use is refused, not ignored.
    let out = demo(&["--tool-surface", "meta", "find", "restart"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--tool-surface does not apply to `arcane-mcp demo find`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn find_json_prints_the_structured_result() {
    let out = demo(&["find", "restart", "container", "--json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("find --json prints JSON");
    let first = &v["results"][0];
    assert_eq!(first["id"], "container.restart", "{v:#}");
    assert!(
        first["inputSchema"].is_object() || first.get("params").is_some(),
        "{first:#}"
    );
}

#[test]
fn each_subcommand_help_lists_what_applies_to_it() {
    let help = |args: &[&str]| {
        let out = cmd_in(&repo(), args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        stdout(&out)
    };
    for sub in ["check", "catalog", "audit-tokens"] {
        let text = help(&[sub, "--help"]);
        for absent in [
            "--transport",
            "--listen",
            "--auth-token",
            "--read-only",
            "--api-key",
        ] {
            assert!(
                !lists(&text, &absent[2..]),
                "{sub} --help lists {absent}:\n{text}"
            );
        }
        for present in [
            "--spec",
            "--overrides",
            "--catalog-dir",
            "--arcane-url",
            "--log-level",
        ] {
            assert!(
                lists(&text, &present[2..]),
                "{sub} --help lacks {present}:\n{text}"
            );
        }
    }
    let call = help(&["call", "--help"]);
    for present in [
        "--read-only",
        "--safe-mode",
        "--tool-surface",
        "--api-key",
        "--confirm",
        "--json",
    ] {
        assert!(
            lists(&call, &present[2..]),
            "call --help lacks {present}:\n{call}"
        );
    }
    assert!(
        !lists(&call, "transport") && !lists(&call, "listen"),
        "{call}"
    );
    let find = help(&["find", "--help"]);
    for present in ["--read-only", "--tools", "--preset", "--json", "--limit"] {
        assert!(
            lists(&find, &present[2..]),
            "find --help lacks {present}:\n{find}"
        );
    }
    assert!(
        !lists(&find, "tool-surface") && !lists(&find, "api-key"),
        "{find}"
    );
    let serve = help(&["serve", "--help"]);
    for present in ["--transport", "--listen", "--read-only", "--api-key"] {
        assert!(
            lists(&serve, &present[2..]),
            "serve --help lacks {present}:\n{serve}"
        );
    }
    let top = help(&["--help"]);
    assert!(
        lists(&top, "transport") && lists(&top, "read-only"),
        "{top}"
    );
}

#[test]
fn startup_errors_name_the_variable_and_mask_only_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    // No key: the message names the variables in clear.
    let out = cmd_in(dir.path(), &["call", "container.list"])
        .env("ARCANE_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("Set ARCANE_API_KEY"), "{err}");
    assert!(err.contains("ARCANE_TOKEN"), "{err}");
    assert!(
        !err.contains("********"),
        "nothing of the message is masked: {err}"
    );

    // A URL without a scheme says what to add, for a call and for a catalog fetch alike.
    for args in [&["call", "container.list"][..], &["catalog"]] {
        let out = cmd_in(dir.path(), args)
            .env("ARCANE_URL", "arcane.local:3552")
            .env("ARCANE_API_KEY", "planted-api-key-0123456789")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("add http:// or https://"), "{args:?}: {err}");
        assert!(err.contains("http://arcane.local:3552"), "{args:?}: {err}");
    }

    // The credential itself stays masked wherever an error quotes it.
    let key = "planted-api-key-0123456789";
    let out = cmd_in(dir.path(), &["call", "container.list"])
        .env("ARCANE_URL", format!("http://127.0.0.1:9/{key}"))
        .env("ARCANE_API_KEY", key)
        .env("ARCANE_MCP_SPEC_CACHE", dir.path().join("cache.json"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot fetch the OpenAPI document"), "{err}");
    assert!(!err.contains(key), "{err}");
    assert!(err.contains("********"), "{err}");
}

/// The open-confirmation quota counts the caller the HTTP gate authenticated, not the bytes of
/// its `Authorization` header: once a token holds its 100 open questions, `bearer`, `BEARER`,
/// extra blanks or a tab before the same token open no more, while another token still can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_confirmation_quota_is_the_tokens_however_the_header_is_spelt() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &["--rate-limit", "100000"], "tok,other-tok").await;
    let base = server.base.clone();
    let ask = |auth: String| {
        let base = base.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "arcane_execute_action",
                "arguments": {"action": "container.kill", "params": {"containerId": "web-1"}},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
                }
            }});
            let headers = [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "arcane_execute_action"),
                ("authorization", auth.as_str()),
            ];
            let (status, _, text) = raw_post(&base, &headers, body.to_string()).await;
            assert_eq!(status, 200, "{text}");
            rpc_answer(&text)["result"].clone()
        }
    };
    for _ in 0..100 {
        let r = ask("Bearer tok".into()).await;
        assert_eq!(r["resultType"], "input_required", "{r}");
    }
    for spelling in [
        "Bearer tok",
        "bearer tok",
        "BEARER  tok",
        "Bearer\ttok",
        "Bearer    tok",
    ] {
        let r = ask(spelling.into()).await;
        assert_eq!(r["isError"], true, "{spelling:?}: {r}");
        let t = r["content"][0]["text"].as_str().unwrap();
        assert!(t.contains("confirmations waiting"), "{spelling:?}: {t}");
    }
    let r = ask("Bearer other-tok".into()).await;
    assert_eq!(r["resultType"], "input_required", "another token: {r}");
    assert!(crate::server_support::writes(&sim.requests().await).is_empty());
    server.stop().await;
}

/// `arcane-mcp call` speaks to a person at a shell: an unconfirmed call that needs confirming
/// says to add `--confirm` (the model's `"confirm": true` means nothing there), and
/// `--confirm` runs it.
#[test]
fn call_tells_a_shell_user_to_add_confirm() {
    let dir = tempfile::tempdir().unwrap();
    let kill = |extra: &[&str]| {
        let args = [
            &[
                "demo",
                "call",
                "container.kill",
                "--param",
                "containerId=web-1",
            ][..],
            extra,
        ]
        .concat();
        cmd_in(dir.path(), &args).output().unwrap()
    };
    let out = kill(&[]);
    let said = stdout(&out) + &stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("--confirm"), "{said}");
    assert!(!said.contains("\"confirm\": true"), "{said}");
    let out = kill(&["--confirm"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A server that cannot start (no key) tells the client that started it why, as the answer
/// to its first request — a client shows that, where it could only show "connection
/// closed" — and still exits with status 2, saying the same on stderr.
#[test]
fn a_server_that_cannot_start_answers_the_clients_first_request() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut child = cmd_in(dir.path(), &[])
        .env("ARCANE_URL", "http://127.0.0.1:9")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).expect(&line);
    assert_eq!(answer["id"], 1, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot start") && message.contains("ARCANE_API_KEY"),
        "{answer}"
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("ARCANE_API_KEY"), "{}", stderr(&out));
}

/// `DELETE /mcp` ends the session and answers 204 No Content (the Streamable HTTP transport's
/// success; clients such as the official Python SDK take rmcp's 202 for a failure): the session
/// is gone afterwards, for requests and for a second DELETE alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_delete_ends_the_session_with_204() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let auth = ("authorization", "Bearer tok");
    let (status, headers, _) = raw_post(&server.base, &[auth], INIT.into()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let in_session = [
        auth,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, _) = raw_post(&server.base, &in_session, initialized.into()).await;
    assert_eq!(status, 202);
    let delete = || async {
        let mut r = reqwest::Client::new().delete(format!("{}/mcp", server.base));
        for (k, v) in in_session {
            r = r.header(k, v);
        }
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    };
    assert_eq!(delete().await, (204, String::new()));
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, _, body) = raw_post(&server.base, &in_session, ping.into()).await;
    assert_eq!(status, 404, "the session is gone: {body}");
    assert_eq!(delete().await.0, 404, "a second DELETE finds no session");
    server.stop().await;
}
