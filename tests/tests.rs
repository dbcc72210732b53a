//! The root package's one integration-test binary (`cargo test --test integration`), laid out
//! as ripgrep's: every `tests/*.rs` file is a module here, and the support modules below are
//! compiled once for all of them. One binary links once, where one per file linked twenty
//! times. `Cargo.toml` turns off test auto-discovery, so a new test file runs only when it is
//! declared here — `every_test_file_is_a_module` fails when one is not.
//!
//! Run one file's tests with its module path, e.g. `cargo test --test integration workflows::`.
//! Server tests run the server in-process over `tokio::io::duplex` (`server_support::spawn`);
//! what only a separate process shows (stdio, exit codes, stderr logs, the SDK clients) spawns
//! the binary (`process_support`). See CONTRIBUTING.md, "Tests".

// Support, shared by the test modules. Arcane's documents and the hang guard are the
// workspace's `arcane-test-support` (the other crates' tests and the benches use them too).
use arcane_test_support as fixtures;
mod golden_support;
mod process_support;
#[path = "fixtures/report.rs"]
mod report;
mod server_support;

// Tests.
// The end-to-end group (`scripts/e2e.sh`, which installs what it drives, then enables the
// test-support crate's `e2e` feature): other programs as clients and peers — the Python and
// TypeScript MCP SDKs, Chromium, HAProxy, an OpenID provider. Outside it no test runs a
// program beyond the workspace's own binaries and the base system's.
fixtures::e2e! {
    mod e2e_apps;
    mod e2e_oauth;
    mod e2e_oauth_self;
    mod e2e_release;
    mod e2e_sdk;
}
// Everything else: nothing to install.
mod bombs;
mod catalog;
mod catalog_cache;
mod chaos;
mod cli;
mod doc_links;
mod edge_inputs;
mod handlers_http;
mod hostile;
mod http_server;
mod layout;
mod model_texts;
mod oauth_self;
mod otel;
mod output_schema;
mod packaging;
mod readme;
mod recipes;
mod reload;
mod render_next_steps;
mod search_quality;
mod server_audit;
mod server_confirm;
mod server_errors;
mod server_handlers;
mod server_history;
mod server_impact;
mod server_output_schemas;
mod server_pacing;
mod server_policy;
mod server_prompts;
mod server_redaction;
mod server_reload;
mod server_rendering;
mod server_resources;
mod server_results;
mod server_subscriptions;
mod server_surfaces;
mod server_tasks;
mod server_undo;
mod spec_fetch;
mod toolsnaps;
mod undo_jobs;
mod workflows;

/// With auto-discovery off, a test file nobody declares would silently never run: checked for
/// every crate of the workspace that gathers its tests into one binary, here once.
#[test]
fn every_test_file_is_a_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for dir in [
        "tests",
        "crates/sim/tests",
        "crates/catalog/tests",
        "crates/engine/tests",
        "crates/markdown/tests",
        "crates/redact/tests",
        "crates/token-audit/tests",
    ] {
        let dir = root.join(dir);
        let declared = std::fs::read_to_string(dir.join("tests.rs")).expect("tests.rs is readable");
        for entry in std::fs::read_dir(&dir).expect("the tests folder is readable") {
            let path = entry.expect("a directory entry").path();
            let Some(stem) = path
                .extension()
                .is_some_and(|e| e == "rs")
                .then(|| path.file_stem())
                .flatten()
                .and_then(|s| s.to_str())
            else {
                continue;
            };
            // At the top level, or (indented) in the end-to-end group's `e2e!` block.
            if stem != "tests"
                && !declared.contains(&format!("\nmod {stem};\n"))
                && !declared.contains(&format!("\n    mod {stem};\n"))
            {
                missing.push(path.display().to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} not declared in the tests.rs beside them: add `mod NAME;` there",
        missing.join(", ")
    );
}

/// `cargo test --workspace` needs nothing beside the Rust toolchain: a test that runs a program
/// from outside the workspace (an SDK's interpreter, a browser, a proxy, an identity provider)
/// belongs to the end-to-end group — a `tests/e2e_*.rs` module declared in `e2e!`, compiled
/// only with the test-support crate's `e2e` feature —, never to the plain suite, where a
/// missing program would fail a stranger's run.
#[test]
fn only_the_end_to_end_group_runs_outside_programs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let outside = regex::Regex::new(
        r#"Command::new\(\s*"(node|npm|npx|python3?|pip3?|uvx?|haproxy|chromium|openssl|docker|helm|ruby)"|var\("PYTHON"\)"#,
    )
    .unwrap();
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a tests folder") {
            let path = entry.expect("a directory entry").path();
            if path.file_name().is_some_and(|n| n == "node_modules") {
                continue;
            }
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    for dir in [
        "tests",
        "crates/sim/tests",
        "crates/catalog/tests",
        "crates/engine/tests",
        "crates/markdown/tests",
        "crates/redact/tests",
        "crates/token-audit/tests",
        "crates/test-support",
    ] {
        files(&root.join(dir), &mut all);
    }
    let declared = std::fs::read_to_string(root.join("tests/tests.rs")).unwrap();
    let group = &declared[declared.find("fixtures::e2e! {").expect("the e2e! block")..];
    let group = &group[..=group.find("\n}\n").expect("the e2e! block's end")];
    let mut wrong = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let e2e = rel.starts_with("tests/e2e_");
        if e2e {
            if !group.contains(&format!("\n    mod {stem};\n")) {
                wrong.push(format!("{rel}: not declared in the e2e! block"));
            }
            continue;
        }
        if rel == "tests/tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        if let Some(m) = outside.find(&text) {
            wrong.push(format!("{rel}: {}", m.as_str()));
        }
    }
    assert!(
        wrong.is_empty(),
        "outside programs run outside the end-to-end group (move the test to a \
         tests/e2e_*.rs module): {wrong:?}"
    );
}
