//! `arcane-mcp audit-tokens`: the tool-definition sizes per surface stay within the seeds'
//! budgets and within 15% of the committed baseline (the CI check).

use crate::server_support;

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

/// `audit-tokens --results`: the text of the main read results on the demo world stays within
/// 15% of the committed baseline, lists cost at most 0.4× their JSON, and objects at most 0.8×
/// (docs/measurements.md has the figures per object).
#[test]
fn result_tokens_within_baseline() {
    let out = audit(&["--results", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
        String::from_utf8_lossy(&out.stderr)
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
    assert!(String::from_utf8_lossy(&out.stderr).contains("container.get text tokens"));
}
