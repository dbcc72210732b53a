//! The crate's border (ARCHITECTURE.md, "Crates"): arcane-markdown is pure functions over
//! serde_json values (chrono only to show a Unix time as a date), so the fuzz target of the
//! escaper builds it alone. Read from the workspace's Cargo.lock.

use arcane_test_support::lockfile::direct;

#[test]
fn depends_on_serde_json_and_chrono_only() {
    let deps = direct(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        deps.iter().map(String::as_str).collect::<Vec<_>>(),
        ["chrono", "serde_json"],
        "arcane-markdown's dependencies: {deps:?}"
    );
}
