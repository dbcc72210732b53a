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

// Support, shared by the test modules.
mod fixtures;
mod golden_support;
mod render_support;
mod server_support;

// Tests.
mod catalog;
mod cli;
mod handlers_http;
mod handlers_ws;
mod hostile;
mod output_schema;
mod reload;
mod render_escape;
mod render_markdown;
mod render_next_steps;
mod render_props;
mod search_quality;
mod server_audit;
mod server_errors;
mod server_handlers;
mod server_output_schemas;
mod server_policy;
mod server_reload;
mod server_rendering;
mod server_resources;
mod server_surfaces;
mod spec_fetch;
mod toolsnaps;
mod workflows;

/// With auto-discovery off, a test file nobody declares above would silently never run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = include_str!("tests.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
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
        if stem != "tests" && !this.contains(&format!("\nmod {stem};\n")) {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/{{{}}}.rs are not declared in tests/tests.rs: add `mod NAME;` there",
        missing.join(",")
    );
}
