//! The house's invariants that the sources themselves show (ARCHITECTURE.md, "Invariants"):
//! no crate's modules import in a circle, and the protocol crate stays at the edge.

use std::path::{Path, PathBuf};

use arcane_test_support::layout::{find_cycle, graph};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every crate of the workspace: name lookups read through the one client (`http.rs`) and
/// the lists they keep, not through the executor that calls them, and a module names another
/// by its path, never by the crate root's re-exports (the root declares every module).
#[test]
fn no_crate_imports_in_a_circle() {
    for src in [
        "src",
        "crates/catalog/src",
        "crates/engine/src",
        "crates/markdown/src",
        "crates/redact/src",
        "crates/test-support/src",
        "crates/sim/src",
        "crates/token-audit/src",
    ] {
        let g = graph(&root().join(src));
        // Every module file is a node (a binary's `main.rs` is none).
        let mut files = Vec::new();
        rust_files(&root().join(src), &mut files);
        let modules = files.iter().filter(|f| !f.ends_with("main.rs")).count();
        assert_eq!(g.len(), modules, "{src}: the graph was read ({g:?})");
        if let Some(cycle) = find_cycle(&g) {
            panic!(
                "{src} imports in a circle: {} — move what both sides need into a lower module",
                cycle.join(" → ")
            );
        }
    }
}

/// Every answer body from Arcane (or an identity provider) is read by the engine's `http.rs`,
/// capped (ARCHITECTURE.md, "Invariants"): no other code of the shipped crates reads one.
#[test]
fn only_the_engines_http_module_reads_an_answer_body() {
    let readers = [
        ".json().await",
        ".bytes().await",
        ".text().await",
        "bytes_stream()",
        ".chunk().await",
    ];
    let mut files = Vec::new();
    for dir in ["src", "crates"] {
        rust_files(&root().join(dir), &mut files);
    }
    let http = root().join("crates/engine/src/http.rs");
    let mut found = Vec::new();
    for f in files.iter().filter(|f| **f != http) {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // Tests and the test-support crate read what they check; the simulator stands in for
        // Arcane (its hooks client reads the simulator's own answers, for tests).
        if rel.contains("/tests/")
            || rel.starts_with("crates/test-support/")
            || rel.starts_with("crates/sim/")
        {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            if !line.trim_start().starts_with("//") && readers.iter().any(|r| line.contains(r)) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "answer bodies read outside crates/engine/src/http.rs (use read_capped, read_json or \
         body_stream there):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_server_crates_graph_is_the_real_one() {
    // The pipeline reaches the engine's answer through presentation, and the transport the
    // handler: a reader that lost the edges would find no circle anywhere.
    let g = graph(&root().join("src"));
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    assert!(g[&path("mcp::call")].contains(&path("present")), "{g:?}");
    assert!(g[&path("transport::http")].contains(&path("app")), "{g:?}");
    assert!(
        !g[&path("mcp::handler")].contains(&path("transport::http")),
        "{g:?}"
    );
}

/// Where the server crate may name rmcp: the protocol's types come in at the tool surfaces
/// and stay above them. Loading (`load/` but the snapshot's tool list), the settings, the
/// logs and the metrics never see MCP.
#[test]
fn rmcp_is_named_only_at_the_protocol_edge() {
    let allowed = [
        "src/surface/",
        "src/present/",
        "src/resources/",
        "src/mcp/",
        "src/transport/",
        "src/cmd/",
        "src/app.rs",
        "src/load/snapshot.rs",
    ];
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut outside = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let names = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .any(|l| l.contains("rmcp::") || l.contains("use rmcp"));
        if names && !allowed.iter().any(|a| rel.starts_with(a)) {
            outside.push(rel);
        }
    }
    assert!(files.len() > 30, "the sources were read");
    assert!(
        outside.is_empty(),
        "{} name rmcp outside the protocol edge ({allowed:?})",
        outside.join(", ")
    );
}

/// ARCHITECTURE.md stays a map (short) and true: every file or folder it names exists — as
/// written from the repository's root, or as the end of a path in a crate's sources (the map
/// names `handler.rs` under its folder `mcp/`).
#[test]
fn the_architecture_map_is_short_and_names_what_exists() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let words = text.split_whitespace().count();
    assert!(
        words <= 1500,
        "ARCHITECTURE.md has {words} words; keep it a map (≤ 1,500)"
    );
    let path = regex::Regex::new(r"`([\w./-]+(?:\.(?:rs|md|yaml|json)|/))`").unwrap();
    let mut sources = Vec::new();
    for dir in ["src", "crates", "crates/sim/src"] {
        rust_and_folders(&root().join(dir), &mut sources);
    }
    let mut missing = Vec::new();
    let mut named = 0;
    for c in path.captures_iter(&text) {
        let p = c[1].trim_end_matches('/');
        named += 1;
        let found = root().join(p).exists() || sources.iter().any(|s| s.ends_with(p));
        if !found && !p.contains('*') {
            missing.push(p.to_string());
        }
    }
    assert!(named > 20, "the paths were read ({named})");
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what does not exist: {missing:?}"
    );
}

fn rust_and_folders(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a directory entry").path();
        if path
            .file_name()
            .is_some_and(|n| n == "target" || n == "node_modules")
        {
            continue;
        }
        out.push(path.clone());
        if path.is_dir() {
            rust_and_folders(&path, out);
        }
    }
}
