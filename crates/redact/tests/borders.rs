//! The crate's border (ARCHITECTURE.md, "Crates"): the redactor is pure text and JSON work, used
//! by the engine, the presentation, the resources and the audit log alike, so it reaches none of
//! them, no network client, no async runtime and no MCP SDK (read from the workspace's
//! Cargo.lock).

use arcane_test_support::lockfile::reachable;

#[test]
fn no_engine_network_runtime_or_mcp_dependency() {
    let all = reachable(env!("CARGO_MANIFEST_DIR"));
    // The walk must have followed the redactor's own stack.
    assert!(
        ["regex", "aho-corasick", "serde_json", "sha2"]
            .iter()
            .all(|d| all.contains(*d)),
        "{all:?}"
    );
    let forbidden: Vec<&str> = [
        "arcane-engine",
        "arcane-catalog",
        "arcane-markdown",
        "arcane-mcp",
        "arcane-sim",
        "rmcp",
        "reqwest",
        "tokio",
        "hyper",
    ]
    .into_iter()
    .filter(|f| all.contains(*f))
    .collect();
    assert!(
        forbidden.is_empty(),
        "arcane-redact reaches {forbidden:?}; the redactor judges text and JSON only"
    );
}
