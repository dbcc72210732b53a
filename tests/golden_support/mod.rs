//! The golden-file helper of every golden test (rendered results, operator jobs, tool
//! definitions): compare exactly with a file under `tests/golden/`, or write it when the test
//! runs with `UPDATE_GOLDEN=1`, so that a change shows as a diff in review.
#![allow(dead_code)]

use std::path::PathBuf;

/// `tests/golden/`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Whether this run rewrites the golden files (`UPDATE_GOLDEN=1`).
pub fn updating() -> bool {
    std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1")
}

/// Compares `actual` with `tests/golden/{name}` (or, with `UPDATE_GOLDEN=1`, writes it) and
/// returns what differs: the first differing line, then the whole new text.
pub fn check(name: &str, actual: &str) -> Option<String> {
    let path = dir().join(name);
    if updating() {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
        }
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return None;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    if actual == want {
        return None;
    }
    let line = actual
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| actual.lines().count().min(want.lines().count()));
    Some(format!(
        "{} differs from line {}:\n  now: {:?}\n  was: {:?}\nrerun with UPDATE_GOLDEN=1 and \
         review the diff\n--- now ---\n{actual}",
        path.display(),
        line + 1,
        actual.lines().nth(line).unwrap_or("<end>"),
        want.lines().nth(line).unwrap_or("<end>")
    ))
}

/// Like [`check`], failing the test on a difference.
pub fn assert(name: &str, actual: &str) {
    if let Some(diff) = check(name, actual) {
        panic!("{diff}");
    }
}
