//! `arcane-token-audit`'s flags: the tool-definition sizes per surface stay within the seeds'
//! budgets and within 15% of the committed baseline, the result sizes on the demo world too,
//! and a drifted baseline fails the check.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use arcane_test_support::spec_v2;
use serde_json::Value;

/// The repository's root, where the documented commands run (`cargo run -p
/// arcane-token-audit -- …`).
fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The binary in the repository's root with a clean environment.
fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arcane-token-audit"));
    c.current_dir(repo())
        .env_clear()
        .args(args)
        .stdin(Stdio::null());
    c
}

/// The audit of Arcane 2.8.0's document with `extra` flags.
fn audit(extra: &[&str]) -> Output {
    let spec = spec_v2();
    let mut args = vec!["--spec", spec.to_str().unwrap()];
    args.extend_from_slice(extra);
    cmd(&args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn sizes_within_budgets_and_baseline() {
    let out = audit(&["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = |name: &str| {
        v["surfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["surface"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(s("dynamic")["tools"], 2);
    assert!(
        s("dynamic")["bytes"].as_u64().unwrap() <= 1800,
        "dynamic ≤ 1.8 KB"
    );
    assert!(
        s("meta")["bytesPerAction"].as_f64().unwrap() <= 150.0,
        "meta ≤ 150 B/action"
    );
    assert!(
        s("individual")["bytesPerAction"].as_f64().unwrap() <= 1150.0,
        "individual ≤ 1.15 KB/action"
    );
    for sur in ["dynamic", "meta", "individual"] {
        assert!(s(sur)["tokens"].as_u64().unwrap() > 0);
    }

    let out = audit(&["--baseline", "benches/token-baseline.json"]);
    assert!(
        out.status.success(),
        "within 15% of the baseline: {}",
        stderr(&out)
    );

    // Without --spec, in a clone: the built-in 2.8.0 document, the same figures.
    let out = cmd(&["--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let builtin: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(builtin["surfaces"], v["surfaces"]);
}

#[test]
fn drift_fails_the_check_and_write_baseline_refreshes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baseline.json");
    let out = audit(&["--json"]);
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Pretend the meta surface used to be half its size.
    let meta = v["surfaces"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["surface"] == "meta")
        .unwrap();
    meta["bytes"] = (meta["bytes"].as_u64().unwrap() / 2).into();
    std::fs::write(&path, v.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let out = audit(&["--baseline", path]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("meta bytes"), "{}", stderr(&out));

    let out = audit(&["--baseline", path, "--write-baseline"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(audit(&["--baseline", path]).status.success());
    let out = audit(&["--write-baseline"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("needs --baseline"),
        "{}",
        stderr(&out)
    );
}

/// `--results`: the text of the main read results on the demo world stays within 15% of the
/// committed baseline, lists cost at most 0.4× their JSON, and objects at most 0.8×
/// (docs/measurements.md has the figures per object).
#[test]
fn result_tokens_within_baseline() {
    let out = audit(&["--results", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 12, "six lists and six objects");
    let sum = |kind: &str, field: &str| -> u64 {
        results
            .iter()
            .filter(|r| r["kind"] == kind)
            .map(|r| r[field].as_u64().unwrap())
            .sum()
    };
    for r in results {
        assert!(r["textTokens"].as_u64().unwrap() > 0, "{r}");
        assert!(r["structuredTokens"].as_u64().unwrap() > 0, "{r}");
    }
    let lists = sum("list", "textTokens") as f64 / sum("list", "structuredTokens") as f64;
    assert!(lists <= 0.4, "lists cost {lists:.2}× their JSON");
    let objects = sum("object", "textTokens") as f64 / sum("object", "structuredTokens") as f64;
    assert!(objects <= 0.8, "objects cost {objects:.2}× their JSON");

    let out = audit(&[
        "--results",
        "--baseline",
        "benches/result-token-baseline.json",
    ]);
    assert!(
        out.status.success(),
        "within 15% of the baseline: {}",
        stderr(&out)
    );

    // A baseline that says container.get used to cost half as much fails the check.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    let mut base = v.clone();
    let get = base["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["action"] == "container.get")
        .unwrap();
    get["textTokens"] = (get["textTokens"].as_u64().unwrap() / 2).into();
    std::fs::write(&path, base.to_string()).unwrap();
    let out = audit(&["--results", "--baseline", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("container.get text tokens"));
}

/// A reader that closes the pipe first (`… | head`) ends the command quietly, with the exit
/// code it has when the output is read.
#[test]
fn ends_quietly_on_a_closed_pipe() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let normal = audit(&[]);
    let spec = spec_v2();
    let piped = cmd(&["--spec", spec.to_str().unwrap()])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = stderr(&piped);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    assert_eq!(piped.status.code(), normal.status.code(), "{err}");
}

/// `--help` lists the catalog's sources, the URL to fetch the spec from and the logs, and
/// none of the server's other settings.
#[test]
fn help_lists_the_sources_and_no_server_setting() {
    let out = cmd(&["--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    let lists = |flag: &str| {
        help.match_indices(flag).any(|(at, _)| {
            !help[at + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    for present in [
        "--spec",
        "--overrides",
        "--catalog-dir",
        "--arcane-url",
        "--log-level",
        "--baseline",
        "--write-baseline",
        "--json",
        "--results",
    ] {
        assert!(lists(present), "--help lacks {present}:\n{help}");
    }
    for absent in [
        "--transport",
        "--listen",
        "--auth-token",
        "--read-only",
        "--api-key",
    ] {
        assert!(!lists(absent), "--help lists {absent}:\n{help}");
    }
}
