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
    // Cargo.lock does not tell dev-dependencies apart: those named in the crate's Cargo.toml
    // are left out (none of them is also a dependency there).
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let manifest: toml_edit::DocumentMut = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()))
        .parse()
        .expect("Cargo.toml is TOML");
    let dev: Vec<&str> = manifest["dev-dependencies"]
        .as_table_like()
        .expect("Cargo.toml has [dev-dependencies]")
        .iter()
        .map(|(k, _)| k)
        .collect();
    assert!(dev.contains(&"proptest"), "{dev:?}");
    let runtime: Vec<&str> = deps.iter().copied().filter(|d| !dev.contains(d)).collect();
    assert_eq!(
        runtime,
        ["serde_json"],
        "arcane-markdown's dependencies: {deps:?}"
    );
}
