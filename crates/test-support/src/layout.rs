//! A crate's module graph, read from its sources, and the circles in it (ARCHITECTURE.md,
//! "Invariants"): a `mod` declaration is an edge from parent to child, a `crate::…` or
//! `super::…` path an edge to the module it names. Unit tests (`#[cfg(test)]` to the end of a
//! file) and comment lines are left out: tests may reach anywhere, docs may link.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

/// Modules (paths of names; the root is empty) and the modules each imports.
pub type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// The module path of a source file under `src` (`routes/mod.rs` → `routes`, `lib.rs` → the
/// root); `None` for the binary's `main.rs`.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.last().map(String::as_str) {
        Some("main") if parts.len() == 1 => return None,
        Some("lib") if parts.len() == 1 => parts.clear(),
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    Some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module graph of the crate whose sources are in `src`. Unit tests (`#[cfg(test)]` to the
/// end of a file) and comment lines are left out: tests may reach anywhere, docs may link.
pub fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mods: BTreeMap<Vec<String>, String> = files
        .iter()
        .filter_map(|f| {
            Some((
                module_of(src, f)?,
                std::fs::read_to_string(f).expect("source"),
            ))
        })
        .collect();
    let path = Regex::new(r"\b(crate|super)((?:::\w+)+)").unwrap();
    let group = Regex::new(r"\buse (crate|super)::\{([^}]*)\}").unwrap();
    let ident = Regex::new(r"\w+").unwrap();
    let decl = Regex::new(r"(?m)^\s*(?:pub(?:\([\w:]+\))?\s+)?mod (\w+);").unwrap();
    let mut g = Graph::new();
    for (m, text) in &mods {
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        // The module a path names: its longest prefix that is a module.
        let resolve = |anchor: &str, rest: Vec<&str>| -> Vec<String> {
            let mut base: Vec<String> = if anchor == "crate" {
                Vec::new()
            } else {
                m[..m.len().saturating_sub(1)].to_vec()
            };
            let mut rest = rest.into_iter().peekable();
            while rest.peek() == Some(&"super") {
                rest.next();
                base.pop();
            }
            let mut best = base.clone();
            for seg in rest {
                base.push(seg.to_string());
                if mods.contains_key(&base) {
                    best = base.clone();
                }
            }
            best
        };
        let deps = g.entry(m.clone()).or_default();
        for c in path.captures_iter(&code) {
            let rest = c[2].trim_start_matches("::").split("::").collect();
            deps.insert(resolve(&c[1], rest));
        }
        for c in group.captures_iter(&code) {
            for item in ident.find_iter(&c[2]) {
                deps.insert(resolve(&c[1], vec![item.as_str()]));
            }
        }
        for c in decl.captures_iter(&code) {
            let mut child = m.clone();
            child.push(c[1].to_string());
            deps.insert(child);
        }
        deps.remove(m);
    }
    g
}

/// A cycle of `g` (its modules in import order, the first repeated last), if it has one.
pub fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        m: &Vec<String>,
        stack: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == m) {
            let mut cycle: Vec<String> = stack[i..].iter().map(|p| name(p)).collect();
            cycle.push(name(m));
            return Some(cycle);
        }
        if !done.insert(m.clone()) {
            return None;
        }
        stack.push(m.clone());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, d, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

pub fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}
