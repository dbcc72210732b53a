//! The crate's border (ARCHITECTURE.md, "Crates"): the engine runs actions and returns data;
//! the MCP protocol belongs to the server, so neither the SDK nor the server crate is reachable
//! from arcane-engine (read from the workspace's Cargo.lock).

#[path = "../../catalog/tests/lockfile/mod.rs"]
mod lockfile;

use lockfile::reachable;

#[test]
fn no_mcp_sdk_or_server_dependency() {
    let all = reachable("arcane-engine");
    // The walk must have followed the engine's own stack.
    assert!(
        [
            "arcane-catalog",
            "arcane-markdown",
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
