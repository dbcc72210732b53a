//! The crate's border (ARCHITECTURE.md, "Crates"): the tokenizer is this developer tool's, and
//! the shipped server reaches none of it (read from the workspace's Cargo.lock, the server's
//! dev-dependencies, this crate among them, left out).

use arcane_test_support::lockfile::reachable;

#[test]
fn the_server_links_no_tokenizer() {
    let audit = reachable(env!("CARGO_MANIFEST_DIR"));
    // The walk must have followed the tokenizer and the server from here.
    for d in ["tiktoken-rs", "arcane-mcp", "arcane-sim"] {
        assert!(audit.contains(d), "{d} not reached: {audit:?}");
    }
    let server = reachable(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    assert!(server.contains("rmcp"), "the server's walk: {server:?}");
    let linked: Vec<&str> = ["tiktoken-rs", "arcane-token-audit"]
        .into_iter()
        .filter(|d| server.contains(*d))
        .collect();
    assert!(
        linked.is_empty(),
        "arcane-mcp reaches {linked:?}; the token audit is a developer tool (docs/measurements.md)"
    );
}
