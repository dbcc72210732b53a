//! The command line and logs, through the real binary: `demo`, `call`, `find`, what the logs
//! may contain at any level, startup errors, and where a setting may be written. The binary
//! serving Streamable HTTP is `http_server`'s; the distribution files are `packaging`'s.

use crate::process_support::{BIN, cmd_in, demo, repo, stderr, stdout};
use crate::server_support;

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use server_support::{Sim, call, spec_path, text};

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
    assert!(paths.len() >= 9, "{paths:?}");
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
    for sub in ["check", "catalog"] {
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
