//! The crate's border (ARCHITECTURE.md, "Crates"): arcane-markdown is pure functions over
//! serde_json values, so the fuzz target of the escaper builds it alone. Read from the
//! workspace's Cargo.lock.

#[test]
fn depends_on_serde_json_only() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let lock: toml_edit::DocumentMut = text.parse().expect("Cargo.lock is TOML");
    let me = lock["package"]
        .as_array_of_tables()
        .expect("Cargo.lock has [[package]] tables")
        .iter()
        .find(|p| p["name"].as_str() == Some("arcane-markdown"))
        .expect("arcane-markdown is in Cargo.lock");
    let deps: Vec<&str> = me
        .get("dependencies")
        .and_then(|d| d.as_array())
        .map(|a| a.iter().filter_map(|d| d.as_str()).collect())
        .unwrap_or_default();
    // proptest and toml_edit are its dev-dependencies (Cargo.lock does not tell them apart).
    let runtime: Vec<&str> = deps
        .iter()
        .copied()
        .filter(|d| !matches!(*d, "proptest" | "toml_edit"))
        .collect();
    assert_eq!(
        runtime,
        ["serde_json"],
        "arcane-markdown's dependencies: {deps:?}"
    );
}
