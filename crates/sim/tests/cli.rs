//! The `arcane-sim` binary: one stdout line, answers, exits cleanly on SIGTERM/SIGINT.
//! Also prints the startup measurement reported in crates/sim/README.md.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary spawns")
}

#[cfg(unix)]
fn signal(child: &std::process::Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

#[cfg(unix)]
#[tokio::test]
async fn binary_prints_one_line_answers_and_stops_on_signals() {
    for sig in ["TERM", "INT"] {
        let t0 = Instant::now();
        let spec = spec_v2();
        let mut child = spawn(&[
            "--spec",
            spec.to_str().unwrap(),
            "--api-key",
            "cli-key",
            "--user",
            "dana=dana-key:viewer",
        ]);
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the ready line")
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        let api = TestClient::new(client(), &url, "cli-key");
        api.get("/environments/0/containers").await.expect(200);
        let ready = t0.elapsed();
        // A --user key is accepted.
        let r = api.get("/environments/0/containers").key("dana-key").await;
        r.expect(200);
        eprintln!(
            "startup measurement: spawn → first authenticated answer in {} ms (debug build, 2.8.0 spec)",
            ready.as_millis()
        );
        signal(&child, sig);
        let status = child.wait().unwrap();
        assert!(status.success(), "exit status {status:?} after SIG{sig}");
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "", "stdout gets only the listening line");
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(err.contains("arcane-sim ready"), "logs go to stderr: {err}");
    }
}

/// Without `--spec` the binary serves Arcane 2.8.0's document built into it, from a directory
/// with no spec anywhere: the same document as the repository's copy, and the demo world.
#[cfg(unix)]
#[tokio::test]
async fn binary_without_a_spec_serves_the_builtin_arcane_2_8_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary spawns");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the ready line, got {line:?}"))
        .to_string();
    let api = TestClient::new(client(), &url, arcane_sim::DEFAULT_API_KEY);
    let served = api.get("/openapi.json").anonymous().await.json();
    let repo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spec_v2()).unwrap()).unwrap();
    assert_eq!(served["info"]["version"], "2.8.0");
    assert_eq!(
        served, repo,
        "the built-in document is the repository's 2.8.0 copy"
    );
    let r = api.get("/environments/0/containers").await;
    assert_eq!(r.status(), 200);
    assert!(r.text().contains("web-1"));
    signal(&child, "TERM");
    assert!(child.wait().unwrap().success());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains(arcane_sim::BUILTIN_SPEC_NAME), "{err}");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args(["--spec", "/nonexistent/spec.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot read spec file /nonexistent/spec.json")
    );
    assert!(out.stdout.is_empty());

    // An unknown Arcane version names the accepted ones (clap exits with 2 too).
    let out = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args(["--spec", "x.json", "--arcane-version", "3.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown Arcane version `3.0`") && err.contains("main"),
        "{err}"
    );

    // A user without a key says how to write one.
    let out = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args(["--spec", "x.json", "--user", "alice"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NAME=KEY"), "{err}");

    let dir = std::env::temp_dir().join(format!("arcane-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_state = dir.join("state.yaml");
    std::fs::write(&bad_state, "containers:\n  - name: x\n").unwrap();
    let spec = spec_v2();
    let out = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args([
            "--spec",
            spec.to_str().unwrap(),
            "--state",
            bad_state.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid state file") && err.contains("missing field"),
        "{err}"
    );

    let bad_spec = dir.join("spec.json");
    std::fs::write(&bad_spec, "{\"openapi\": \"3.1.0\"}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_arcane-sim"))
        .args(["--spec", bad_spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no `paths` object"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn state_file_in_yaml_and_json() {
    let dir = std::env::temp_dir().join(format!("arcane-sim-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = dir.join("state.yaml");
    std::fs::write(
        &yaml,
        "environments:\n  - id: \"0\"\n    name: local\ncontainers:\n  - id: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n    name: \"**only**\"\n    image: busybox:1.36\n    state: exited\n",
    )
    .unwrap();
    let mut cfg = arcane_sim::SimConfig::new(spec_v2());
    cfg.state_path = Some(yaml);
    let s = start_with(cfg).await;
    let b = s.get("/environments/0/containers?limit=-1").await.json();
    assert_eq!(b["data"].as_array().unwrap().len(), 1);
    assert_eq!(b["data"][0]["names"][0], "**only**");
    assert_eq!(b["data"][0]["status"], "Exited (0) 2 hours ago");
    assert_eq!(b["counts"]["stoppedContainers"], 1);
    // The same shape as JSON through the hook.
    let state = s.hooks.state().await.unwrap();
    let json_file = dir.join("state.json");
    std::fs::write(&json_file, serde_json::to_vec(&state).unwrap()).unwrap();
    let mut cfg = arcane_sim::SimConfig::new(spec_v2());
    cfg.state_path = Some(json_file);
    let s2 = start_with(cfg).await;
    assert_eq!(s2.hooks.state().await.unwrap(), state);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = Duration::ZERO;
}
