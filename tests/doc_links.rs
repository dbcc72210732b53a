//! The documentation's links resolve: in every Markdown file of the repository outside
//! `tests/` and `third_party/` (their Markdown is fixtures), each relative link names a file
//! that exists and, when it has one, an `#anchor` that is a heading of its target; a citation
//! in prose (`docs/search.md, "Fusion"`) names a heading of that file; a source path written
//! as code (`crates/engine/src/http.rs`) exists. Anchors follow GitHub's rules: the heading's
//! text lower-cased, punctuation other than `-` and `_` dropped, spaces turned into `-`, and a
//! repeated heading suffixed `-1`, `-2`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What `.gitignore` keeps out of the repository (builds, installed packages, fuzz corpora):
/// its anchored entries as paths from the root (`fuzz/corpus`, `target-*`), the others as names
/// anywhere (`__pycache__`). Neither the walk nor the path check looks there.
struct Ignored {
    anchored: Vec<String>,
    names: Vec<String>,
}

impl Ignored {
    fn read() -> Ignored {
        let text = std::fs::read_to_string(root().join(".gitignore")).unwrap_or_default();
        let (mut anchored, mut names) = (Vec::new(), Vec::new());
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.trim_end_matches('/');
            match line.strip_prefix('/') {
                Some(path) => anchored.push(path.to_string()),
                None if !line.contains('/') => names.push(line.to_string()),
                None => {}
            }
        }
        Ignored { anchored, names }
    }

    /// Whether `rel` (a path from the root) is, or is under, an ignored entry.
    fn covers(&self, rel: &Path) -> bool {
        let rel = rel.to_string_lossy().replace('\\', "/");
        let matches = |pattern: &str, text: &str| match pattern.strip_suffix('*') {
            Some(head) => text.starts_with(head),
            None => pattern == text,
        };
        let parts: Vec<&str> = rel.split('/').collect();
        self.anchored.iter().any(|a| {
            let depth = a.split('/').count();
            parts.len() >= depth && matches(a, &parts[..depth].join("/"))
        }) || parts
            .iter()
            .any(|p| self.names.iter().any(|n| matches(n, p)))
    }
}

/// The Markdown files the check reads, relative to the root: every `.md` outside the fixtures'
/// folders (`tests/`, `third_party/`), hidden folders and what `.gitignore` keeps out.
fn markdown_files(ignored: &Ignored) -> Vec<PathBuf> {
    fn walk(dir: &Path, rel: &Path, ignored: &Ignored, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a folder") {
            let entry = entry.expect("a directory entry");
            let name = entry.file_name().to_string_lossy().to_string();
            let rel = rel.join(&name);
            let skipped = name.starts_with('.')
                || ["tests", "third_party"]
                    .map(Path::new)
                    .contains(&rel.as_path())
                || ignored.covers(&rel);
            if skipped {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &rel, ignored, out);
            } else if name.ends_with(".md") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), Path::new(""), ignored, &mut out);
    out.sort();
    out
}

/// A heading's anchor as GitHub writes it (before a repeat's `-1`).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// What a Markdown file holds that the check reads: its anchors, its links (with their line),
/// its prose (a paragraph's text with its code spans, for the citations) and its code spans.
#[derive(Default)]
struct Doc {
    anchors: HashSet<String>,
    links: Vec<(usize, String)>,
    prose: Vec<(usize, String)>,
    code: Vec<(usize, String)>,
}

fn read(text: &str) -> Doc {
    let line = |offset: usize| text[..offset].matches('\n').count() + 1;
    let html_anchor = regex::Regex::new(r#"<a\s+(?:name|id)="([^"]+)""#).unwrap();
    let mut doc = Doc::default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    // The paragraphs, list items and table cells open around the text (an item may hold a
    // list of its own).
    let mut blocks: Vec<(usize, String)> = Vec::new();
    // Quotes and dashes as written: a heading's anchor and a citation's quotes are the source's.
    let mut options = Options::all();
    options.remove(Options::ENABLE_SMART_PUNCTUATION);
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(base.clone()).or_insert(0);
                doc.anchors.insert(match *n {
                    0 => base.clone(),
                    k => format!("{base}-{k}"),
                });
                *n += 1;
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                doc.links.push((line(range.start), dest_url.to_string()));
            }
            Event::Start(Tag::Paragraph | Tag::Item | Tag::TableCell) => {
                blocks.push((line(range.start), String::new()));
            }
            Event::End(TagEnd::Paragraph | TagEnd::Item | TagEnd::TableCell) => {
                doc.prose.extend(blocks.pop());
            }
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if let Some(b) = blocks.last_mut() {
                    b.1.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if let Some(b) = blocks.last_mut() {
                    b.1.push_str(&t);
                }
                doc.code.push((line(range.start), t.to_string()));
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(b) = blocks.last_mut() {
                    b.1.push(' ');
                }
            }
            Event::InlineHtml(h) | Event::Html(h) => {
                for c in html_anchor.captures_iter(&h) {
                    doc.anchors.insert(c[1].to_string());
                }
            }
            _ => {}
        }
    }
    doc
}

/// Every broken link, citation and source path of the repository's Markdown files, as
/// `file:line: what (why)`; a path `.gitignore` keeps out (made by a build or a run) is not
/// looked for.
fn broken() -> Vec<String> {
    let ignored = Ignored::read();
    let files = markdown_files(&ignored);
    assert!(files.len() > 20, "the Markdown files were found: {files:?}");
    let docs: BTreeMap<PathBuf, Doc> = files
        .iter()
        .map(|f| {
            (
                f.clone(),
                read(&std::fs::read_to_string(root().join(f)).unwrap()),
            )
        })
        .collect();
    let anchors_of = |target: &Path| -> Option<HashSet<String>> {
        docs.get(target).map(|d| d.anchors.clone()).or_else(|| {
            let text = std::fs::read_to_string(root().join(target)).ok()?;
            Some(read(&text).anchors)
        })
    };
    let citation = regex::Regex::new(r#"([\w./-]+\.md),? ["“]([^"”]+)["”]"#).unwrap();
    let source_path = regex::Regex::new(
        r"^(?:src|crates|sim|tests|docs|scripts|overrides|packaging|charts|apps|examples|benches|fuzz|schemas|Formula|\.ci)/[\w./-]*$",
    )
    .unwrap();
    let mut out = Vec::new();
    for (file, doc) in &docs {
        let dir = file.parent().unwrap_or(Path::new(""));
        let shown = file.display();
        for (line, link) in &doc.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                normalize(&dir.join(path))
            };
            if !root().join(&target).exists() {
                out.push(format!("{shown}:{line}: {link} (no {})", target.display()));
                continue;
            }
            if anchor.is_empty() || target.extension().is_none_or(|e| e != "md") {
                continue;
            }
            if !anchors_of(&target).is_some_and(|a| a.contains(anchor)) {
                out.push(format!(
                    "{shown}:{line}: {link} (no heading #{anchor} in {})",
                    target.display()
                ));
            }
        }
        for (line, text) in &doc.prose {
            for c in citation.captures_iter(text) {
                let named = Path::new(&c[1]);
                let target = [normalize(&dir.join(named)), named.to_path_buf()]
                    .into_iter()
                    .find(|t| root().join(t).is_file());
                let Some(target) = target else {
                    out.push(format!("{shown}:{line}: {} (no such file)", &c[0]));
                    continue;
                };
                if !anchors_of(&target).is_some_and(|a| a.contains(&slug(&c[2]))) {
                    out.push(format!(
                        "{shown}:{line}: {} (no such heading in {})",
                        &c[0],
                        target.display()
                    ));
                }
            }
        }
        for (line, code) in &doc.code {
            if !source_path.is_match(code) {
                continue;
            }
            let named = Path::new(code.as_str());
            if ignored.covers(named) {
                continue;
            }
            if !root().join(named).exists() && !root().join(dir).join(named).exists() {
                out.push(format!("{shown}:{line}: `{code}` (no such path)"));
            }
        }
    }
    out
}

/// `a/b/../c` → `a/c`, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_link_anchor_and_path_in_the_docs_resolves() {
    let broken = broken();
    assert!(
        broken.is_empty(),
        "{} broken in the Markdown files:\n  {}",
        broken.len(),
        broken.join("\n  ")
    );
}

#[test]
fn anchors_are_githubs() {
    let doc = read(
        "# Arcane's wire: 2.8.x\n## `--oauth-issuer self` — sign-in\n## Errors\n## Errors\n\
         ## Errors\n## A [link](x.md) and _emphasis_\n",
    );
    for a in [
        "arcanes-wire-28x",
        "--oauth-issuer-self--sign-in",
        "errors",
        "errors-1",
        "errors-2",
        "a-link-and-emphasis",
    ] {
        assert!(doc.anchors.contains(a), "{a} in {:?}", doc.anchors);
    }
}
