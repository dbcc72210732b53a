//! The release's own checks that run Python (the end-to-end group: `scripts/e2e.sh`):
//! `scripts/check-names.py`, the release workflow's first step, against a registry on
//! loopback.

use serde_json::Value;
use std::path::Path;

/// A registry on loopback answering `GET PATH` from a table (anything else is a 404), for as
/// long as the returned listener lives; its base URL.
fn fake_registry(answers: Vec<(String, Value)>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // Drain the head: the client waits for nothing else.
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let found = answers.iter().find(|(p, _)| *p == path);
            let (status, body) = match found {
                Some((_, v)) => ("200 OK", v.to_string()),
                None => ("404 Not Found", "{}".to_string()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

/// Before publishing, every name is ours or free: `scripts/check-names.py` (the release
/// workflow's first step) passes free names and names whose own metadata points at our
/// repository, and stops at a name another project holds (as `arcane-mcp` on PyPI is).
#[test]
fn the_release_publishes_only_under_names_that_are_ours() {
    use serde_json::json;
    let run = |answers: Vec<(String, Value)>| {
        let base = fake_registry(answers);
        let out = std::process::Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-names.py"))
            .env("PYPI_URL", &base)
            .env("NPM_REGISTRY", &base)
            .output()
            .expect("python3 runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let pypi = "/pypi/arcane-mcp-server/json".to_string();
    let npm = "/arcane-mcp-server".to_string();
    // Every name free: the first release claims them.
    let (code, text) = run(vec![]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.matches(": free").count(), 7, "{text}");
    // Ours: metadata naming the repository (spelt as npm and PyPI spell it).
    let (code, text) = run(vec![
        (
            pypi.clone(),
            json!({"info": {"project_urls": {"Repository": "https://github.com/arcane-mcp/arcane-mcp"}}}),
        ),
        (
            npm.clone(),
            json!({"repository": {"type": "git", "url": "git+https://github.com/arcane-mcp/arcane-mcp.git"}}),
        ),
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.matches(": ours").count(), 2, "{text}");
    // Someone else's, even when its README names us.
    let (code, text) = run(vec![(
        pypi,
        json!({"info": {"project_urls": {"Homepage": "https://github.com/someone/else"},
                        "description": "see https://github.com/arcane-mcp/arcane-mcp"}}),
    )]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("PyPI arcane-mcp-server: taken by another project"),
        "{text}"
    );
}
