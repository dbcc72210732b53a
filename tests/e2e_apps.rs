//! End-to-end (`scripts/e2e.sh`): the MCP Apps view (docs/apps.md): its bundle against its sources, and the view in a real
//! browser — Debian's Chromium driven by puppeteer-core (`tests/browser/`, pinned with a
//! lockfile, installed by `scripts/e2e.sh` with `npm ci`) in a test host built on the ext-apps SDK's
//! AppBridge, fed real results of the server against the simulator. The same script checks the
//! protocol side with the MCP TypeScript SDK (the extension negotiated, the `ui://` resource,
//! tool `_meta` only when negotiated).

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::process_support::{BIN, repo};
use crate::server_rendering::HOSTILE;
use crate::server_support::{Sim, spec_path};

/// What the browser test adds to the rendering tests' hostile names: markup that would run
/// or load something, and URLs that must not become links.
const MORE_HOSTILE: &[&str] = &[
    "<img src=x onerror=\"window.__pwned=1\">",
    "<svg onload=window.__pwned=1>",
    "http://evil.example/phish",
    "javascript:window.__pwned=1",
    "\"><script>window.__pwned=1</script>",
];

#[test]
fn the_bundle_is_what_its_sources_build() {
    let out = Command::new("node")
        .arg(repo().join("apps/build.mjs"))
        .arg("--check")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("this test needs Node.js: {e}"));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        arcane_mcp::resources::mcp_apps::HTML,
        std::fs::read_to_string(repo().join("apps/dist/arcane-app.html")).unwrap(),
        "the server serves the committed bundle"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_renders_acts_and_stays_inert_in_a_real_browser() {
    let dir = repo().join("tests/browser");
    let install = "npm ci --prefix tests/browser --no-audit --no-fund, and Chromium (apt-get install chromium)";
    assert!(
        dir.join("node_modules/puppeteer-core").is_dir(),
        "this test needs puppeteer-core and the ext-apps SDK: run `{install}`"
    );
    let sim = Sim::start().await;
    // The rendering tests' hostile names on containers and projects (as tests/server_rendering.rs
    // plants them), and a few more.
    let names: Vec<&str> = HOSTILE.iter().chain(MORE_HOSTILE).copied().collect();
    let mut state = sim.state().await;
    let containers = state["containers"].as_array_mut().unwrap();
    let template = containers[0].clone();
    for (i, h) in names.iter().enumerate() {
        let mut c = template.clone();
        c["id"] = json!(format!("{:064x}", 0xabc000 + i));
        c["name"] = json!(format!("h{i}-{h}"));
        c["image"] = json!(h);
        c["labels"] = json!({"note": h});
        containers.push(c);
    }
    let projects = state["projects"].as_array_mut().unwrap();
    let template = projects[0].clone();
    for (i, h) in names.iter().enumerate() {
        let mut p = template.clone();
        p["name"] = json!(format!("h{i}-{h}"));
        p["id"] = json!(format!("hostile-project-{i}"));
        projects.push(p);
    }
    sim.set_state(state).await;

    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("catalog-cache");
    let base = sim.base();
    let key = sim.sim.api_key().to_string();
    let hostile = serde_json::to_string(&names).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(dir.join("run.mjs"))
            .arg(BIN)
            .arg("test")
            .current_dir(&dir)
            .env("ARCANE_SIM_URL", &base)
            .env("ARCANE_SIM_KEY", &key)
            .env("ARCANE_SPEC", spec_path())
            .env("ARCANE_HOSTILE", &hostile)
            .env("ARCANE_CACHE_DIR", &cache)
            .stdin(Stdio::null())
            .output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("this test needs Node.js ({e}); then `{install}`"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "no report ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    eprintln!("browser test: {} s", report["seconds"]);
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert!(out.status.success(), "{report:#}");

    // Declared where it helps: the tools of the view actions, the execute tool, the domain tools.
    let linked: Vec<&str> = report["linked"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "arcane_container_list",
        "arcane_container_logs",
        "arcane_container_stats",
        "arcane_container_get",
        "arcane_environment_dashboard",
        "arcane_swarm_service_list",
        "arcane_history_list",
    ] {
        assert!(linked.contains(&t), "{t} carries the view: {linked:?}");
    }
    for t in [
        "arcane_container_delete",
        "arcane_container_restart",
        "arcane_history_undo",
    ] {
        assert!(!linked.contains(&t), "{t} has no view");
    }
    assert_eq!(report["linkedDynamic"], json!(["arcane_execute_action"]));
    let meta = report["linkedMeta"].to_string();
    assert!(
        meta.contains("\"arcane_container\"") && !meta.contains("arcane_registry"),
        "{meta}"
    );
    assert_eq!(report["hostileChecked"], names.len());
    assert!(report["bundleBytes"].as_u64().unwrap() < 150 * 1024);
    assert!(report["views"]["statsRefreshes"].as_u64().unwrap() >= 2);

    // What reached Arcane: the paused row's unpause, the row's restart, the accepted removal,
    // never the declined one, and the start that the accepted Undo of a stop sent.
    let log = sim.requests().await;
    let seen = |method: &str, id: &str, tail: &str| {
        log.iter().any(|r| {
            r["method"] == method
                && r["path"].as_str().is_some_and(|p| {
                    p.starts_with("/api/environments/0/containers/")
                        && p.contains(id)
                        && p.ends_with(tail)
                })
        })
    };
    let ids = &report["ids"];
    assert!(
        seen("POST", ids["unpaused"].as_str().unwrap(), "/unpause"),
        "{report:#}"
    );
    assert!(
        seen("POST", ids["restarted"].as_str().unwrap(), "/restart"),
        "{report:#}"
    );
    assert!(
        seen("DELETE", ids["removed"].as_str().unwrap(), ""),
        "{report:#}"
    );
    assert!(
        !seen("DELETE", ids["declined"].as_str().unwrap(), ""),
        "{report:#}"
    );
    assert!(
        seen("POST", ids["undone"].as_str().unwrap(), "/start"),
        "{report:#}"
    );
    sim.sim.shutdown().await;
}

/// A client that declares the MCP Apps extension (with the app's MIME type) or not.
#[derive(Clone)]
struct AppsClient(bool);

impl rmcp::ClientHandler for AppsClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = rmcp::model::ClientCapabilities::default();
        if self.0 {
            let settings = json!({"mimeTypes": [arcane_mcp::resources::mcp_apps::MIME]});
            caps.extensions.get_or_insert_default().insert(
                arcane_mcp::resources::mcp_apps::EXTENSION.into(),
                settings.as_object().unwrap().clone(),
            );
        }
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("apps", "1"))
    }
}

/// The server declares the MCP Apps extension in its capabilities only to a client that
/// declared it, in `initialize` and in 2026-07-28's `server/discover` alike, and to none with
/// `--apps off` (docs/apps.md, "Where it is declared").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_extension_is_declared_only_to_clients_that_declare_it() {
    use rmcp::service::ClientLifecycleMode;
    let sim = Sim::start().await;
    let ext = arcane_mcp::resources::mcp_apps::EXTENSION;
    for lifecycle in ["initialize", "discover"] {
        for (declares, apps) in [(false, "on"), (true, "on"), (true, "off")] {
            let mode = match lifecycle {
                "initialize" => ClientLifecycleMode::Initialize,
                _ => ClientLifecycleMode::Discover {
                    preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
                },
            };
            let client = crate::server_support::spawn_speaking(
                AppsClient(declares),
                mode,
                &sim.base(),
                sim.sim.api_key(),
                &["--apps", apps],
            )
            .await;
            let info = client.peer_info().expect("the server's information");
            let declared = info
                .capabilities
                .extensions
                .as_ref()
                .and_then(|e| e.get(ext))
                .cloned();
            let expected =
                (declares && apps == "on").then(arcane_mcp::resources::mcp_apps::server_settings);
            assert_eq!(
                declared, expected,
                "{lifecycle}, the client declares it: {declares}, --apps {apps}"
            );
            // The other capabilities are the same either way.
            assert!(info.capabilities.tools.is_some(), "{lifecycle}");
            let _ = client.cancel().await;
        }
    }
}
