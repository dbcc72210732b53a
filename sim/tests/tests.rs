//! The simulator's one integration-test binary (`cargo test -p arcane-sim --test integration`):
//! every `tests/*.rs` file is a module here, with `common` compiled once. `Cargo.toml` turns
//! off test auto-discovery, so a new test file runs only when it is declared here —
//! `every_test_file_is_a_module` fails when one is not.

mod common;

mod cli;
mod conformance;
mod faults;
mod http;
mod ws;

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
        "sim/tests/{{{}}}.rs are not declared in sim/tests/tests.rs: add `mod NAME;` there",
        missing.join(",")
    );
}
