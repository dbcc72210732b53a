//! The crate's border (ARCHITECTURE.md, "Crates"): arcane-catalog is data and computation only,
//! so nothing it depends on, directly or through other crates, is a network client, an async
//! runtime or the MCP SDK. Read from the workspace's Cargo.lock, which records every package a
//! build may use (all features of the workspace's crates), so a dependency that would pull one
//! in fails here even before any code uses it.

use arcane_test_support::lockfile::reachable;

#[test]
fn no_network_runtime_or_mcp_dependency() {
    let all = reachable(env!("CARGO_MANIFEST_DIR"));
    // tantivy and jsonschema bring a few hundred; the walk must have followed them.
    assert!(
        all.contains("tantivy") && all.contains("jsonschema"),
        "{all:?}"
    );
    let forbidden: Vec<&str> = [
        "rmcp",
        "reqwest",
        "tokio",
        "hyper",
        "arcane-mcp",
        "arcane-sim",
    ]
    .into_iter()
    .filter(|f| all.contains(*f))
    .collect();
    assert!(
        forbidden.is_empty(),
        "arcane-catalog reaches {forbidden:?}; keep network, runtime and MCP code in the server crate"
    );
}

#[test]
fn independent_of_the_markdown_crate() {
    assert!(!reachable(env!("CARGO_MANIFEST_DIR")).contains("arcane-markdown"));
}
