//! Safety and naming, enforced server-side: read-only mode and exclusions withdraw actions from
//! tools, search and calls (with the reason); safe mode sends nothing and previews the request
//! with secrets masked; every alias resolves; unknown names get the closest IDs; wrong
//! parameters get the accepted and required ones back before anything is sent.

use crate::server_support;

use serde_json::json;
use server_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_withdraws_mutating_actions() {
    let sim = Sim::start().await;
    let catalog = catalog();
    // Reads that reveal a credential (the swarm's join tokens and unlock key) are withdrawn too.
    let reads = catalog
        .actions
        .iter()
        .filter(|a| !a.safety.mutating && a.safety.reveals_secret.is_none())
        .count();

    let ind = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--read-only"],
    )
    .await;
    let listed = tools(&ind).await;
    assert_eq!(listed.len(), reads, "only reading actions have tools");
    assert!(
        listed
            .iter()
            .all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true))
    );
    let e = err(&call(
        &ind,
        "arcane_container_restart",
        json!({"containerId": "web-1"}),
    )
    .await);
    assert!(e.contains("read-only"), "{e}");
    ind.cancel().await.ok();

    let meta = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "meta", "--read-only"],
    )
    .await;
    let c = tools(&meta)
        .await
        .into_iter()
        .find(|t| t.name == "arcane_container")
        .unwrap();
    assert!(!c.description.as_deref().unwrap().contains("restart"));
    meta.cancel().await.ok();

    let dynamic = spawn(&sim.base(), sim.sim.api_key(), &["--read-only"]).await;
    let exec_tool = tools(&dynamic)
        .await
        .into_iter()
        .find(|t| t.name == "arcane_execute_action")
        .unwrap();
    assert_eq!(exec_tool.annotations.unwrap().read_only_hint, Some(true));
    let found = ok(&call(
        &dynamic,
        "arcane_find_action",
        json!({"query": "restart delete kill container", "limit": 50}),
    )
    .await);
    for r in found["results"].as_array().unwrap() {
        assert_eq!(r["mutating"], false, "search hides mutating actions: {r}");
    }
    let e = err(&call(
        &dynamic,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"containerId": "web-1"}}),
    )
    .await);
    assert!(e.contains("read-only"), "{e}");
    // Reads still work.
    ok(&call(
        &dynamic,
        "arcane_execute_action",
        json!({"action": "container.list"}),
    )
    .await);
    assert!(
        writes(&sim.requests().await).is_empty(),
        "no write reached Arcane"
    );
    dynamic.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusions_withdraw_ids_tools_and_domains() {
    let sim = Sim::start().await;
    let catalog = catalog();
    let volumes = catalog.domain("volume").unwrap().actions.len();
    let args = [
        "--tool-surface",
        "individual",
        "--exclude-tools",
        "container.restart,arcane_container_kill,volume",
    ];
    let ind = spawn(&sim.base(), sim.sim.api_key(), &args).await;
    let names: Vec<String> = tools(&ind)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names.len(), catalog.actions.len() - 2 - volumes);
    for gone in [
        "arcane_container_restart",
        "arcane_container_kill",
        "arcane_volume_list",
    ] {
        assert!(!names.iter().any(|n| n == gone), "{gone} withdrawn");
    }
    let e = err(&call(
        &ind,
        "arcane_container_restart",
        json!({"containerId": "web-1"}),
    )
    .await);
    assert!(e.contains("excluded"), "{e}");
    ind.cancel().await.ok();

    let dynamic = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--exclude-tools", "container.restart,volume"],
    )
    .await;
    let found = ok(&call(
        &dynamic,
        "arcane_find_action",
        json!({"query": "restart container volume", "limit": 50}),
    )
    .await);
    for r in found["results"].as_array().unwrap() {
        assert_ne!(r["id"], "container.restart");
        assert!(!r["id"].as_str().unwrap().starts_with("volume."), "{r}");
    }
    let e = err(&call(
        &dynamic,
        "arcane_execute_action",
        json!({"action": "volume.list"}),
    )
    .await);
    assert!(e.contains("excluded"), "{e}");
    assert!(sim.requests().await.is_empty());
    dynamic.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_mode_previews_without_sending() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--safe-mode"]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"containerId": "web-1"}}),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["safeMode"], true);
    assert_eq!(v["request"]["method"], "POST");
    assert!(
        v["request"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/api/environments/0/containers/web-1/restart")
    );
    assert_eq!(v["request"]["headers"]["X-API-Key"], arcane_redact::MASK);
    assert!(!text(&r).contains(sim.sim.api_key()) && !v.to_string().contains(sim.sim.api_key()));

    // A body with a secret: masked in the preview (a registry's credentials are asked:
    // grants-access).
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container_registry.create", "confirm": true, "params": {
            "url": "ghcr.io", "username": "bot", "token": "ghp_secret123",
            "awsAccessKeyId": "", "awsRegion": "", "awsSecretAccessKey": "aws-secret-xyz",
            "description": null, "enabled": true, "insecure": false,
            "registryType": "generic", "repositoryNames": []
        }}),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["request"]["body"]["token"], arcane_redact::MASK, "{v}");
    assert_eq!(v["request"]["body"]["username"], "bot");
    for secret in ["ghp_secret123", "aws-secret-xyz"] {
        assert!(
            !v.to_string().contains(secret) && !text(&r).contains(secret),
            "{secret} masked"
        );
    }

    // Reads still run; nothing mutating was sent (the previews read only the list that names
    // their target, docs/security.md#what-the-confirmation-shows).
    ok(&call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list"}),
    )
    .await);
    let log = sim.requests().await;
    assert!(log.iter().all(|r| r["method"] == "GET"), "{log:?}");
    assert!(writes(&log).is_empty());
    client.cancel().await.ok();

    // The same on the individual surface; confirm is still required first.
    let ind = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--safe-mode=on"],
    )
    .await;
    let e = err(&call(
        &ind,
        "arcane_container_delete",
        json!({"containerId": "backup-1"}),
    )
    .await);
    assert!(e.contains("confirm"), "{e}");
    let v = ok(&call(
        &ind,
        "arcane_container_delete",
        json!({"containerId": "backup-1", "confirm": true}),
    )
    .await);
    assert_eq!(v["request"]["method"], "DELETE");
    assert!(sim.container("backup-1").await.is_some(), "nothing deleted");
    assert!(writes(&sim.requests().await).is_empty());
    ind.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_aliases_and_validation() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let op = catalog()
        .get("container.get")
        .unwrap()
        .request
        .operation_id
        .clone()
        .unwrap();
    for name in [
        "container.get",
        "arcane_container_get",
        "arcane_container.get",
        op.as_str(),
    ] {
        let v = ok(&call(
            &client,
            "arcane_execute_action",
            json!({"action": name, "params": {"containerId": "web-1"}}),
        )
        .await);
        assert!(v.to_string().contains("web-1"), "{name}: {v}");
    }

    // Unknown → the closest IDs.
    let e = err(&call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.restrat"}),
    )
    .await);
    assert!(e.contains("container.restart"), "{e}");

    // Wrong parameters → accepted and required ones, nothing sent.
    sim.reset().await;
    let e = err(&call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"id": "web-1"}}),
    )
    .await);
    assert!(
        e.contains("Accepted parameters") && e.contains("containerId") && e.contains("Required: "),
        "{e}"
    );
    let e = err(&call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {"limit": "many"}}),
    )
    .await);
    assert!(e.contains("limit"), "{e}");
    let e = err(&call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.list", "containerId": "x"}),
    )
    .await);
    assert!(
        e.contains("params"),
        "top-level parameters are pointed into params: {e}"
    );
    assert!(sim.requests().await.is_empty(), "nothing reached Arcane");
    client.cancel().await.ok();

    // Meta accepts the bare name and the other forms; individual resolves its tool names.
    let meta = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", "meta"]).await;
    for name in ["get", "container.get", "arcane_container_get"] {
        ok(&call(
            &meta,
            "arcane_container",
            json!({"action": name, "params": {"containerId": "web-1"}}),
        )
        .await);
    }
    let e = err(&call(&meta, "arcane_container", json!({"action": "restat"})).await);
    assert!(
        e.contains("container.restart") || e.contains("restart"),
        "{e}"
    );
    let e = err(&call(&meta, "arcane_containr", json!({"action": "list"})).await);
    assert!(e.contains("arcane_container"), "{e}");
    meta.cancel().await.ok();

    let ind = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual"],
    )
    .await;
    let e = err(&call(&ind, "arcane_container_restat", json!({})).await);
    assert!(e.contains("container.restart"), "{e}");
    ind.cancel().await.ok();
}

/// `--tools` is an allow-list: only the actions it names are listed and run, and an action it
/// does not name (as a newer Arcane's would be) is withdrawn with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_list_serves_only_what_it_names() {
    let sim = Sim::start().await;
    let ind = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &[
            "--tool-surface",
            "individual",
            "--tools",
            "container.list,arcane_container_get,volume",
        ],
    )
    .await;
    let cat = catalog();
    let volumes = cat.actions.iter().filter(|a| a.domain == "volume").count();
    let listed: Vec<String> = tools(&ind)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(listed.len(), 2 + volumes, "{listed:?}");
    assert!(listed.contains(&"arcane_container_list".to_string()));
    assert!(listed.contains(&"arcane_container_get".to_string()));
    ind.cancel().await.ok();

    let dynamic = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tools", "container.list"],
    )
    .await;
    let e = err(&call(
        &dynamic,
        "arcane_execute_action",
        json!({"action": "container.restart", "params": {"containerId": "web-1"}}),
    )
    .await);
    assert!(
        e.contains("allow-list") && e.contains("ARCANE_MCP_TOOLS"),
        "{e}"
    );
    assert!(sim.requests().await.is_empty(), "nothing reached Arcane");
    dynamic.cancel().await.ok();
}

/// Presets are data in the overlays: each built-in one serves what it says, and an unknown
/// name stops the server with the defined ones listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presets_from_the_overlays_withdraw_with_reasons() {
    let sim = Sim::start().await;
    let cat = catalog();
    assert_eq!(
        cat.presets.keys().map(String::as_str).collect::<Vec<_>>(),
        ["deploy", "minimal", "read-only", "troubleshoot"]
    );
    for (name, preset) in &cat.presets {
        for entry in preset.tools.iter().chain(&preset.exclude) {
            assert!(
                cat.actions
                    .iter()
                    .any(|a| &a.id == entry || &a.domain == entry),
                "preset {name} names {entry}, which the catalog does not have"
            );
        }
    }
    // Reads that reveal a credential are withdrawn by every preset that does not name them.
    let reads = cat
        .actions
        .iter()
        .filter(|a| !a.safety.mutating && a.safety.reveals_secret.is_none())
        .count();
    let count = |args: Vec<&'static str>| {
        let base = sim.base();
        let key = sim.sim.api_key().to_string();
        async move {
            let mut all = vec!["--tool-surface", "individual"];
            all.extend(args);
            let c = spawn(&base, &key, &all).await;
            let names: Vec<String> = tools(&c)
                .await
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            c.cancel().await.ok();
            names
        }
    };
    assert_eq!(count(vec!["--preset", "read-only"]).await.len(), reads);
    let minimal = count(vec!["--preset", "minimal"]).await;
    assert_eq!(
        minimal.len(),
        cat.presets["minimal"].tools.len(),
        "{minimal:?}"
    );
    let troubleshoot = count(vec!["--preset", "troubleshoot"]).await;
    assert_eq!(troubleshoot.len(), reads + 6);
    assert!(troubleshoot.contains(&"arcane_container_restart".to_string()));
    assert!(!troubleshoot.contains(&"arcane_container_delete".to_string()));
    let deploy = count(vec!["--preset", "deploy"]).await;
    assert!(deploy.contains(&"arcane_project_up".to_string()));
    assert!(!deploy.contains(&"arcane_project_destroy".to_string()));
    assert!(!deploy.contains(&"arcane_container_delete".to_string()));

    let c = spawn(&sim.base(), sim.sim.api_key(), &["--preset", "minimal"]).await;
    let e = err(&call(
        &c,
        "arcane_execute_action",
        json!({"action": "container.kill", "params": {"containerId": "web-1"}, "confirm": true}),
    )
    .await);
    assert!(e.contains("preset \"minimal\""), "{e}");
    c.cancel().await.ok();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .args([
            "--arcane-url",
            &sim.base(),
            "--api-key",
            "k",
            "--preset",
            "nope",
            "--spec",
        ])
        .arg(spec_path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"nope\"") && err.contains("troubleshoot"),
        "{err}"
    );
}

/// A client that can show elicitation forms and answers them as told, recording the questions.
#[derive(Clone)]
struct Asker {
    /// `None`: the client declares no elicitation capability.
    answer: Option<(rmcp::model::ElicitationAction, bool)>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Asker {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps = match self.answer {
            Some(_) => rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            None => rmcp::model::ClientCapabilities::default(),
        };
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("asker", "1"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        let (action, tick) = self.answer.clone().expect("asked only when declared");
        Ok(rmcp::model::ElicitResult::new(action).with_content(json!({"confirm": tick})))
    }
}

/// A destructive call without `confirm` asks the user when the client can show a form: it runs
/// on an accept with the box ticked and not otherwise; a client without elicitation keeps the
/// `confirm: true` rule; `--confirm-mode param` never asks; `never-destructive` withdraws.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destructive_calls_ask_the_user_through_elicitation() {
    use rmcp::model::ElicitationAction::{Accept, Cancel, Decline};
    let sim = Sim::start().await;
    let kill = json!({"action": "container.kill", "params": {"containerId": "web-1"}});
    for (answer, args, runs) in [
        (Some((Accept, true)), vec![], true),
        (Some((Accept, false)), vec![], false),
        (Some((Decline, false)), vec![], false),
        (Some((Cancel, false)), vec![], false),
        (None, vec![], false),
        (Some((Accept, true)), vec!["--confirm-mode", "param"], false),
    ] {
        sim.reset().await;
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let handler = Asker {
            answer: answer.clone(),
            asked: asked.clone(),
        };
        let client = spawn_with(handler, &sim.base(), sim.sim.api_key(), &args).await;
        let r = call(&client, "arcane_execute_action", kill.clone()).await;
        let case = format!("{answer:?} {args:?}");
        assert_eq!(is_error(&r), !runs, "{case}: {}", text(&r));
        assert_eq!(sim.kills().await, usize::from(runs), "{case}");
        let questions = asked.lock().unwrap().clone();
        let expect_asked = answer.is_some() && args.is_empty();
        assert_eq!(questions.len(), usize::from(expect_asked), "{case}");
        if let Some(q) = questions.first() {
            assert!(q.contains("container.kill") && q.contains("web-1"), "{q}");
        }
        if !runs {
            let e = text(&r);
            let expected = if expect_asked {
                "nothing was sent"
            } else {
                "\"confirm\": true"
            };
            assert!(e.contains(expected), "{case}: {e}");
        }
        client.cancel().await.ok();
    }
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &[
            "--confirm-mode",
            "never-destructive",
            "--tool-surface",
            "individual",
        ],
    )
    .await;
    let names: Vec<String> = tools(&client)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.contains(&"arcane_container_kill".to_string()));
    assert!(names.contains(&"arcane_container_restart".to_string()));
    client.cancel().await.ok();
}

/// A client of the 2026-07-28 protocol cannot be asked in the middle of a call: the server
/// answers with the question and a sealed state, and rmcp's client asks its user and retries.
/// The destructive call runs on an accept with the box ticked and not otherwise; a client
/// without elicitation keeps the `confirm: true` rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_confirms_by_a_round_trip() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    let kill = json!({"action": "container.kill", "params": {"containerId": "web-1"}});
    for (answer, runs) in [
        (Some((Accept, true)), true),
        (Some((Decline, false)), false),
        (None, false),
    ] {
        sim.reset().await;
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let handler = Asker {
            answer: answer.clone(),
            asked: asked.clone(),
        };
        let client = server_support::spawn_speaking(
            handler,
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
            &sim.base(),
            sim.sim.api_key(),
            &[],
        )
        .await;
        let r = call(&client, "arcane_execute_action", kill.clone()).await;
        let case = format!("{answer:?}");
        assert_eq!(is_error(&r), !runs, "{case}: {}", text(&r));
        assert_eq!(sim.kills().await, usize::from(runs), "{case}");
        let questions = asked.lock().unwrap().clone();
        assert_eq!(questions.len(), usize::from(answer.is_some()), "{case}");
        if let Some(q) = questions.first() {
            assert!(q.contains("container.kill") && q.contains("web-1"), "{q}");
        }
        if !runs {
            let expected = if answer.is_some() {
                "declined"
            } else {
                "\"confirm\": true"
            };
            assert!(text(&r).contains(expected), "{case}: {}", text(&r));
        }
        client.cancel().await.ok();
    }
}

/// A search for an action the policy withdrew names it, with the setting that withdrew it,
/// instead of ranking a sibling first as if it were the one or calling the rest a weak
/// match; the served results follow, the withdrawn one never among them. When it leads the
/// next action only narrowly ("redeploy": a project's or a container's), it is named as the
/// closest action, still never replaced in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_for_a_withdrawn_action_says_it_is_withdrawn() {
    let sim = Sim::start().await;
    for (args, query, id, setting, clearly) in [
        (
            vec!["--exclude-tools", "container.delete"],
            "delete container",
            "container.delete",
            "ARCANE_MCP_EXCLUDE_TOOLS",
            true,
        ),
        (
            vec!["--read-only"],
            "restart container",
            "container.restart",
            "ARCANE_MCP_READ_ONLY",
            true,
        ),
        (
            vec!["--exclude-tools", "project.redeploy"],
            "redeploy",
            "project.redeploy",
            "ARCANE_MCP_EXCLUDE_TOOLS",
            false,
        ),
    ] {
        let client = spawn(&sim.base(), sim.sim.api_key(), &args).await;
        let r = call(
            &client,
            "arcane_find_action",
            json!({"query": query, "limit": 5}),
        )
        .await;
        let t = text(&r);
        let v = ok(&r);
        let opening = if clearly {
            format!("This asks for `{id}`")
        } else {
            format!("The closest action, `{id}`")
        };
        assert!(
            t.starts_with(&opening) && t.contains(setting),
            "{args:?}: {t}"
        );
        assert_eq!(v["withdrawn"]["id"], id, "{v}");
        assert_eq!(v["withdrawn"]["clearly"], clearly, "{v}");
        if clearly {
            assert_eq!(v["weak"], false, "{v}");
        }
        let ids: Vec<&str> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert!(!ids.is_empty() && !ids.contains(&id), "{ids:?}");
        // A search for something served says nothing of the kind.
        let r = call(
            &client,
            "arcane_find_action",
            json!({"query": "list containers", "limit": 5}),
        )
        .await;
        assert!(ok(&r).get("withdrawn").is_none(), "{}", text(&r));
        client.cancel().await.ok();
    }
    assert!(sim.requests().await.is_empty());
}

/// Every refusal of every rule reads as one sentence: no run of spaces from a broken line
/// continuation, no doubled full stop — for each action of the catalog.
#[test]
fn refusals_read_as_sentences() {
    use arcane_catalog::{Confirmation, Policy};
    let cat = catalog();
    let policies = [
        Policy::new(true, false, &[]),
        Policy::new(false, false, &["container".to_string()]),
        Policy::new(false, false, &[]).with_allow(&["image.list".to_string()], None),
        Policy::new(false, false, &[])
            .with_allow(&[], Some("troubleshoot"))
            .resolve_preset(&cat)
            .unwrap(),
        Policy::new(false, false, &[]).with_confirm(Confirmation::NeverDestructive),
    ];
    let mut seen = 0;
    for p in &policies {
        for a in &cat.actions {
            let Some(why) = p.withdrawn(a) else { continue };
            seen += 1;
            let said = arcane_engine::CallError::Withdrawn { reason: why }.to_string();
            assert!(
                !said.contains("  ") && !said.contains(".."),
                "{}: {said}",
                a.id
            );
        }
    }
    assert!(seen > 300, "{seen}");
}
