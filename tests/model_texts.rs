//! What the model reads never sends it to `structuredContent`: many clients give the model only
//! a result's text, so a text that says "structuredContent has it" points at something the model
//! cannot see (docs/surfaces.md#three-surfaces). Checked on what the server produces — the
//! instructions and tool definitions of every surface and profile, `arcane_find_action`'s text,
//! the recorded result texts — and on the sources every other text is written from.

use std::path::{Path, PathBuf};

use arcane_catalog::{ClientProfile, Confirmation, Policy};
use arcane_mcp::surface::Surface;

use crate::server_support::catalog;

/// Case-insensitive: the JSON member, and the prose names for it.
const POINTERS: [&str; 3] = [
    "structuredcontent",
    "structured content",
    "structured result",
];

fn pointer_in(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    POINTERS.into_iter().find(|p| lower.contains(p))
}

#[test]
fn instructions_and_tool_definitions_never_point_at_structured_content() {
    let catalog = catalog();
    let mut bad = Vec::new();
    for surface in [Surface::Dynamic, Surface::Meta, Surface::Individual] {
        for safe in [false, true] {
            for confirmation in [
                Confirmation::Ask,
                Confirmation::AskUnlessConfirmed,
                Confirmation::Param,
                Confirmation::NeverDestructive,
            ] {
                let text = arcane_mcp::surface::instructions(surface, "0", safe, confirmation);
                if let Some(p) = pointer_in(&text) {
                    bad.push(format!(
                        "{surface:?} instructions (safe {safe}, {confirmation:?}): {p}"
                    ));
                }
            }
        }
        for profile in [ClientProfile::default(), ClientProfile::Flat] {
            for read_only in [false, true] {
                let mut policy = Policy::new(read_only, false, &[]);
                policy.profile = profile;
                for t in arcane_mcp::surface::tools(surface, &catalog, &policy) {
                    let def = serde_json::to_string(&t).expect("a tool serializes");
                    if let Some(p) = pointer_in(&def) {
                        bad.push(format!("{surface:?} {profile:?} tool {}: {p}", t.name));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn find_texts_never_point_at_structured_content() {
    let snap =
        arcane_mcp::load::snapshot::Snapshot::build(catalog(), Surface::Dynamic, Policy::default())
            .expect("the snapshot builds");
    // Strong, weak and empty answers, with and without guidance lines.
    for q in [
        "restart container",
        "create api key",
        "list containers",
        "why does the web container keep exiting",
        "frobnicate the quantum flux capacitor",
        "zzzz qqqq",
        "deploy a compose project from a git repository",
    ] {
        for limit in [1, 5, 10, 50] {
            let r = arcane_mcp::present::find::find(&snap, q, limit);
            let text: String = r
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            assert!(
                pointer_in(&text).is_none(),
                "{q:?} (limit {limit}):\n{text}"
            );
        }
    }
}

/// Every recorded text (results on the three surfaces, the jobs' transcripts, tool snapshots).
#[test]
fn recorded_texts_never_point_at_structured_content() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut files = 0;
    for path in files_under(&root.join("tests/golden")) {
        let text = std::fs::read_to_string(&path).expect("a golden file is text");
        files += 1;
        for (n, line) in text.lines().enumerate() {
            if let Some(p) = pointer_in(line) {
                bad.push(format!("{}:{}: {p}", path.display(), n + 1));
            }
        }
    }
    assert!(files > 30, "{files} golden files found");
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The sources every text of the server is written from: the code outside comments and test
/// modules, the guides and the overlay and declaration files outside comments. The token audit
/// (`crates/token-audit`) writes to a developer's terminal, never to a model: not scanned.
#[test]
fn sources_of_texts_never_point_at_structured_content() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut scanned = 0;
    let dirs = [
        "src",
        "crates/catalog/src",
        "crates/engine/src",
        "crates/markdown/src",
        "crates/redact/src",
    ];
    for dir in dirs {
        for path in files_under(&root.join(dir)) {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            match ext {
                "rs" => {
                    scanned += 1;
                    for (n, line) in text.lines().enumerate() {
                        // Unit tests come last in a file; what they assert is not served.
                        if line.trim_start().starts_with("#[cfg(test)]") {
                            break;
                        }
                        if line.trim_start().starts_with("//") {
                            continue;
                        }
                        if let Some(p) = pointer_in(line) {
                            bad.push(format!("{}:{}: {p}", path.display(), n + 1));
                        }
                    }
                }
                "md" | "txt" => {
                    scanned += 1;
                    if let Some(p) = pointer_in(&text) {
                        bad.push(format!("{}: {p}", path.display()));
                    }
                }
                _ => {}
            }
        }
    }
    for dir in ["overrides", "catalog"] {
        for path in files_under(&root.join(dir)) {
            let text = std::fs::read_to_string(&path).expect("an overlay is text");
            scanned += 1;
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with('#') {
                    continue;
                }
                if let Some(p) = pointer_in(line) {
                    bad.push(format!("{}:{}: {p}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(scanned > 50, "{scanned} files scanned");
    assert!(bad.is_empty(), "{bad:#?}");
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
