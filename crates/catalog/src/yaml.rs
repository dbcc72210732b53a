//! Strict YAML for the operator's files: one pass over the marked event stream before the value
//! is deserialized.
//!
//! yaml_serde turns a file into a value but keeps no positions, lets a later duplicate key
//! silently replace an earlier one (when the target is a JSON value or a map), and walks deeply
//! nested input slowly. This pass, over `saphyr-parser`'s events (each with its line), refuses
//! what an operator cannot have meant and records where every key and sequence item sits:
//! * a file larger than [`MAX_FILE_BYTES`] or nested deeper than [`MAX_DEPTH`] is refused early;
//! * a key given twice in one mapping is an error naming both lines;
//! * [`LineMap`] answers "which line holds `actions.container.list.title`", so schema errors
//!   and unmatched overlay entries name the line of the very occurrence they are about.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// The largest overlay or declaration file accepted (the built-in ones total about 30 KB).
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// The deepest nesting of mappings and sequences accepted (the built-in files need under 10).
pub const MAX_DEPTH: usize = 64;

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

/// Checks a file's size, nesting and keys, and maps its keys to lines.
///
/// Errors read `ORIGIN:LINE: what is wrong — how to fix`.
pub fn scan(text: &str, origin: &str) -> Result<LineMap, String> {
    if text.len() > MAX_FILE_BYTES {
        return Err(too_large(origin, text.len()));
    }
    let mut map = LineMap::default();
    let mut stack: Vec<Frame> = Vec::new();
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| {
            let line = e.marker().line();
            // The scanner reads nested flow collections ahead and has its own (higher) cap.
            if e.info().contains("recursion limit") {
                too_deep(origin, line)
            } else {
                format!("{origin}:{line}: invalid YAML: {}", e.info())
            }
        })?;
        let line = span.start.line();
        let starts = match &event {
            Event::Scalar(..) | Event::Alias(_) => Some(false),
            Event::MappingStart(..) | Event::SequenceStart(..) => Some(true),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                None
            }
            _ => None,
        };
        let Some(is_container) = starts else { continue };
        // Where this node sits: a key of the enclosing mapping, a value, or a sequence item.
        let child_path = match stack.last_mut() {
            None => Some(Vec::new()),
            Some(Frame {
                path,
                kind: FrameKind::Map { seen, key },
            }) => match key.take() {
                Some(k) => {
                    let mut p = path.clone();
                    p.push(k);
                    Some(p)
                }
                None => {
                    let Event::Scalar(k, ..) = &event else {
                        return Err(format!(
                            "{origin}:{line}: a mapping key must be plain text, not a list or mapping — write the key as a word"
                        ));
                    };
                    let k = k.to_string();
                    if let Some(first) = seen.insert(k.clone(), line) {
                        return Err(format!(
                            "{origin}:{line}: duplicate key `{k}` (first at line {first}) — the later one would silently replace the earlier; merge them into one entry"
                        ));
                    }
                    let mut p = path.clone();
                    p.push(k.clone());
                    map.lines.insert(p, line);
                    *key = Some(k);
                    None
                }
            },
            Some(Frame {
                path,
                kind: FrameKind::Seq { next },
            }) => {
                let mut p = path.clone();
                p.push(next.to_string());
                *next += 1;
                map.lines.insert(p.clone(), line);
                Some(p)
            }
        };
        let (Some(path), true) = (child_path, is_container) else {
            continue;
        };
        if stack.len() >= MAX_DEPTH {
            return Err(too_deep(origin, line));
        }
        let kind = if matches!(event, Event::MappingStart(..)) {
            FrameKind::Map {
                seen: HashMap::new(),
                key: None,
            }
        } else {
            FrameKind::Seq { next: 0 }
        };
        stack.push(Frame { path, kind });
    }
    Ok(map)
}

fn too_deep(origin: &str, line: usize) -> String {
    format!(
        "{origin}:{line}: nested deeper than {MAX_DEPTH} levels — overlay and declaration files need only a few; flatten this part"
    )
}

/// The error for a file over [`MAX_FILE_BYTES`].
pub fn too_large(origin: &str, len: usize) -> String {
    format!(
        "{origin}:1: the file is {len} bytes, over the limit of {MAX_FILE_BYTES} — split it into several files"
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
}
