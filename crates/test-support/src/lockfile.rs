//! The workspace's Cargo.lock as a dependency graph, for the crates' border tests (the
//! `borders.rs` of arcane-catalog, arcane-engine and arcane-markdown). Cargo.lock records every
//! package a build may use (all features of the workspace's crates), so a dependency that would
//! pull a forbidden crate in shows here even before any code uses it. Cargo.lock does not tell
//! dev-dependencies apart, so those of the crate under test (read from its `Cargo.toml`) are not
//! followed: they never reach a build of the crate itself.
//!
//! A crate is named by its folder: its tests pass `env!("CARGO_MANIFEST_DIR")`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A crate's package name and the dev-dependencies that are not also its dependencies.
fn manifest(crate_dir: &str) -> (String, BTreeSet<String>) {
    let path = Path::new(crate_dir).join("Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let manifest: toml_edit::DocumentMut = text.parse().expect("Cargo.toml is TOML");
    let name = manifest["package"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{} names no package", path.display()))
        .to_string();
    let names = |section: &str| -> BTreeSet<String> {
        manifest
            .get(section)
            .and_then(|t| t.as_table_like())
            .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
            .unwrap_or_default()
    };
    let normal = names("dependencies");
    let dev_only = names("dev-dependencies")
        .into_iter()
        .filter(|d| !normal.contains(d))
        .collect();
    (name, dev_only)
}

/// Every package's dependencies in the workspace's Cargo.lock, the dev-only ones of the crate
/// at `crate_dir` left out; and that crate's name.
fn graph(crate_dir: &str) -> (String, HashMap<String, Vec<String>>) {
    let path = workspace_root().join("Cargo.lock");
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
    let (root, dev) = manifest(crate_dir);
    let direct = deps
        .get_mut(&root)
        .unwrap_or_else(|| panic!("{root} is not in Cargo.lock"));
    direct.retain(|d| !dev.contains(d));
    (root, deps)
}

/// The direct dependencies of the crate at `crate_dir`, its dev-only ones left out.
pub fn direct(crate_dir: &str) -> BTreeSet<String> {
    let (root, deps) = graph(crate_dir);
    deps[&root].iter().cloned().collect()
}

/// Every package reachable from the crate at `crate_dir` in the workspace's Cargo.lock, the
/// crate itself included, its dev-only dependencies left out.
pub fn reachable(crate_dir: &str) -> BTreeSet<String> {
    let (root, deps) = graph(crate_dir);
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            todo.extend(deps.get(&name).into_iter().flatten().cloned());
        }
    }
    seen
}

/// The workspace's folder (the one holding `Cargo.lock`), found from this crate's own.
pub fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}
