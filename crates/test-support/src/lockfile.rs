//! The workspace's Cargo.lock as a dependency graph, for the crates' border tests (this crate's
//! `borders.rs`, and arcane-engine's through `#[path]`). Cargo.lock records every package a
//! build may use (all features of the workspace's crates), so a dependency that would pull a
//! forbidden crate in shows here even before any code uses it. Cargo.lock does not tell
//! dev-dependencies apart, so those of the crate under test (read from its `Cargo.toml`) are not
//! followed: they never reach a build of the crate itself.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The dev-dependencies of the crate whose tests include this module that are not also its
/// dependencies.
fn dev_only() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let manifest: toml_edit::DocumentMut = text.parse().expect("Cargo.toml is TOML");
    let names = |section: &str| -> BTreeSet<String> {
        manifest
            .get(section)
            .and_then(|t| t.as_table_like())
            .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default()
    };
    let normal = names("dependencies");
    names("dev-dependencies")
        .into_iter()
        .filter(|d| !normal.contains(d))
        .collect()
}

/// Every package reachable from `root` (the crate under test) in the workspace's Cargo.lock,
/// `root` included, its dev-only dependencies left out.
pub fn reachable(root: &str) -> BTreeSet<String> {
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
    let dev = dev_only();
    if let Some(direct) = deps.get_mut(root) {
        direct.retain(|d| !dev.contains(d));
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            todo.extend(deps.get(&name).into_iter().flatten().cloned());
        }
    }
    seen
}
