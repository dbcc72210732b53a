//! The root package's one integration-test binary (`cargo test --test integration`), laid out
//! as ripgrep's: every `tests/*.rs` file is a module here, and the support modules below are
//! compiled once for all of them. One binary links once, where one per file linked twenty
//! times. `Cargo.toml` turns off test auto-discovery, so a new test file runs only when it is
//! declared here — `every_test_file_is_a_module` fails when one is not.
//!
//! Run one file's tests with its module path, e.g. `cargo test --test integration workflows::`.
//! Server tests run the server in-process over `tokio::io::duplex` (`server_support::spawn`);
//! what only a separate process shows (stdio, exit codes, stderr logs, the SDK clients) spawns
//! the binary. See ARCHITECTURE.md, "Tests".

// Support, shared by the test modules. Arcane's documents and the hang guard are the
// workspace's `arcane-test-support` (the other crates' tests and the benches use them too).
use arcane_test_support as fixtures;
mod golden_support;
#[path = "fixtures/report.rs"]
mod report;
mod server_support;

// Tests.
mod apps;
mod bombs;
mod catalog;
mod catalog_cache;
mod chaos;
mod cli;
mod edge_inputs;
mod handlers_http;
mod hostile;
mod layout;
mod model_texts;
mod oauth;
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
mod spec_fetch;
mod toolsnaps;
mod workflows;

/// With auto-discovery off, a test file nobody declares would silently never run: checked for
/// every crate of the workspace that gathers its tests into one binary, here once.
#[test]
fn every_test_file_is_a_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for dir in [
        "tests",
        "sim/tests",
        "crates/catalog/tests",
        "crates/engine/tests",
        "crates/markdown/tests",
        "crates/redact/tests",
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
            if stem != "tests" && !declared.contains(&format!("\nmod {stem};\n")) {
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
