//! The install channels (docs/install.md) agree with each other: every file that states the
//! version states Cargo.toml's, every package names the server the MCP registry lists, and the
//! npm launcher's platform packages are the ones `scripts/npm-platform.mjs` can build. Each
//! distribution file is well formed: the Dockerfile, the release profile and workflow, and
//! server.json and manifest.json against the registries' rules as written here. Fast and
//! self-contained; what needs built packages and the pinned tools (installing the wheel and the
//! npm tarballs, rendering the chart, the registries' published schemas) is
//! `scripts/test-dist.sh`, which `.ci/run` runs after the tests.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::process_support::{cmd_in, repo, stdout};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn json(path: &str) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The server's name in the MCP registry, as server.json gives it.
fn server_name() -> String {
    json("server.json")["name"]
        .as_str()
        .expect("server.json has a name")
        .to_owned()
}

/// Every place that states a version, and what it states there.
fn stated_versions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut put = |what: &str, v: &Value| {
        out.push((
            what.to_owned(),
            v.as_str().unwrap_or("(missing)").to_owned(),
        ))
    };
    let server = json("server.json");
    put("server.json version", &server["version"]);
    for pkg in server["packages"].as_array().expect("server.json packages") {
        let kind = pkg["registryType"].as_str().unwrap_or("?");
        put(
            &format!("server.json {kind} package version"),
            &pkg["version"],
        );
        let id = pkg["identifier"].as_str().unwrap_or("");
        if kind == "oci" {
            let tag = id.rsplit_once(':').map_or("(untagged)", |(_, t)| t);
            put("server.json oci image tag", &Value::from(tag));
        }
        if kind == "mcpb" {
            // The bundle's URL names its release, twice.
            let v = id
                .split("/download/v")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .unwrap_or("(no release in the URL)");
            put("server.json mcpb release", &Value::from(v));
        }
    }
    put("manifest.json version", &json("manifest.json")["version"]);
    let npm = json("packaging/npm/arcane-mcp-server/package.json");
    put("npm arcane-mcp-server version", &npm["version"]);
    for (name, v) in npm["optionalDependencies"]
        .as_object()
        .expect("optionalDependencies")
    {
        put(&format!("npm dependency {name}"), v);
    }
    let chart: Value = yaml_serde::from_str(&read("charts/arcane-mcp/Chart.yaml")).expect("YAML");
    put("Chart.yaml version", &chart["version"]);
    put("Chart.yaml appVersion", &chart["appVersion"]);
    let formula = read("Formula/arcane-mcp.rb");
    let brew = formula
        .lines()
        .find_map(|l| l.trim().strip_prefix("version \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or("(missing)");
    put("Formula version", &Value::from(brew));
    for url in formula
        .lines()
        .filter_map(|l| l.trim().strip_prefix("url \""))
    {
        let v = url
            .split("/download/v")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or("?");
        put("Formula archive release", &Value::from(v));
    }
    // The README's one-liners name the published image by its tag.
    let readme = read("README.md");
    for (at, _) in readme.match_indices("ghcr.io/arcane-mcp/arcane-mcp:") {
        let tag: String = readme[at + "ghcr.io/arcane-mcp/arcane-mcp:".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
            .collect();
        put("README image tag", &Value::from(tag));
    }
    out
}

#[test]
fn every_package_states_the_version_of_cargo_toml() {
    let versions = stated_versions();
    // Each channel is looked at (an empty list would pass anything).
    for what in [
        "server.json version",
        "server.json npm package version",
        "server.json pypi package version",
        "server.json oci image tag",
        "server.json mcpb release",
        "manifest.json version",
        "npm arcane-mcp-server version",
        "npm dependency arcane-mcp-server-linux-x64",
        "Chart.yaml version",
        "Chart.yaml appVersion",
        "Formula version",
        "Formula archive release",
        "README image tag",
    ] {
        assert!(versions.iter().any(|(w, _)| w == what), "{what} not found");
    }
    let wrong: Vec<String> = versions
        .iter()
        .filter(|(_, v)| v != VERSION)
        .map(|(w, v)| format!("{w}: {v}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "Cargo.toml says {VERSION}; these disagree (change them together, docs/install.md \
         \"Releasing\"): {wrong:#?}"
    );
    // The wheel's version is Cargo.toml's by construction: maturin reads it.
    let pyproject: toml_edit::DocumentMut = read("packaging/pypi/pyproject.toml")
        .parse()
        .expect("pyproject.toml is TOML");
    let project = &pyproject["project"];
    assert!(
        project.get("version").is_none(),
        "pyproject.toml must not state a version of its own"
    );
    let dynamic: Vec<&str> = project["dynamic"]
        .as_array()
        .expect("project.dynamic")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(dynamic.contains(&"version"), "{dynamic:?}");
    assert_eq!(
        pyproject["tool"]["maturin"]["bindings"].as_str(),
        Some("bin")
    );
}

#[test]
fn the_version_check_catches_a_disagreement() {
    // The comparison above reads real files; here it is shown to see a wrong value.
    let mut versions = stated_versions();
    versions[0].1 = "9.9.9".into();
    assert!(versions.iter().any(|(_, v)| v != VERSION));
}

#[test]
fn every_package_names_the_registry_server() {
    let name = server_name();
    let npm = json("packaging/npm/arcane-mcp-server/package.json");
    assert_eq!(npm["mcpName"], name.as_str(), "npm's mcpName");
    // PyPI: the registry reads the marker from the package's README (the wheel's description).
    let readme = read("packaging/pypi/README.md");
    assert!(
        readme
            .lines()
            .any(|l| l.trim() == format!("mcp-name: {name}")),
        "packaging/pypi/README.md needs the line `mcp-name: {name}`"
    );
    // OCI: the image's label.
    let dockerfile = read("Dockerfile");
    assert!(
        dockerfile.contains(&format!("io.modelcontextprotocol.server.name=\"{name}\"")),
        "the Dockerfile must label the image with the server's name"
    );
    let server = json("server.json");
    let kinds: Vec<&str> = server["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["registryType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["oci", "npm", "pypi", "mcpb"]);
    for pkg in server["packages"].as_array().unwrap() {
        match pkg["registryType"].as_str().unwrap() {
            "npm" => assert_eq!(pkg["identifier"], npm["name"]),
            "pypi" => {
                let py: toml_edit::DocumentMut =
                    read("packaging/pypi/pyproject.toml").parse().unwrap();
                assert_eq!(pkg["identifier"].as_str(), py["project"]["name"].as_str());
            }
            "mcpb" => {
                let sha = pkg["fileSha256"].as_str().unwrap_or("");
                assert!(
                    sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                    "mcpb needs fileSha256"
                );
            }
            _ => {}
        }
    }
}

#[test]
fn the_npm_launcher_lists_a_package_per_release_platform() {
    let npm = json("packaging/npm/arcane-mcp-server/package.json");
    let deps: Vec<&str> = npm["optionalDependencies"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        deps,
        [
            "arcane-mcp-server-darwin-arm64",
            "arcane-mcp-server-darwin-x64",
            "arcane-mcp-server-linux-arm64",
            "arcane-mcp-server-linux-x64",
            "arcane-mcp-server-win32-x64"
        ]
    );
    // `npx -y arcane-mcp-server` runs the command named as the package; `arcane-mcp` is the
    // binary's own name, which the other channels install.
    assert_eq!(npm["bin"]["arcane-mcp"], "bin/arcane-mcp.js");
    assert_eq!(npm["bin"]["arcane-mcp-server"], "bin/arcane-mcp.js");
    // The launcher maps each platform to the same package names.
    let launcher = read("packaging/npm/arcane-mcp-server/bin/arcane-mcp.js");
    for dep in &deps {
        let key = dep.trim_start_matches("arcane-mcp-server-");
        assert!(
            launcher.contains(&format!("\"{key}\": \"{dep}\"")),
            "the launcher does not map {key} to {dep}"
        );
    }
    // dist.sh maps every release target of the workflow to one of them: its `case` arms are
    // `PATTERN) NPM_PLATFORM=NAME ;;`, a PATTERN ending in `*` matching by prefix.
    let dist = read("scripts/dist.sh");
    let arms: Vec<(&str, &str)> = dist
        .lines()
        .filter_map(|l| l.trim().split_once(") NPM_PLATFORM="))
        .map(|(pat, rest)| (pat, rest.split_whitespace().next().unwrap_or("")))
        .collect();
    let workflow = read(".github/workflows/release.yml");
    let targets: Vec<&str> = workflow
        .lines()
        .filter_map(|l| l.split("target: ").nth(1))
        .map(|t| t.trim_end_matches(|c: char| c == '}' || c.is_whitespace()))
        .filter(|t| !t.contains('$'))
        .collect();
    assert!(targets.len() >= 5, "{targets:?}");
    for target in targets {
        let platform = arms.iter().find_map(|(pat, platform)| {
            let hit = match pat.strip_suffix('*') {
                Some(prefix) => target.starts_with(prefix),
                None => target == *pat,
            };
            hit.then_some(*platform)
        });
        let platform =
            platform.unwrap_or_else(|| panic!("scripts/dist.sh has no npm platform for {target}"));
        assert!(
            deps.contains(&format!("arcane-mcp-server-{platform}").as_str()),
            "{target} → {platform}, which the launcher does not list"
        );
    }
}

#[test]
fn the_packaging_tools_are_pinned() {
    // .ci/run installs them on every clean clone: a range would let a new release change what
    // CI checks (docs/install.md, "Testing the packages").
    let txt = read("scripts/dist-tools.txt");
    let reqs: Vec<&str> = txt
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(reqs.len() >= 5, "{reqs:?}");
    for req in &reqs {
        let (name, version) = req
            .split_once("==")
            .unwrap_or_else(|| panic!("scripts/dist-tools.txt: `{req}` is not pinned with =="));
        assert!(
            !name.is_empty()
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.'),
            "scripts/dist-tools.txt: `{req}`"
        );
    }
    let npm = json("scripts/dist-tools-npm/package.json");
    let lock = json("scripts/dist-tools-npm/package-lock.json");
    let deps = npm["dependencies"].as_object().expect("dependencies");
    assert!(deps.contains_key("verdaccio") && deps.contains_key("prettier"));
    for (name, version) in deps {
        let version = version.as_str().unwrap_or("");
        assert!(
            version.chars().all(|c| c.is_ascii_digit() || c == '.'),
            "scripts/dist-tools-npm: {name} is not pinned to one version: {version}"
        );
        // The lockfile is the one of these pins (npm ci refuses a stale one, but only in CI).
        assert_eq!(
            lock["packages"][format!("node_modules/{name}")]["version"],
            version,
            "scripts/dist-tools-npm/package-lock.json is stale for {name}: run npm install --package-lock-only there"
        );
    }
}

#[test]
fn the_chart_needs_a_shared_state_key_for_replicas() {
    // The refusal itself is rendered by scripts/chart.py (Helm's engine, in .ci/run); here the
    // value it reads is there, empty by default, and the default is one replica.
    let values: Value =
        yaml_serde::from_str(&read("charts/arcane-mcp/values.yaml")).expect("values.yaml");
    assert_eq!(values["replicaCount"], 1);
    assert_eq!(values["stateKeySecret"]["name"], "");
    let deployment = read("charts/arcane-mcp/templates/deployment.yaml");
    assert!(
        deployment.contains("(gt (int .Values.replicaCount) 1) (not .Values.stateKeySecret.name)")
    );
    assert!(deployment.contains("ARCANE_MCP_STATE_KEY_FILE"));
}

#[test]
fn the_release_placeholders_are_well_formed() {
    // docs/install.md, "Releasing": zeros until the release writes the real values, but always
    // of the form the formula, the registry and the catalog read.
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let formula = read("Formula/arcane-mcp.rb");
    let sums: Vec<&str> = formula
        .lines()
        .filter_map(|l| l.trim().strip_prefix("sha256 \""))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    assert_eq!(sums.len(), 4, "one checksum per archive: {sums:?}");
    assert!(sums.iter().all(|s| hex(s, 64)), "{sums:?}");
    let catalog: Value =
        yaml_serde::from_str(&read("packaging/docker-mcp/server.yaml")).expect("server.yaml");
    let commit = catalog["source"]["commit"]
        .as_str()
        .unwrap_or("(not a string)");
    assert!(
        hex(commit, 40),
        "source.commit must be a quoted 40-digit SHA-1: {commit}"
    );
}

// ---- the distribution files, each well formed ---------------------------------------------

fn cargo_toml() -> Value {
    toml_like(&read("Cargo.toml"))
}

/// The few Cargo.toml facts the packaging checks need, read line by line (no TOML crate in
/// the tree): `[package] name`, `version`, `default-run`, `[features]` and whether
/// `arcane-sim` is an optional dependency.
fn toml_like(text: &str) -> Value {
    let mut section = String::new();
    let mut out = json!({"package": {}, "features": {}, "optional": []});
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match section.as_str() {
            "package" => {
                out["package"][k] = Value::String(v.trim_matches('"').to_string());
            }
            "features" => {
                let items: Vec<String> = v
                    .trim_matches(['[', ']'])
                    .split(',')
                    .map(|s| s.trim().trim_matches('"').to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                out["features"][k] = json!(items);
            }
            "dependencies" if v.contains("optional = true") => {
                out["optional"].as_array_mut().unwrap().push(json!(k));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn cargo_install_builds_the_server_with_the_demo() {
    let t = cargo_toml();
    assert_eq!(t["package"]["name"], "arcane-mcp");
    assert_eq!(t["package"]["default-run"], "arcane-mcp");
    assert_eq!(t["features"]["default"], json!(["demo"]));
    assert_eq!(t["features"]["demo"], json!(["dep:arcane-sim"]));
    assert!(
        t["optional"]
            .as_array()
            .unwrap()
            .contains(&json!("arcane-sim"))
    );
}

/// Dockerfile instructions with line continuations joined: (keyword, arguments).
fn dockerfile() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        let t = line.trim();
        if current.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (kw, rest) = current.split_once(' ').unwrap_or((&current, ""));
        out.push((kw.to_ascii_uppercase(), rest.trim().to_string()));
        current.clear();
    }
    out
}

#[test]
fn dockerfile_lint() {
    let ins = dockerfile();
    let known = [
        "FROM",
        "RUN",
        "COPY",
        "WORKDIR",
        "ENV",
        "USER",
        "ENTRYPOINT",
        "CMD",
        "ARG",
        "LABEL",
        "EXPOSE",
    ];
    for (kw, _) in &ins {
        assert!(known.contains(&kw.as_str()), "unknown instruction {kw}");
    }
    // Stages: a named build stage, and the final stage last.
    let froms: Vec<&String> = ins
        .iter()
        .filter(|(k, _)| k == "FROM")
        .map(|(_, a)| a)
        .collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    let mut stages = Vec::new();
    for from in &froms {
        let mut words = from.split_whitespace();
        let image = words.next().unwrap();
        if image != "scratch" {
            let (_, tag) = image
                .rsplit_once(':')
                .unwrap_or_else(|| panic!("{image}: pin the base image's version"));
            assert!(
                tag != "latest" && tag.chars().any(|c| c.is_ascii_digit()),
                "{image}: pin a version, not {tag}"
            );
        }
        if let (Some(as_kw), Some(name)) = (words.next(), words.next()) {
            assert!(as_kw.eq_ignore_ascii_case("as"));
            stages.push(name.to_string());
        }
    }
    // The final stage runs as a non-root user, with an exec-form entrypoint (no shell).
    let last_from = ins.iter().rposition(|(k, _)| k == "FROM").unwrap();
    let last = &ins[last_from..];
    let user = last
        .iter()
        .rev()
        .find(|(k, _)| k == "USER")
        .map(|(_, a)| a.clone())
        .expect("the final stage sets USER");
    let uid = user.split(':').next().unwrap();
    assert!(uid != "root" && uid != "0", "non-root USER, got {user}");
    let entry = last
        .iter()
        .find(|(k, _)| k == "ENTRYPOINT")
        .map(|(_, a)| a.clone())
        .expect("ENTRYPOINT");
    let entry: Vec<String> = serde_json::from_str(&entry).expect("exec-form ENTRYPOINT");
    assert!(
        !last.iter().any(|(k, _)| k == "RUN"),
        "the final stage needs no shell"
    );
    // No secrets baked in.
    for (kw, args) in &ins {
        if kw == "ENV" || kw == "ARG" {
            let upper = args.to_ascii_uppercase();
            for s in ["API_KEY", "TOKEN", "PASSWORD", "SECRET"] {
                assert!(!upper.contains(s), "{kw} {args} bakes a secret");
            }
        }
    }
    // Every path copied from the context exists in the repository.
    for (kw, args) in &ins {
        if kw != "COPY" || args.contains("--from=") {
            continue;
        }
        let parts: Vec<&str> = args
            .split_whitespace()
            .filter(|p| !p.starts_with("--"))
            .collect();
        for src in &parts[..parts.len() - 1] {
            assert!(
                repo().join(src).exists(),
                "COPY {src}: not in the repository"
            );
        }
    }
    // COPY --from names a stage.
    for (kw, args) in &ins {
        if let Some(rest) = args.strip_prefix("--from=").filter(|_| kw == "COPY") {
            let stage = rest.split_whitespace().next().unwrap();
            assert!(stages.iter().any(|s| s == stage), "COPY --from={stage}");
        }
    }
    // The build command builds this crate's binary with its default features, locked.
    let t = cargo_toml();
    let bin = t["package"]["name"].as_str().unwrap();
    let build = ins
        .iter()
        .find(|(k, a)| k == "RUN" && a.contains("cargo build"))
        .map(|(_, a)| a.clone())
        .expect("a cargo build step");
    for flag in ["--release", "--locked", &format!("--bin {bin}")] {
        assert!(build.contains(flag), "{flag} in {build}");
    }
    if let Some(f) = build.split("--features ").nth(1) {
        for feat in f.split_whitespace().next().unwrap().split(',') {
            assert!(t["features"].get(feat).is_some(), "feature {feat}");
        }
    }
    // The binary the final stage runs is the one built.
    assert!(build.contains(&format!("target/release/{bin}")), "{build}");
    let copied = last
        .iter()
        .filter(|(k, a)| k == "COPY" && a.contains(&format!("/{bin}")))
        .map(|(_, a)| a.split_whitespace().last().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(copied.contains(&entry[0]), "{copied:?} vs {entry:?}");
    // Every file the crate compiles in is copied into the build stage.
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "crates",
        "benches",
        "catalog",
        "overrides",
        "schemas",
        "third_party",
    ] {
        assert!(
            ins.iter()
                .any(|(k, a)| k == "COPY" && a.split_whitespace().any(|w| w == needed)),
            "COPY {needed}"
        );
    }
}

/// The shipped binary carries no debug info, and its licences go with it: the MIT licence, and
/// Arcane's BSD-3 notice for the OpenAPI document compiled into it (the demo's).
#[test]
fn release_builds_are_stripped_and_ship_both_licences() {
    let cargo = read("Cargo.toml");
    let section = |name: &str| -> Vec<String> {
        cargo
            .lines()
            .skip_while(|l| l.trim() != format!("[{name}]"))
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .map(|l| l.split('#').next().unwrap().replace(' ', ""))
            .filter(|l| !l.is_empty())
            .collect()
    };
    let release = section("profile.release");
    assert!(release.contains(&"strip=true".to_string()), "{release:?}");
    assert!(release.contains(&"debug=false".to_string()), "{release:?}");
    let profiling = section("profile.profiling");
    for want in ["inherits=\"release\"", "debug=true"] {
        assert!(profiling.contains(&want.to_string()), "{profiling:?}");
    }
    let mit = read("LICENSE");
    assert!(mit.starts_with("MIT License"), "{mit}");
    assert!(mit.contains("the arcane-mcp authors"));
    assert!(
        mit.contains("third_party/arcane/LICENSE"),
        "names the third-party notice"
    );
    let bsd = read("third_party/arcane/LICENSE");
    assert!(bsd.starts_with("BSD 3-Clause License"));
    // The image: both files in the final stage.
    let ins = dockerfile();
    let last = &ins[ins.iter().rposition(|(k, _)| k == "FROM").unwrap()..];
    for src in ["LICENSE", "third_party/arcane/LICENSE"] {
        assert!(
            last.iter()
                .any(|(k, a)| k == "COPY" && a.split_whitespace().next() == Some(src)),
            "the image ships {src}"
        );
    }
    // The release archives: scripts/dist.sh makes them, on every release runner.
    let wf = read(".github/workflows/release.yml");
    assert!(
        wf.contains("scripts/dist.sh --target"),
        "the release packs with dist.sh"
    );
    let dist = read("scripts/dist.sh");
    assert!(
        dist.contains("cp README.md LICENSE \"$STAGE/$name/\""),
        "archives ship LICENSE"
    );
    assert!(
        dist.contains("cp third_party/arcane/LICENSE \"$STAGE/$name/LICENSE-arcane\""),
        "archives ship Arcane's notice"
    );
}

/// The requirements of the MCP registry's server.json schema (2025-12-11) that this file
/// uses, written as a JSON Schema (the published one cannot be fetched in CI).
fn registry_schema() -> Value {
    let input = json!({
        "type": "object",
        "required": ["name", "description"],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "description": {"type": "string", "minLength": 1},
            "isRequired": {"type": "boolean"},
            "isSecret": {"type": "boolean"},
            "format": {"enum": ["string", "number", "boolean", "filepath"]},
            "default": {"type": "string"},
            "value": {"type": "string"},
            "choices": {"type": "array", "items": {"type": "string"}}
        },
        "additionalProperties": false
    });
    json!({
        "type": "object",
        "required": ["$schema", "name", "description", "version"],
        "properties": {
            "$schema": {"const": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"},
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", "minLength": 3, "maxLength": 200},
            "description": {"type": "string", "minLength": 1, "maxLength": 100},
            "version": {"type": "string", "maxLength": 255, "not": {"pattern": "^[\\^~><=]|[xX*]$|latest"}},
            "repository": {
                "type": "object", "required": ["url", "source"],
                "properties": {"url": {"type": "string", "pattern": "^https://"}, "source": {"type": "string"}}
            },
            "websiteUrl": {"type": "string", "pattern": "^https?://"},
            "packages": {"type": "array", "items": {
                "type": "object",
                "required": ["registryType", "identifier", "transport"],
                "additionalProperties": false,
                "properties": {
                    "registryType": {"enum": ["npm", "pypi", "oci", "nuget", "mcpb"]},
                    "registryBaseUrl": {"type": "string", "pattern": "^https://"},
                    "identifier": {"type": "string", "minLength": 1},
                    "version": {"type": "string", "not": {"const": "latest"}},
                    "runtimeHint": {"type": "string"},
                    "transport": {
                        "type": "object", "required": ["type"],
                        "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}}
                    },
                    "environmentVariables": {"type": "array", "items": input},
                    "runtimeArguments": {"type": "array"},
                    "packageArguments": {"type": "array"},
                    "fileSha256": {"type": "string", "pattern": "^[a-f0-9]{64}$"}
                }
            }},
            "remotes": {"type": "array", "items": {
                "type": "object", "required": ["type", "url"],
                "properties": {"type": {"enum": ["streamable-http", "sse"]}, "url": {"type": "string", "pattern": "^(https?://|\\{)"}}
            }}
        }
    })
}

fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let v = jsonschema::draft202012::new(schema).expect("the test schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn server_json_meets_the_registry_schema() {
    let doc: Value = serde_json::from_str(&read("server.json")).expect("server.json is JSON");
    let errors = validate(&registry_schema(), &doc);
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema's own rules this file relies on are enforced (the check can fail).
    let mut broken = doc.clone();
    broken["description"] = json!("x".repeat(101));
    assert!(!validate(&registry_schema(), &broken).is_empty());

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(doc["version"], version);
    let pkg = &doc["packages"][0];
    assert_eq!(pkg["registryType"], "oci");
    assert_eq!(pkg["transport"]["type"], "stdio");
    let id = pkg["identifier"].as_str().unwrap();
    assert!(
        id.ends_with(&format!(":{version}")),
        "OCI tag is the version: {id}"
    );
    let env: BTreeMap<&str, &Value> = pkg["environmentVariables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e))
        .collect();
    assert_eq!(env["ARCANE_API_KEY"]["isSecret"], true);
    assert_eq!(env["ARCANE_API_KEY"]["isRequired"], true);
    assert_eq!(env["ARCANE_URL"]["isSecret"], false);
    assert_eq!(env["ARCANE_URL"]["isRequired"], true);
    // Every variable it names is one the server reads.
    let help = stdout(&cmd_in(&repo(), &["--help"]).output().unwrap());
    for name in env.keys() {
        assert!(help.contains(name), "{name} is not a setting of arcane-mcp");
    }
}

/// The MCPB manifest's requirements (manifest spec 0.2) as a JSON Schema.
fn mcpb_schema() -> Value {
    json!({
        "type": "object",
        "required": ["manifest_version", "name", "version", "description", "author", "server"],
        "properties": {
            "manifest_version": {"type": "string"},
            "name": {"type": "string", "minLength": 1},
            "version": {"type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+"},
            "description": {"type": "string", "minLength": 1},
            "author": {"type": "object", "required": ["name"]},
            "server": {
                "type": "object",
                "required": ["type", "entry_point", "mcp_config"],
                "properties": {
                    "type": {"enum": ["node", "python", "binary"]},
                    "entry_point": {"type": "string"},
                    "mcp_config": {
                        "type": "object", "required": ["command"],
                        "properties": {
                            "command": {"type": "string"},
                            "args": {"type": "array", "items": {"type": "string"}},
                            "env": {"type": "object", "additionalProperties": {"type": "string"}}
                        }
                    }
                }
            },
            "compatibility": {"type": "object", "properties": {"platforms": {"type": "array", "items": {"enum": ["darwin", "win32", "linux"]}}}},
            "user_config": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["type", "title", "description"],
                "properties": {
                    "type": {"enum": ["string", "number", "boolean", "directory", "file"]},
                    "sensitive": {"type": "boolean"},
                    "required": {"type": "boolean"}
                }
            }}
        }
    })
}

#[test]
fn mcpb_manifest_meets_its_schema() {
    let doc: Value = serde_json::from_str(&read("manifest.json")).expect("manifest.json is JSON");
    let errors = validate(&mcpb_schema(), &doc);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["server"]["type"], "binary");
    let uc = &doc["user_config"];
    assert_eq!(uc["api_key"]["sensitive"], true);
    assert_eq!(uc["api_key"]["required"], true);
    assert_eq!(uc["arcane_url"]["required"], true);
    assert_ne!(uc["arcane_url"]["sensitive"], true);
    let env = &doc["server"]["mcp_config"]["env"];
    assert_eq!(env["ARCANE_URL"], "${user_config.arcane_url}");
    assert_eq!(env["ARCANE_API_KEY"], "${user_config.api_key}");
    // Every ${user_config.X} names a declared option.
    let text = read("manifest.json");
    for part in text.split("${user_config.").skip(1) {
        let key = part.split('}').next().unwrap();
        assert!(uc.get(key).is_some(), "user_config.{key} is not declared");
    }
}

#[test]
fn release_workflow_builds_every_platform_with_checksums() {
    let text = read(".github/workflows/release.yml");
    let wf: Value = yaml_serde::from_str(&text).expect("release.yml is YAML");
    // `on` is a plain key in YAML 1.2.
    let on = wf.get("on").expect("on:");
    assert!(on["push"]["tags"].is_array(), "runs on tags: {on}");
    let jobs = wf["jobs"].as_object().expect("jobs");
    for (name, job) in jobs {
        assert!(job["runs-on"].is_string(), "{name}: runs-on");
        let steps = job["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: steps"));
        for s in steps {
            assert!(
                s.get("uses").is_some() || s.get("run").is_some(),
                "{name}: a step needs uses or run: {s}"
            );
            if let Some(u) = s["uses"].as_str() {
                assert!(u.contains('@'), "{name}: pin {u}");
            }
        }
        if let Some(needs) = job.get("needs").and_then(Value::as_str) {
            assert!(jobs.contains_key(needs), "{name} needs {needs}");
        }
    }
    let targets: Vec<&str> = jobs["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .expect("a build matrix")
        .iter()
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    for t in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(targets.contains(&t), "{t} in {targets:?}");
    }
    assert!(
        text.contains("cargo build --release --locked --bin arcane-mcp"),
        "builds the binary"
    );
    assert!(text.contains("sha256sum"), "publishes checksums");
}
