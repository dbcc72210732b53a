//! `arcane-mcp audit-tokens`: the tool-definition sizes per surface stay within the seeds'
//! budgets and within 15% of the committed baseline (the CI check).

mod server_support;

use server_support::spec_path;

fn audit(extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .arg("audit-tokens")
        .arg("--spec")
        .arg(spec_path())
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn sizes_within_budgets_and_baseline() {
    let out = audit(&["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn drift_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baseline.json");
    let out = audit(&["--json"]);
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Pretend the meta surface used to be half its size.
    let meta = v["surfaces"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["surface"] == "meta")
        .unwrap();
    meta["bytes"] = (meta["bytes"].as_u64().unwrap() / 2).into();
    std::fs::write(&path, v.to_string()).unwrap();
    let out = audit(&["--baseline", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("meta bytes"));
}
