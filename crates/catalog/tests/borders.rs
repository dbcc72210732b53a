//! The crate's border (ARCHITECTURE.md, "Crates"): arcane-catalog is data and computation only,
//! so nothing it depends on, directly or through other crates, is a network client, an async
//! runtime or the MCP SDK. Read from the workspace's Cargo.lock, which records every package a
//! build may use (all features of the workspace's crates), so a dependency that would pull one
//! in fails here even before any code uses it.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// Every package reachable from `root` in the workspace's Cargo.lock, `root` included.
fn reachable(root: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let lock: toml_edit::DocumentMut = text.parse().expect("Cargo.lock is TOML");
    let packages = lock["package"]
        .as_array_of_tables()
        .expect("Cargo.lock has [[package]] tables");
    // A dependency is written "name" or "name version" (when several versions are locked);
    // the name is enough to follow every version.
    let mut deps: HashMap<String, Vec<String>> = HashMap::new();
    for p in packages {
        let name = p["name"]
            .as_str()
            .expect("a package has a name")
            .to_string();
        let entry = deps.entry(name).or_default();
        if let Some(list) = p.get("dependencies").and_then(|d| d.as_array()) {
            for d in list.iter().filter_map(|d| d.as_str()) {
                entry.push(d.split(' ').next().unwrap_or(d).to_string());
            }
        }
    }
    assert!(deps.contains_key(root), "{root} is not in Cargo.lock");
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            todo.extend(deps.get(&name).into_iter().flatten().cloned());
        }
    }
    seen
}

#[test]
fn no_network_runtime_or_mcp_dependency() {
    let all = reachable("arcane-catalog");
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
    assert!(!reachable("arcane-catalog").contains("arcane-markdown"));
}
