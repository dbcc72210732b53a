//! Strict YAML for every YAML file the server reads (overlays, declarations, a YAML OpenAPI
//! document): one pass over the marked event stream before any value is built.
//!
//! yaml_serde turns a file into a value but keeps no positions, lets a later duplicate key
//! silently replace an earlier one (when the target is a JSON value or a map), walks deeply
//! nested input slowly, and expands every alias into a full copy of its anchored node: a 30 KB
//! file that repeats one large list thousands of times through aliases becomes a value of many
//! gigabytes. This pass, over `saphyr-parser`'s events (each with its line), refuses what an
//! operator cannot have meant and records where every key and sequence item sits:
//! * a file larger than its [`Limits::max_bytes`] or nested deeper than [`Limits::max_depth`]
//!   is refused early;
//! * a file whose nodes, **with every alias expanded**, number more than [`Limits::max_nodes`]
//!   is refused: each alias counts the size of the node it repeats, so the count is that of the
//!   value yaml_serde would build, known before it is built;
//! * a key given twice in one mapping is an error naming both lines;
//! * [`LineMap`] answers "which line holds `actions.container.list.title`", so schema errors
//!   and unmatched overlay entries name the line of the very occurrence they are about.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// The largest overlay or declaration file accepted (the built-in ones total about 30 KB).
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// The deepest nesting of mappings and sequences accepted (the built-in files need under 10).
pub const MAX_DEPTH: usize = 64;

/// The most nodes (scalars, mappings, sequences), aliases expanded, of an overlay or
/// declaration file (the largest built-in one, `overrides/usage.yaml`, has under 2,000).
pub const MAX_NODES: u64 = 250_000;

/// The largest OpenAPI document accepted, as a file or fetched from Arcane (2.8.0's is
/// 0.6 MB).
pub const MAX_SPEC_BYTES: usize = 8 * 1024 * 1024;

/// The most nodes, aliases expanded, of a YAML OpenAPI document (1.11.2's has about 23,500).
pub const MAX_SPEC_NODES: u64 = 1_000_000;

/// The deepest nesting of a YAML OpenAPI document (serde_json's own limit for a JSON one).
pub const MAX_SPEC_DEPTH: usize = 128;

/// What one kind of file may hold, and what to tell its author when it holds more.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub max_nodes: u64,
    /// The next step of an error, e.g. "split it into several files".
    pub remedy: &'static str,
}

/// Overlay and declaration files.
pub const OPERATOR_FILE: Limits = Limits {
    max_bytes: MAX_FILE_BYTES,
    max_depth: MAX_DEPTH,
    max_nodes: MAX_NODES,
    remedy: "overlay and declaration files need only a few levels and no large repeated parts; write the entries out or split them into several files",
};

/// A YAML OpenAPI document.
pub const SPEC_FILE: Limits = Limits {
    max_bytes: MAX_SPEC_BYTES,
    max_depth: MAX_SPEC_DEPTH,
    max_nodes: MAX_SPEC_NODES,
    remedy: "this is not Arcane's document; use the one Arcane serves at /api/openapi.json (--spec PATH)",
};

/// Any other YAML text: the simulator's state file and the compose files sent to it.
pub const DATA_FILE: Limits = Limits {
    max_bytes: MAX_FILE_BYTES,
    max_depth: MAX_DEPTH,
    max_nodes: MAX_NODES,
    remedy: "write the repeated parts out instead of repeating them through aliases, or make the file smaller",
};

/// Where each key and sequence item of a file sits: path (keys and indexes) → 1-based line.
#[derive(Debug, Clone, Default)]
pub struct LineMap {
    lines: HashMap<Vec<String>, usize>,
}

impl LineMap {
    /// The line of a path, or of its nearest ancestor that has one (1 for the document).
    pub fn line_of<S: AsRef<str>>(&self, path: &[S]) -> usize {
        let mut path: Vec<String> = path.iter().map(|s| s.as_ref().to_string()).collect();
        loop {
            if let Some(&line) = self.lines.get(&path) {
                return line;
            }
            if path.pop().is_none() {
                return 1;
            }
        }
    }

    /// The line of a path, if it is in the file.
    pub fn exact<S: AsRef<str>>(&self, path: &[S]) -> Option<usize> {
        let path: Vec<String> = path.iter().map(|s| s.as_ref().to_string()).collect();
        self.lines.get(&path).copied()
    }
}

/// One node being read: its path and what it expects next.
struct Frame {
    path: Vec<String>,
    kind: FrameKind,
    /// The anchor the node defines (0: none) and the node count when it started, so that its
    /// expanded size is known when it ends.
    anchor: usize,
    start: u64,
}

enum FrameKind {
    /// A mapping: the keys seen (→ line), and the key whose value comes next, if any.
    Map {
        seen: HashMap<String, usize>,
        key: Option<String>,
    },
    /// A sequence: the index of the next item.
    Seq { next: usize },
}

/// Checks an overlay or declaration file's size, nesting, expanded size and keys, and maps
/// its keys to lines ([`OPERATOR_FILE`]).
///
/// Errors read `ORIGIN:LINE: what is wrong — how to fix`.
pub fn scan(text: &str, origin: &str) -> Result<LineMap, String> {
    walk(text, origin, &OPERATOR_FILE, true).map(|(lines, _)| lines)
}

/// The same checks for a YAML OpenAPI document ([`SPEC_FILE`]), without the line map.
pub fn check_spec(text: &str, origin: &str) -> Result<(), String> {
    walk(text, origin, &SPEC_FILE, false).map(drop)
}

/// The checks alone (size, nesting, values with aliases expanded, duplicate keys), for YAML
/// that is not a catalog file: run it before handing the text to yaml_serde.
pub fn check(text: &str, origin: &str, limits: &Limits) -> Result<(), YamlError> {
    walk(text, origin, limits, false)
        .map(drop)
        .map_err(YamlError)
}

/// A YAML text that fails [`check`]; its `Display` reads `ORIGIN:LINE: what is wrong — how to
/// fix`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(String);

/// The checks; the line map (when `record`) and the expanded node count.
fn walk(text: &str, origin: &str, limits: &Limits, record: bool) -> Result<(LineMap, u64), String> {
    if text.len() > limits.max_bytes {
        return Err(too_large(origin, text.len(), limits));
    }
    let mut map = LineMap::default();
    let mut stack: Vec<Frame> = Vec::new();
    // Nodes so far with every alias expanded, and the expanded size of each anchored node.
    let mut nodes: u64 = 0;
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| {
            let line = e.marker().line();
            // The scanner reads nested flow collections ahead and has its own (higher) cap.
            if e.info().contains("recursion limit") {
                too_deep(origin, line, limits)
            } else {
                format!("{origin}:{line}: invalid YAML: {}", e.info())
            }
        })?;
        let line = span.start.line();
        let (starts, size) = match &event {
            Event::Scalar(_, _, anchor, _) => {
                if *anchor != 0 {
                    anchors.insert(*anchor, 1);
                }
                (Some(false), 1)
            }
            Event::Alias(anchor) => {
                let Some(&size) = anchors.get(anchor) else {
                    return Err(format!(
                        "{origin}:{line}: the alias repeats a node it is part of (a recursive structure) — write the value out"
                    ));
                };
                (Some(false), size)
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => (Some(true), 1),
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(frame) = stack.pop()
                    && frame.anchor != 0
                {
                    anchors.insert(frame.anchor, nodes - frame.start + 1);
                }
                (None, 0)
            }
            _ => (None, 0),
        };
        let Some(is_container) = starts else { continue };
        nodes = nodes.saturating_add(size);
        if nodes > limits.max_nodes {
            return Err(too_many_nodes(origin, line, limits));
        }
        // Where this node sits: a key of the enclosing mapping, a value, or a sequence item.
        let child_path = match stack.last_mut() {
            None => Some(Vec::new()),
            Some(Frame {
                path,
                kind: FrameKind::Map { seen, key },
                ..
            }) => match key.take() {
                Some(k) => {
                    let mut p = path.clone();
                    p.push(k);
                    Some(p)
                }
                None => {
                    let Event::Scalar(k, ..) = &event else {
                        return Err(format!(
                            "{origin}:{line}: a mapping key must be plain text, not a list, mapping or alias — write the key as a word"
                        ));
                    };
                    let k = k.to_string();
                    if let Some(first) = seen.insert(k.clone(), line) {
                        return Err(format!(
                            "{origin}:{line}: duplicate key `{k}` (first at line {first}) — the later one would silently replace the earlier; merge them into one entry"
                        ));
                    }
                    if record {
                        let mut p = path.clone();
                        p.push(k.clone());
                        map.lines.insert(p, line);
                    }
                    *key = Some(k);
                    None
                }
            },
            Some(Frame {
                path,
                kind: FrameKind::Seq { next },
                ..
            }) => {
                let mut p = path.clone();
                p.push(next.to_string());
                *next += 1;
                if record {
                    map.lines.insert(p.clone(), line);
                }
                Some(p)
            }
        };
        let (Some(path), true) = (child_path, is_container) else {
            continue;
        };
        if stack.len() >= limits.max_depth {
            return Err(too_deep(origin, line, limits));
        }
        let (kind, anchor) = match &event {
            Event::MappingStart(anchor, _) => (
                FrameKind::Map {
                    seen: HashMap::new(),
                    key: None,
                },
                *anchor,
            ),
            Event::SequenceStart(anchor, _) => (FrameKind::Seq { next: 0 }, *anchor),
            _ => unreachable!("only a mapping or sequence start opens a frame"),
        };
        // Paths are only needed for the line map.
        let path = if record { path } else { Vec::new() };
        stack.push(Frame {
            path,
            kind,
            anchor,
            start: nodes,
        });
    }
    Ok((map, nodes))
}

fn too_deep(origin: &str, line: usize, limits: &Limits) -> String {
    format!(
        "{origin}:{line}: nested deeper than {} levels — {}",
        limits.max_depth, limits.remedy
    )
}

fn too_many_nodes(origin: &str, line: usize, limits: &Limits) -> String {
    format!(
        "{origin}:{line}: the file expands to more than {} values (aliases count the values they repeat) — {}",
        limits.max_nodes, limits.remedy
    )
}

/// The error for a file over its size limit.
pub fn too_large(origin: &str, len: usize, limits: &Limits) -> String {
    format!(
        "{origin}:1: the file is {len} bytes, over the limit of {} — {}",
        limits.max_bytes, limits.remedy
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keys_and_items_to_lines() {
        let text = "actions:\n  a.b:\n    title: x\n    related:\n      - c.d\n      - e.f\n  g.h: {title: y}\n";
        let map = scan(text, "f.yaml").unwrap();
        assert_eq!(map.exact(&["actions", "a.b"]), Some(2));
        assert_eq!(map.exact(&["actions", "a.b", "title"]), Some(3));
        assert_eq!(map.exact(&["actions", "a.b", "related", "1"]), Some(6));
        assert_eq!(map.exact(&["actions", "g.h", "title"]), Some(7));
        assert_eq!(map.line_of(&["actions", "a.b", "usage"]), 2);
        assert_eq!(map.line_of(&["nothing"]), 1);
    }

    #[test]
    fn duplicate_keys_name_both_lines() {
        let text = "actions:\n  a.b:\n    title: x\n  c.d: {}\n  a.b:\n    title: y\n";
        let err = scan(text, "f.yaml").unwrap_err();
        assert!(
            err.starts_with("f.yaml:5: duplicate key `a.b` (first at line 2)"),
            "{err}"
        );
        let err = scan("a: {x: 1, x: 2}\n", "g.yaml").unwrap_err();
        assert!(err.contains("duplicate key `x`"), "{err}");
        // The same key in two different mappings is fine.
        scan("a: {x: 1}\nb: {x: 2}\n", "h.yaml").unwrap();
    }

    #[test]
    fn deep_and_large_files_are_refused() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = scan(&deep, "deep.yaml").unwrap_err();
        assert!(err.starts_with("deep.yaml:1: nested deeper than"), "{err}");
        let mut block = String::new();
        for i in 0..200 {
            block.push_str(&" ".repeat(i));
            block.push_str("k:\n");
        }
        let err = scan(&block, "block.yaml").unwrap_err();
        assert!(err.starts_with("block.yaml:65: nested deeper"), "{err}");
        let big = "a: b\n".repeat(MAX_FILE_BYTES / 5 + 1);
        assert!(
            scan(&big, "big.yaml")
                .unwrap_err()
                .contains("over the limit")
        );
    }

    /// A file that repeats one list thousands of times through aliases: about 30 KB of text
    /// that yaml_serde would expand into tens of millions of values.
    fn alias_bomb() -> String {
        let mut text = String::from("base: &a [");
        text.push_str(&vec!["x"; 5000].join(","));
        text.push_str("]\nmany:\n");
        for _ in 0..5000 {
            text.push_str("- *a\n");
        }
        text
    }

    #[test]
    fn aliases_are_counted_expanded() {
        let bomb = alias_bomb();
        assert!(bomb.len() < 40_000, "{}", bomb.len());
        let err = scan(&bomb, "bomb.yaml").unwrap_err();
        assert!(
            err.starts_with("bomb.yaml:") && err.contains("expands to more than 250000 values"),
            "{err}"
        );
        let err = check_spec(&format!("openapi: 3.1.0\n{bomb}"), "spec.yaml").unwrap_err();
        assert!(err.contains("more than 1000000 values"), "{err}");
        assert!(err.contains("/api/openapi.json"), "{err}");
        // Nested anchors multiply: each level repeats the one before ten times.
        let mut nested = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let p = i - 1;
            nested.push_str(&format!(
                "l{i}: &l{i} [{}]\n",
                vec![format!("*l{p}"); 10].join(", ")
            ));
        }
        let err = scan(&nested, "nested.yaml").unwrap_err();
        assert!(err.contains("expands to more than"), "{err}");
        // A few aliases of small nodes are fine, and counted as what they repeat.
        scan("a: &x {k: v}\nb: *x\nc: [*x, *x]\n", "ok.yaml").unwrap();
        // An alias to a node still open is refused, not followed.
        let err = scan("a: &x [1, *x]\n", "rec.yaml").unwrap_err();
        assert!(err.contains("recursive"), "{err}");
    }

    #[test]
    fn real_files_are_far_below_the_budgets() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        for dir in ["overrides", "catalog"] {
            for entry in std::fs::read_dir(format!("{root}{dir}")).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "yaml") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let n = count(&text, &OPERATOR_FILE);
                    eprintln!("{}: {n} values", path.display());
                    assert!(n * 50 < MAX_NODES, "{}: {n}", path.display());
                }
            }
        }
        let text =
            std::fs::read_to_string(format!("{root}third_party/arcane/openapi-v1.11.2.yaml"))
                .unwrap();
        let n = count(&text, &SPEC_FILE);
        eprintln!("openapi-v1.11.2.yaml: {n} values");
        assert!(n * 20 < MAX_SPEC_NODES, "1.11.2: {n}");
        assert!(text.len() * 20 < MAX_SPEC_BYTES);
    }

    fn count(text: &str, limits: &Limits) -> u64 {
        walk(text, "f", limits, false).unwrap().1
    }
}
