//! The crate's border (ARCHITECTURE.md, "Crates"): the engine runs actions and returns data;
//! the MCP protocol belongs to the server, so neither the SDK nor the server crate is reachable
//! from arcane-engine (read from the workspace's Cargo.lock).

use arcane_test_support::lockfile::reachable;

#[test]
fn no_mcp_sdk_or_server_dependency() {
    let all = reachable(env!("CARGO_MANIFEST_DIR"));
    // The walk must have followed the engine's own stack.
    assert!(
        [
            "arcane-catalog",
            "arcane-markdown",
            "arcane-redact",
            "reqwest",
            "tokio-tungstenite",
            "rustls"
        ]
        .iter()
        .all(|d| all.contains(*d)),
        "{all:?}"
    );
    let forbidden: Vec<&str> = ["rmcp", "arcane-mcp", "arcane-sim", "axum"]
        .into_iter()
        .filter(|f| all.contains(*f))
        .collect();
    assert!(
        forbidden.is_empty(),
        "arcane-engine reaches {forbidden:?}; keep MCP code in the server crate (present/ and its glue)"
    );
}

/// Requests to Arcane say `arcane-mcp/<version>` with the engine's own version, so the engine
/// and the server are released together.
#[test]
fn the_engine_has_the_server_version() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let manifest: toml_edit::DocumentMut = text.parse().expect("Cargo.toml is TOML");
    assert_eq!(
        manifest["package"]["version"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "set crates/engine/Cargo.toml's version to the server's"
    );
}
