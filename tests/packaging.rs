//! The install channels (docs/install.md) agree with each other: every file that states the
//! version states Cargo.toml's, every package names the server the MCP registry lists, and the
//! npm launcher's platform packages are the ones `scripts/npm-platform.mjs` can build. Fast and
//! self-contained; what needs built packages and the pinned tools (installing the wheel and the
//! npm tarballs, rendering the chart, the registries' schemas) is `scripts/test-dist.sh`, which
//! `.ci/run` runs after the tests.

use serde_json::Value;
use std::path::Path;

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
