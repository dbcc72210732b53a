//! The README's figures, each computed from what the tool prints and compared with the README's
//! text, so that none can drift: the catalog's size, the tool-definition sizes of each surface
//! (the token audit's, `cargo run -p arcane-token-audit -- --json`), the upgrade preview from
//! 1.11.2 to 2.8.0 (`catalog --diff --json`), the Rust version (Cargo.toml) and the example
//! conversation (the golden transcripts of `tests/golden/jobs/`, whose calls `docs/jobs.md`
//! lists). Every other number in the README's prose fails the test until a check covers it.

use std::process::Command;

use serde_json::Value;

use crate::fixtures::{spec_v1, spec_v2};
use crate::process_support::{BIN, repo};

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What the binary prints as JSON for `args`.
fn tool_json(args: &[&std::ffi::OsStr]) -> Value {
    let out = Command::new(BIN)
        .current_dir(repo())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// `12345` → `12,345`, as the README writes counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The README's prose: fenced code blocks and inline code removed, link targets removed,
/// whitespace collapsed (a sentence may wrap anywhere).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    let out = regex::Regex::new(r"`[^`]*`")
        .unwrap()
        .replace_all(&out, "`…`");
    let out = regex::Regex::new(r"\]\([^)]*\)")
        .unwrap()
        .replace_all(&out, "]");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fenced blocks of the README, in order.
fn fenced_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(String::new()),
            }
            continue;
        }
        if let Some(b) = current.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    blocks
}

#[test]
fn every_figure_in_the_readme_is_what_the_tool_prints() {
    let readme = read("README.md");
    let text = prose(&readme);
    let v2 = spec_v2();
    let v1 = spec_v1();
    // The catalog the audit's command builds in the repository's root (its catalog directory).
    let catalog = arcane_mcp::load::sources::Sources::of_spec(&v2)
        .with_catalog_dir(repo().join("catalog"))
        .build()
        .expect("the 2.8.0 catalog");
    let audit =
        serde_json::to_value(arcane_token_audit::measure(&catalog).expect("the audit")).unwrap();
    let diff = tool_json(&[
        "catalog".as_ref(),
        "--spec".as_ref(),
        v2.as_os_str(),
        "--diff".as_ref(),
        v1.as_os_str(),
        "--json".as_ref(),
    ]);
    let surface = |name: &str| -> &Value {
        audit["surfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["surface"] == name)
            .unwrap_or_else(|| panic!("{name} in {audit}"))
    };
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("a count: {v}"));
    let len = |v: &Value| v.as_array().map_or(0, Vec::len) as u64;
    let version = audit["arcaneVersion"].as_str().unwrap().to_string();
    let old_version = diff["old_version"]
        .as_str()
        .or_else(|| diff["oldVersion"].as_str())
        .unwrap_or_else(|| panic!("old version in the diff: {diff}"))
        .to_string();
    let field = |a: &str, b: &str| -> Value {
        diff.get(a)
            .or_else(|| diff.get(b))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let new_required = field("flag_changes", "flagChanges")
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["changes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x.as_str().unwrap().starts_with("new required parameter"))
        })
        .count() as u64;
    let rust = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("rust-version in Cargo.toml");

    // Each figure, written as the README writes it.
    let mut phrases = vec![
        format!(
            "with Arcane {version} that is **{} actions in {} domains**",
            n(&audit["actions"]),
            n(&surface("meta")["tools"])
        ),
        format!("from Arcane {old_version} to {version} it reports"),
        format!(
            "{} → {} actions: {} unchanged, {} added, {} removed, {} renamed, {} with a new required parameter",
            n(&field("old_actions", "oldActions")),
            n(&field("new_actions", "newActions")),
            n(&field("unchanged", "unchanged")),
            len(&field("added", "added")),
            len(&field("removed", "removed")),
            len(&field("renamed", "renamed")),
            new_required
        ),
        format!("From source, with Rust {rust} or later"),
    ];
    for s in ["dynamic", "meta", "individual"] {
        let f = surface(s);
        phrases.push(format!(
            "| {} | {} B, {} tokens |",
            n(&f["tools"]),
            thousands(n(&f["bytes"])),
            thousands(n(&f["tokens"]))
        ));
    }
    let mut covered = Vec::new();
    let mut missing = Vec::new();
    for p in &phrases {
        match text.find(p.as_str()) {
            Some(i) => covered.push(i..i + p.len()),
            None => missing.push(p.clone()),
        }
    }
    assert!(
        missing.is_empty(),
        "the README should say (what the tool prints now):\n  {}",
        missing.join("\n  ")
    );

    // The release binary's size is a measurement no test can repeat (it needs a release
    // build): the README's figure must be the one docs/measurements.md records with the
    // command that measured it.
    let size = regex::Regex::new(r"binary is ([0-9.]+ MiB)").unwrap();
    let said = size
        .captures(&text)
        .map(|c| c[1].to_string())
        .expect("the README states the release binary's size");
    let measured = read("docs/measurements.md");
    assert!(
        measured.contains(&format!("({said})")),
        "the README's release binary size {said} is not the one docs/measurements.md records"
    );
    let at = text.find(&said).unwrap();
    covered.push(at..at + said.len());

    // Every other number in the prose is a figure nobody checks. Version numbers are checked
    // where they stand for the documents (the tool's own) and for the toolchain, and the
    // third-party licence is named as its file names itself.
    let licence = read("third_party/arcane/LICENSE");
    let licence = licence
        .split_whitespace()
        .nth(1)
        .expect("BSD 3-Clause License")
        .to_string();
    let names = [
        version.as_str(),
        old_version.as_str(),
        rust.as_str(),
        licence.as_str(),
    ];
    // Names such as `backup-1` are one token: only tokens that start with a digit are numbers.
    let token = regex::Regex::new(r"[0-9A-Za-z][0-9A-Za-z.,_-]*").unwrap();
    let mut unchecked = Vec::new();
    for m in token.find_iter(&text) {
        let t = m.as_str().trim_end_matches(['.', ',']);
        if !t.starts_with(|c: char| c.is_ascii_digit()) || names.contains(&t) {
            continue;
        }
        if !covered.iter().any(|r| r.contains(&m.start())) {
            let from = m.start().saturating_sub(40);
            unchecked.push(format!("{t} in “…{}…”", &text[from..m.end()]));
        }
    }
    assert!(
        unchecked.is_empty(),
        "numbers in the README that no check covers (add one to tests/readme.rs, or move the \
         figure to docs/):\n  {}",
        unchecked.join("\n  ")
    );
}

/// The example conversation (each block of it) is the demo's own: each call is one that
/// `docs/jobs.md` lists (the calls of the golden transcripts), each answer line is in its answer
/// in a transcript, and the model's own answer is the one a transcript gives.
#[test]
fn the_readme_conversation_is_what_the_demo_answers() {
    let readme = read("README.md");
    let jobs = read("docs/jobs.md");
    let mut transcripts: Vec<_> = std::fs::read_dir(repo().join("tests/golden/jobs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    transcripts.sort();
    let transcripts: String = transcripts
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    // The conversation, and its follow-up (the undo) in a block of its own.
    let blocks: Vec<String> = fenced_blocks(&readme)
        .into_iter()
        .filter(|b| b.contains("arcane_execute_action {"))
        .collect();
    assert!(!blocks.is_empty(), "the README's example conversation");
    let block = blocks.concat();
    let calls: Vec<(String, Value)> = jobs
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("- **`")?;
            let (name, rest) = rest.split_once("`** `")?;
            let args: Value = serde_json::from_str(rest.strip_suffix('`')?).ok()?;
            Some((name.to_string(), args))
        })
        .collect();
    let mut checked = 0;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        // `→ ` an answer the model read; `» ` the model's own answer to the person.
        if let Some(answer) = line.strip_prefix("→ ").or_else(|| line.strip_prefix("» ")) {
            assert!(
                transcripts.contains(answer),
                "not in tests/golden/jobs/: {answer}"
            );
        } else {
            let (name, args) = line.split_once(' ').expect("a call line: tool {json}");
            let args: Value = serde_json::from_str(args).unwrap_or_else(|e| panic!("{line}: {e}"));
            let found = calls.iter().any(|(n, a)| {
                let mut a = a.clone();
                if let Some(o) = a.as_object_mut() {
                    o.remove("confirm");
                }
                n == name && a == args
            });
            assert!(found, "docs/jobs.md has no call {line}");
        }
        checked += 1;
    }
    assert!(checked >= 4 && calls.len() >= 10, "{block}");
}

/// The README names the two commands a stranger runs from a clone — the demo and the tests —
/// near the top, each in a block of its own; CONTRIBUTING.md names the test command and the
/// end-to-end group's; CI runs the end-to-end script, which runs exactly the README's test
/// command with the group's feature (one build for both groups).
#[test]
fn the_readme_commands_are_the_ones_ci_runs() {
    let readme = read("README.md");
    let top = &readme[..readme.find("\n## Install").expect("an Install section")];
    let blocks = fenced_blocks(top);
    let test = "cargo test --workspace";
    for command in ["cargo run --release -- demo", test] {
        assert!(
            blocks.iter().any(|b| b.trim() == command),
            "the README states `{command}` in a block of its own before its Install section"
        );
    }
    let contributing = read("CONTRIBUTING.md");
    for command in [test, "scripts/e2e.sh"] {
        assert!(
            contributing.contains(&format!("\n{command}\n")),
            "CONTRIBUTING.md names `{command}` on a line of its own"
        );
    }
    let script = read("scripts/e2e.sh");
    let runs: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cargo "))
        .collect();
    assert_eq!(
        runs,
        [format!("{test} --features arcane-test-support/e2e \"$@\"")],
        "scripts/e2e.sh"
    );
    assert!(
        read(".ci/run")
            .lines()
            .any(|l| l.trim() == "scripts/e2e.sh"),
        ".ci/run runs scripts/e2e.sh"
    );
}
