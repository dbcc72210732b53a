//! The person's confirmation (docs/security.md#confirmation): the model cannot skip it with
//! `"confirm": true` when the client can ask, the question says what will be destroyed (in the
//! words of the safe-mode preview), actions that can do anything and credential reveals are
//! confirmed too, read-only mode and presets withdraw the reveals.

use serde_json::{Value, json};

use crate::fixtures;
use crate::process_support::{HttpServer, http_client_with};
use crate::server_support::{
    self, Sim, call, catalog, is_error, spawn, spawn_with, text, tools, writes,
};

/// A client that declares form elicitation (or not) and answers every question as told,
/// recording the questions.
#[derive(Clone)]
pub(crate) struct Asker {
    /// `None`: the client declares no elicitation capability.
    answer: Option<(rmcp::model::ElicitationAction, bool)>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Asker {
    pub(crate) fn new(answer: Option<(rmcp::model::ElicitationAction, bool)>) -> Asker {
        Asker {
            answer,
            asked: Default::default(),
        }
    }

    pub(crate) fn questions(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
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

fn kill(confirm: bool) -> Value {
    json!({"action": "container.kill", "params": {"containerId": "web-1"}, "confirm": confirm})
}

/// With a client that can ask, `--confirm-mode elicit` asks the person even when the model
/// passes `"confirm": true`: a decline sends nothing, an accept runs it. `elicit-unless-
/// confirmed` keeps the earlier rule (the model's `confirm: true` runs it unasked), and a
/// client without elicitation keeps the `confirm: true` rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_true_does_not_skip_the_persons_question() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    for (answer, args, asked, runs) in [
        (Some((Decline, false)), vec![], true, false),
        (Some((Accept, true)), vec![], true, true),
        (
            Some((Decline, false)),
            vec!["--confirm-mode", "elicit-unless-confirmed"],
            false,
            true,
        ),
        (None, vec![], false, true),
    ] {
        sim.reset().await;
        let handler = Asker::new(answer.clone());
        let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &args).await;
        let r = call(&client, "arcane_execute_action", kill(true)).await;
        let case = format!("{answer:?} {args:?}");
        assert_eq!(handler.questions().len(), usize::from(asked), "{case}");
        assert_eq!(is_error(&r), !runs, "{case}: {}", text(&r));
        assert_eq!(sim.kills().await, usize::from(runs), "{case}");
        if !runs {
            assert!(text(&r).contains("declined"), "{case}: {}", text(&r));
        }
        client.cancel().await.ok();
    }
}

/// The audit line of a call the person declined says it was not confirmed, although the model
/// passed `"confirm": true`; an accepted one says how it was confirmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_call_is_not_recorded_as_confirmed() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    let dir = tempfile::tempdir().unwrap();
    for (answer, outcome, confirmed) in [
        ((Decline, false), "refused", Value::Null),
        ((Accept, true), "ok", json!("elicitation")),
    ] {
        sim.reset().await;
        let log = dir.path().join(format!("audit-{outcome}.jsonl"));
        let log_arg = log.to_str().unwrap().to_owned();
        let handler = Asker::new(Some(answer));
        let args = ["--audit-log", log_arg.as_str()];
        let client = spawn_with(handler, &sim.base(), sim.sim.api_key(), &args).await;
        call(&client, "arcane_execute_action", kill(true)).await;
        client.cancel().await.ok();
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["outcome"], outcome, "{text}");
        assert_eq!(lines[0]["confirmed"], confirmed, "{text}");
    }
}

/// The same over the 2026-07-28 round trip: the question comes back in an incomplete result
/// although the call carried `"confirm": true`, and only the person's yes runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_is_asked_even_with_confirm_true() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    for (answer, runs) in [
        (Some((Decline, false)), false),
        (Some((Accept, true)), true),
    ] {
        sim.reset().await;
        let handler = Asker::new(answer.clone());
        let client = server_support::spawn_speaking(
            handler.clone(),
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
            &sim.base(),
            sim.sim.api_key(),
            &[],
        )
        .await;
        let r = call(&client, "arcane_execute_action", kill(true)).await;
        let case = format!("{answer:?}");
        assert_eq!(handler.questions().len(), 1, "{case}");
        assert_eq!(is_error(&r), !runs, "{case}: {}", text(&r));
        assert_eq!(sim.kills().await, usize::from(runs), "{case}");
        client.cancel().await.ok();
    }
}

/// Over Streamable HTTP, a session that declared elicitation is asked although the model passed
/// `"confirm": true`; declined, nothing reaches Arcane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_confirm_true_does_not_skip_the_question() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let handler = Asker::new(Some((Decline, false)));
    let client = http_client_with(handler.clone(), &server.base, "tok", &[]).await;
    let r = call(&client, "arcane_execute_action", kill(true)).await;
    assert!(is_error(&r), "{}", text(&r));
    assert_eq!(handler.questions().len(), 1);
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();
    server.stop().await;
}

/// What the server tells the model follows the mode: with `elicit` it is not told that
/// `confirm: true` confirms a call; with `param` it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_and_descriptions_say_how_confirmation_works_per_mode() {
    let sim = Sim::start().await;
    for (args, asks) in [(vec![], true), (vec!["--confirm-mode", "param"], false)] {
        let client = spawn(&sim.base(), sim.sim.api_key(), &args).await;
        let info = client.peer_info().expect("initialized");
        let instructions = info.instructions.clone().unwrap_or_default();
        let exec = tools(&client)
            .await
            .into_iter()
            .find(|t| t.name == "arcane_execute_action")
            .expect("the execution tool");
        let desc = exec.description.as_deref().unwrap_or_default();
        if asks {
            assert!(
                instructions.contains("does not skip that question"),
                "{instructions}"
            );
            assert!(
                !instructions.contains("need \"confirm\": true; ask the user first"),
                "{instructions}"
            );
            assert!(
                desc.contains("counts only when the client cannot ask"),
                "{desc}"
            );
        } else {
            assert!(
                instructions.contains("need \"confirm\": true; ask the user first"),
                "{instructions}"
            );
            assert!(desc.contains("need confirm: true"), "{desc}");
        }
        client.cancel().await.ok();
    }
}

/// The question names what will be destroyed: every path parameter, the flags that widen the
/// effect, and the name a looked-up ID was given as; the safe-mode preview says the same in
/// the same words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_shows_the_target_the_scope_and_the_name_given() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let destroy = json!({"action": "project.destroy",
        "params": {"projectId": "webshop", "removeVolumes": true, "removeFiles": true}});
    let r = call(&client, "arcane_execute_action", destroy.clone()).await;
    assert!(is_error(&r));
    let q = handler.questions().pop().expect("asked");
    assert!(q.contains("(given as `webshop`)"), "{q}");
    assert!(q.contains("`removeVolumes`: true"), "{q}");
    assert!(q.contains("`removeFiles`: true"), "{q}");
    assert!(q.contains("in environment `0`"), "{q}");
    client.cancel().await.ok();

    // The safe-mode preview of the same call: the same words.
    let handler = Asker::new(Some((rmcp::model::ElicitationAction::Accept, true)));
    let client = spawn_with(
        handler.clone(),
        &sim.base(),
        sim.sim.api_key(),
        &["--safe-mode"],
    )
    .await;
    let r = call(&client, "arcane_execute_action", destroy).await;
    let preview = text(&r);
    let q = handler.questions().pop().expect("asked");
    let effect = q
        .strip_prefix("An assistant wants to run ")
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the question's effect");
    assert!(preview.contains(effect), "{preview}\n---\n{effect}");
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();
}

/// Found by an outside attack (docs/security.md): a target that merely looks like a credential was masked in the
/// question (`- `volumeName`: `********``), so the person approved deleting something unseen.
/// Targets are identifiers: the question and the safe-mode preview (its effect and its URL)
/// show them as sent; nothing else that is secret is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_that_look_like_credentials_are_shown_in_the_question() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let cases = [
        (
            "volume.delete",
            "volumeName",
            "sk-proj-abcdefghijklmnopqrstuvwxyz01",
        ),
        ("network.delete", "networkId", "AKIAIOSFODNN7EXAMPLE"),
        (
            "container.delete",
            "containerId",
            "glpat-abcdefghijklmnopqrst",
        ),
        ("container.delete", "containerId", "token=prod-data"),
    ];
    for (action, param, target) in cases {
        let r = call(
            &client,
            "arcane_execute_action",
            json!({"action": action, "params": {param: target}}),
        )
        .await;
        assert!(is_error(&r), "declined: {}", text(&r));
        let q = handler.questions().pop().expect("asked");
        assert!(
            q.contains(&format!("- `{param}`: `{target}`")),
            "{action} {target}: {q}"
        );
        assert!(!q.contains(arcane_redact::MASK), "{q}");
    }
    assert!(writes(&sim.requests().await).is_empty(), "nothing sent");
    client.cancel().await.ok();

    // The safe-mode preview: the same words, and the URL names the same volume.
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--safe-mode"]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "volume.delete", "confirm": true,
               "params": {"volumeName": "sk-proj-abcdefghijklmnopqrstuvwxyz01"}}),
    )
    .await;
    let preview = text(&r);
    assert!(
        preview.contains("- `volumeName`: `sk-proj-abcdefghijklmnopqrstuvwxyz01`"),
        "{preview}"
    );
    assert!(
        preview.contains("/volumes/sk-proj-abcdefghijklmnopqrstuvwxyz01\""),
        "{preview}"
    );
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();
}

/// Over every action of the 2.8.0 catalog that needs confirmation: the question shows every
/// path parameter and every flag given (each boolean of the query or body), with its value.
#[test]
fn every_target_and_scope_flag_of_the_catalog_appears_in_the_question() {
    let cat = catalog();
    let mut checked = 0;
    for a in cat.actions.iter().filter(|a| a.needs_confirmation()) {
        let mut params = serde_json::Map::new();
        for p in &a.params {
            let is_flag = p.schema.get("type").and_then(Value::as_str) == Some("boolean");
            match p.location {
                arcane_catalog::ParamLocation::Path => {
                    params.insert(p.name.clone(), json!(format!("target-of-{}", p.name)));
                }
                _ if is_flag => {
                    params.insert(p.name.clone(), json!(true));
                }
                _ => {}
            }
        }
        let effect = arcane_engine::describe(a, &params, &serde_json::Map::new(), Some("0"));
        let q = arcane_mcp::mcp::confirm::message(a, &effect);
        assert!(q.contains(&format!("`{}`", a.id)), "{}: {q}", a.id);
        for (name, v) in &params {
            let shown = match v {
                Value::String(s) => format!("`{name}`: `{s}`"),
                other => format!("`{name}`: {other}"),
            };
            assert!(q.contains(&shown), "{}: {shown} missing from\n{q}", a.id);
        }
        checked += 1;
    }
    assert!(checked >= 45, "{checked} actions checked");
}

/// A command in a container and a compose rewrite are not destructive, yet the person confirms
/// them, seeing the command and what the new content changes; nothing runs on a decline. With
/// `--confirm-mode param` they need `"confirm": true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_rewrites_are_confirmed_showing_what_runs() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let exec = json!({"action": "container.exec",
        "params": {"containerId": "web-1", "command": "rm -rf /data"}});
    let r = call(&client, "arcane_execute_action", exec.clone()).await;
    assert!(is_error(&r), "{}", text(&r));
    let compose = "services:\n  web:\n    image: evil/miner\n    privileged: true\n";
    let update = json!({"action": "project.update",
        "params": {"projectId": "webshop", "composeContent": compose}});
    let r = call(&client, "arcane_execute_action", update).await;
    assert!(is_error(&r), "{}", text(&r));
    let questions = handler.questions();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert!(
        questions[0].contains("`command`: `rm -rf /data`"),
        "{}",
        questions[0]
    );
    // The project has a compose file: the new one is shown as what changes against it.
    assert!(
        questions[1].contains("`composeContent`: what changes")
            && questions[1].contains("+    image: evil/miner\n+    privileged: true\n"),
        "{}",
        questions[1]
    );
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();

    let client = spawn(&sim.base(), sim.sim.api_key(), &["--confirm-mode", "param"]).await;
    let r = call(&client, "arcane_execute_action", exec).await;
    assert!(
        is_error(&r) && text(&r).contains("needs \"confirm\": true"),
        "{}",
        text(&r)
    );
    client.cancel().await.ok();
}

/// Commands and credential reveals are asked whatever their class says (`confirm: always`, a
/// `ws_exec` handler); rewrites are asked by their class (takes-host); every reading action
/// that reveals a credential carries the flag.
#[test]
fn commands_rewrites_and_credential_reveals_are_asked() {
    let cat = catalog();
    for id in ["container.exec", "swarm.join_tokens", "swarm.unlock_key"] {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id} in the catalog"));
        assert!(a.safety.confirm_always && a.needs_confirmation(), "{id}");
    }
    for id in [
        "project.update",
        "swarm_stack.update_source",
        "swarm_service.update",
    ] {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id} in the catalog"));
        assert_eq!(a.safety.impact, arcane_catalog::Impact::TakesHost, "{id}");
        assert!(a.needs_confirmation(), "{id}");
    }
    for a in cat
        .actions
        .iter()
        .filter(|a| !a.safety.mutating && a.safety.reveals_secret.is_some())
    {
        assert!(
            a.safety.confirm_always,
            "{} reveals a credential unconfirmed",
            a.id
        );
    }
}

/// An overlay's `confirm` takes only `always` or `default`: anything else fails the load with
/// the file named.
#[test]
fn a_misspelt_confirm_rule_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  container.restart: {confirm: sometimes}\n",
    )
    .unwrap();
    let err = server_support::with_operator_overlays(dir.path())
        .build()
        .err()
        .map(|e| format!("{e:#}"))
        .expect("refused");
    assert!(err.contains("mine.yaml"), "{err}");
}

/// `--read-only` and a preset that does not name them withdraw the swarm's join tokens and
/// unlock key (GETs that hand out the cluster); a preset naming one serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_and_presets_withdraw_credential_reveals() {
    let sim = Sim::start().await;
    for args in [
        vec!["--read-only"],
        vec!["--preset", "troubleshoot"],
        vec!["--preset", "read-only"],
    ] {
        let client = spawn(
            &sim.base(),
            sim.sim.api_key(),
            &[&args[..], &["--tool-surface", "individual"]].concat(),
        )
        .await;
        let names: Vec<String> = tools(&client)
            .await
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(names.contains(&"arcane_swarm_info".to_string()), "{args:?}");
        for gone in ["arcane_swarm_join_tokens", "arcane_swarm_unlock_key"] {
            assert!(!names.contains(&gone.to_string()), "{args:?}: {gone}");
        }
        let r = call(
            &client,
            "arcane_swarm_join_tokens",
            json!({"confirm": true}),
        )
        .await;
        assert!(is_error(&r), "{args:?}: {}", text(&r));
        client.cancel().await.ok();
    }
    assert!(writes(&sim.requests().await).is_empty());

    let cat = catalog();
    let tokens = cat.get("swarm.join_tokens").unwrap();
    let preset = arcane_catalog::Preset {
        description: "mine".into(),
        reads: true,
        tools: vec!["swarm.join_tokens".into()],
        ..Default::default()
    };
    let mut policy = arcane_catalog::Policy::new(false, false, &[]);
    policy.preset = Some(("mine".into(), Some(preset.clone())));
    assert!(policy.serves(tokens));
    policy.preset = Some((
        "mine".into(),
        Some(arcane_catalog::Preset {
            tools: vec!["swarm".into()],
            ..preset
        }),
    ));
    assert!(!policy.serves(tokens), "a domain entry does not name it");
}

/// A compose rewrite's question shows what changes: a diff of the project's current compose
/// file (read through `project.get`) against the new one, the env file's changed password as a
/// changed line with neither value; the safe-mode preview shows the same diff. When the current
/// version cannot be read (Arcane answers 500, or too late), the question says so and shows the
/// new content whole. Only reads reach Arcane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_is_shown_as_a_diff_against_the_current_document() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let compose = "services:\n  web:\n    image: evil/miner:latest\n    privileged: true\n    ports:\n      - \"8080:80\"\n    mem_limit: 256m\n";
    let update = json!({"action": "project.update", "params": {"projectId": "webshop",
        "composeContent": compose,
        "envContent": "POSTGRES_PASSWORD=n3w-pa55\nDATABASE_URL=postgres://shop:n3w-pa55@db:5432/shop\n"}});
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(&client, "arcane_execute_action", update.clone()).await;
    assert!(is_error(&r), "{}", text(&r));
    let q = handler.questions().pop().expect("asked");
    assert!(
        q.contains("- `composeContent`: what changes against the current version, read through `project.get`"),
        "{q}"
    );
    assert!(
        q.contains("```diff\n@@ -1,")
            && q.contains("\n-    image: nginx:1.27-alpine\n+    image: evil/miner:latest\n+    privileged: true\n     ports:\n"),
        "{q}"
    );
    // The env file: the password's line changed, neither password shown.
    assert!(q.contains("- `envContent`: what changes"), "{q}");
    assert!(
        q.contains("\n-POSTGRES_PASSWORD=") && q.contains("\n+POSTGRES_PASSWORD="),
        "{q}"
    );
    for secret in ["s3cr3t-demo", "n3w-pa55"] {
        assert!(!q.contains(secret), "{secret} in\n{q}");
    }
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();

    // The safe-mode preview: the same words.
    let handler = Asker::new(Some((rmcp::model::ElicitationAction::Accept, true)));
    let client = spawn_with(
        handler.clone(),
        &sim.base(),
        sim.sim.api_key(),
        &["--safe-mode"],
    )
    .await;
    let r = call(&client, "arcane_execute_action", update.clone()).await;
    let preview = text(&r);
    let q = handler.questions().pop().expect("asked");
    let effect = q
        .strip_prefix("An assistant wants to run ")
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the question's effect");
    assert!(effect.contains("```diff"), "{effect}");
    assert!(preview.contains(effect), "{preview}\n---\n{effect}");
    assert!(!preview.contains("s3cr3t-demo"), "{preview}");
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();

    // Arcane fails the read, then answers too late: the question says so, shows the new
    // content whole, and the person still decides.
    for (fault, args, says) in [
        (
            json!({"method": "GET", "path": "/projects/[^/]+$", "kind": "status", "status": 500}),
            vec![],
            "the current version could not be read",
        ),
        (
            json!({"method": "GET", "path": "/projects/[^/]+$", "kind": "delay", "delayMs": 4000}),
            vec!["--timeout", "1"],
            "the current version could not be read",
        ),
    ] {
        sim.reset().await;
        sim.fault(fault.clone()).await;
        let handler = Asker::new(Some((Decline, false)));
        let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &args).await;
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            call(&client, "arcane_execute_action", update.clone()),
        )
        .await
        .expect("no hang");
        assert!(is_error(&r), "{}", text(&r));
        let q = handler.questions().pop().expect("asked");
        assert!(q.contains(says), "{fault}: {q}");
        assert!(q.contains(compose), "{fault}: the new content whole: {q}");
        assert!(!q.contains("n3w-pa55"), "{q}");
        assert!(writes(&sim.requests().await).is_empty());
        client.cancel().await.ok();
    }
}

/// The built-in overlays name where each rewrite's current document is read.
#[test]
fn rewrites_name_where_their_current_document_is_read() {
    let cat = catalog();
    for (id, param, from) in [
        ("project.update", "composeContent", "project.get"),
        ("project.update", "envContent", "project.get"),
        (
            "swarm_stack.update_source",
            "composeContent",
            "swarm_stack.source",
        ),
        ("swarm_service.update", "spec", "swarm_service.get"),
    ] {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id}"));
        assert!(
            a.safety
                .confirm_diff
                .iter()
                .any(|d| d.param == param && d.from == from),
            "{id}: {:?}",
            a.safety.confirm_diff
        );
    }
}

/// `confirmDiff` is checked strictly: a reading action that changes state, or one whose
/// parameters the call cannot give, fails the load with the file named; an unknown field is
/// refused by the schema.
#[test]
fn a_confirm_diff_that_could_change_state_or_cannot_be_read_is_refused() {
    for (entry, says) in [
        (
            "project.update: {confirmDiff: [{param: composeContent, from: project.redeploy, field: data}]}",
            "not a plain read",
        ),
        (
            "project.update: {confirmDiff: [{param: composeContent, from: container.get, field: data}]}",
            "needs the parameter containerId",
        ),
        (
            "project.update: {confirmDiff: [{param: composeContent, from: project.get, field: data, run: x}]}",
            "mine.yaml",
        ),
        (
            "project.update: {confirmDiff: [{param: composeContent, from: project.get, field: \"data..x\"}]}",
            "mine.yaml",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.yaml"),
            format!("actions:\n  {entry}\n"),
        )
        .unwrap();
        let err = server_support::with_operator_overlays(dir.path())
            .build()
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_else(|| panic!("{entry}: accepted"));
        assert!(
            err.contains("mine.yaml") && err.contains(says),
            "{entry}: {err}"
        );
    }
}

/// A client that declares form elicitation and holds every question open until the test lets
/// it answer (each answer a decline): the questions stay open as long as the test wants.
#[derive(Clone)]
struct Holder {
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    changed: std::sync::Arc<tokio::sync::Notify>,
    answers: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Holder {
    fn new() -> Holder {
        Holder {
            asked: Default::default(),
            changed: Default::default(),
            answers: std::sync::Arc::new(tokio::sync::Semaphore::new(0)),
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until `n` questions have been asked in all.
    async fn until_asked(&self, n: usize) {
        loop {
            // Made before the check: a question asked in between still wakes it.
            let changed = self.changed.notified();
            if self.asked() >= n {
                return;
            }
            changed.await;
        }
    }

    /// Lets `n` held questions be answered.
    fn answer(&self, n: usize) {
        self.answers.add_permits(n);
    }
}

impl rmcp::ClientHandler for Holder {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps = rmcp::model::ClientCapabilities::builder()
            .enable_elicitation()
            .build();
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("holder", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_waiters();
        if let Ok(permit) = self.answers.acquire().await {
            permit.forget();
        }
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Decline,
        ))
    }
}

/// One `container.kill` call of `peer` on its own task; its answer's text (and whether it was
/// an error) goes to `done`.
fn kill_in_background(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    done: &tokio::sync::mpsc::UnboundedSender<(bool, String)>,
) -> tokio::task::JoinHandle<()> {
    let (peer, done) = (peer.clone(), done.clone());
    tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("arcane_execute_action")
            .with_arguments(kill(false).as_object().unwrap().clone());
        if let Ok(r) = peer.call_tool(params).await {
            let _ = done.send((is_error(&r), text(&r)));
        }
    })
}

/// The refusal of a caller past its quota of open confirmations.
fn past_the_quota(text: &str) -> bool {
    text.contains("You have 100 confirmations waiting for the user's answer")
        && text.contains("nothing was sent")
}

/// Opens `n` questions of `holder`'s client (held unanswered); answers come to `done`.
async fn hold_questions(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    holder: &Holder,
    n: usize,
    done: &tokio::sync::mpsc::UnboundedSender<(bool, String)>,
) {
    let start = holder.asked();
    for _ in 0..n {
        kill_in_background(peer, done);
    }
    fixtures::guarded(holder.until_asked(start + n)).await;
}

/// The next call of `peer`: `Ok` when it was asked (its question is then held), `Err` with the
/// refusal when it answered without asking.
async fn next_call(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    holder: &Holder,
    done: &tokio::sync::mpsc::UnboundedSender<(bool, String)>,
) -> Result<(), String> {
    let asked = holder.asked();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    kill_in_background(peer, &tx);
    let forward = done.clone();
    fixtures::guarded(async {
        tokio::select! {
            _ = holder.until_asked(asked + 1) => {
                // Its answer, later, goes with the others'.
                tokio::spawn(async move {
                    while let Some(a) = rx.recv().await {
                        let _ = forward.send(a);
                    }
                });
                Ok(())
            }
            Some((error, text)) = rx.recv() => {
                assert!(error, "{text}");
                Err(text)
            }
        }
    })
    .await
}

/// Over stdio (the real binary), a client that declares elicitation and leaves the questions
/// unanswered holds at most 100 open: the 101st call is refused with what to do, asking
/// nobody; once one is answered, or its call cancelled, a new call is asked again. Nothing
/// reaches Arcane (every answer is a decline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_one_session_holds_at_most_100_open_confirmations() {
    let sim = Sim::start().await;
    let holder = Holder::new();
    let client =
        server_support::spawn_process_with(holder.clone(), &sim.base(), sim.sim.api_key(), &[])
            .await;
    let peer = client.peer().clone();
    let (done, mut answers) = tokio::sync::mpsc::unbounded_channel();
    hold_questions(&peer, &holder, 100, &done).await;

    let refused = next_call(&peer, &holder, &done).await.unwrap_err();
    assert!(past_the_quota(&refused), "{refused}");
    assert_eq!(holder.asked(), 100);

    // One answered: its place goes back once its call has its answer.
    holder.answer(1);
    let (error, declined) = fixtures::guarded(answers.recv()).await.unwrap();
    assert!(error && declined.contains("declined"), "{declined}");
    next_call(&peer, &holder, &done)
        .await
        .expect("asked again once a question was answered");
    assert!(past_the_quota(
        &next_call(&peer, &holder, &done).await.unwrap_err()
    ));

    // One call cancelled while it waits: its place goes back too.
    let params = rmcp::model::CallToolRequestParams::new("arcane_execute_action")
        .with_arguments(kill(false).as_object().unwrap().clone());
    holder.answer(1);
    fixtures::guarded(answers.recv()).await.unwrap();
    let asked = holder.asked();
    let cancelled = peer
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    fixtures::guarded(holder.until_asked(asked + 1)).await;
    assert!(past_the_quota(
        &next_call(&peer, &holder, &done).await.unwrap_err()
    ));
    cancelled.cancel(None).await.unwrap();
    // The server lets the place go when it reads the cancellation: until then a call is
    // still refused, so ask until one is asked (the hang guard bounds it).
    fixtures::guarded(async {
        while next_call(&peer, &holder, &done).await.is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    holder.answer(1_000);
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();
}

/// Over HTTP, one bearer token's session holds at most 100 open confirmations (the 101st call
/// is refused, asking nobody) while another token's session is still asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_one_token_holds_at_most_100_open_confirmations() {
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok-a,tok-b").await;
    let (a, b) = (Holder::new(), Holder::new());
    let client_a = http_client_with(a.clone(), &server.base, "tok-a", &[]).await;
    let client_b = http_client_with(b.clone(), &server.base, "tok-b", &[]).await;
    let (done, _answers) = tokio::sync::mpsc::unbounded_channel();
    hold_questions(client_a.peer(), &a, 100, &done).await;
    let refused = next_call(client_a.peer(), &a, &done).await.unwrap_err();
    assert!(past_the_quota(&refused), "{refused}");
    assert_eq!(a.asked(), 100);
    next_call(client_b.peer(), &b, &done)
        .await
        .expect("another token is still asked");
    a.answer(1_000);
    b.answer(1_000);
    assert!(writes(&sim.requests().await).is_empty());
    // Dropped, not cancelled: the client's own shutdown waits on its hundred streams.
    drop((client_a, client_b));
    server.stop().await;
}

/// The next message of an SSE response, one `data:` line each; `seen` keeps what was read of
/// the next ones.
async fn next_message(stream: &mut reqwest::Response, seen: &mut String) -> Value {
    loop {
        if let Some(end) = seen.find('\n') {
            let line = seen[..end].to_string();
            seen.drain(..=end);
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
            {
                return v;
            }
            continue;
        }
        let chunk = stream.chunk().await.unwrap().expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Over HTTP, a session that declared elicitation but never opened its event stream
/// (`GET /mcp`) still gets the question: it comes on the call's own response stream, and the
/// answer posted back settles the call at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_question_comes_on_the_calls_own_stream() {
    use crate::process_support::raw_post;
    let sim = Sim::start().await;
    let server = HttpServer::for_sim(&sim, &[], "tok").await;
    let base = server.base.clone();
    let auth = ("authorization", "Bearer tok");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "no-stream", "version": "1"}}});
    let (status, h, body) = raw_post(&base, &[auth], init.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let session = h["mcp-session-id"].to_str().unwrap().to_string();
    let in_session = [
        auth,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = raw_post(&base, &in_session, initialized.to_string()).await;
    assert_eq!(status, 202, "{body}");

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "arcane_execute_action", "arguments": kill(false)}});
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in in_session {
        request = request.header(k, v);
    }
    let mut stream = request.body(call.to_string()).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    let question = fixtures::guarded(next_message(&mut stream, &mut seen)).await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    let (status, _, body) = raw_post(&base, &in_session, answer.to_string()).await;
    assert_eq!(status, 202, "{body}");
    let result = fixtures::guarded(next_message(&mut stream, &mut seen)).await;
    assert_eq!(result["id"], 2, "{result}");
    let said = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("declined") && said.contains("nothing was sent"),
        "{said}"
    );
    assert!(writes(&sim.requests().await).is_empty());
    server.stop().await;
}

/// Found by an outside attack: in `--confirm-mode param` nobody is asked, yet the current
/// document was read for a diff nobody would see. Now a rewrite confirmed by `confirm: true`
/// in that mode sends only the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_current_document_is_read_for_a_question_nobody_sees() {
    let sim = Sim::start().await;
    let update = json!({"action": "project.update", "confirm": true, "params": {
        "projectId": "webshop",
        "composeContent": "services:\n  web:\n    image: nginx:1.27-alpine\n"}});
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--confirm-mode", "param"]).await;
    let before = sim.requests().await.len();
    let r = call(&client, "arcane_execute_action", update).await;
    assert!(!is_error(&r), "{}", text(&r));
    let log = sim.requests().await;
    // The name is looked up through the list (`GET …/projects`); the project itself — the
    // document a diff would read — is not fetched: only the write goes to its path.
    let written = writes(&log[before..]);
    assert_eq!(written.len(), 1, "{log:?}");
    let path = written[0]["path"].as_str().unwrap();
    let reads_of_it: Vec<&Value> = log[before..]
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"] == path)
        .collect();
    assert!(reads_of_it.is_empty(), "{reads_of_it:?}");
    client.cancel().await.ok();
}

/// docs/security.md, "What the confirmation shows": the question named its target by ID alone (`1b51628232…`), which the person
/// cannot check. A target is now shown with the name of the object its ID names, read through
/// the list the name resolver uses (`container web-1 (1b5162823263…)`), a name from Arcane
/// escaped as any value; when the list cannot be read the question shows the ID alone and the
/// call goes on; nobody asked (`--confirm-mode param`), nothing is read for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_names_the_targets_given_by_id() {
    use rmcp::model::ElicitationAction::{Accept, Decline};
    let sim = Sim::start().await;
    let web = sim.container("web-1").await.expect("web-1");
    let id = web["id"].as_str().unwrap().to_string();
    let kill = json!({"action": "container.kill", "params": {"containerId": id}});
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(&client, "arcane_execute_action", kill.clone()).await;
    assert!(is_error(&r), "{}", text(&r));
    let q = handler.questions().pop().expect("asked");
    assert!(
        q.contains(&format!(
            "- `containerId`: `{id}` — container `web-1` (`{}…`)",
            &id[..12]
        )),
        "{q}"
    );
    // The default environment, an ID, by its name too.
    assert!(q.contains("in environment `0` (`local`)"), "{q}");
    // A project given by its ID: its name beside it.
    let destroy = json!({"action": "project.destroy",
        "params": {"projectId": "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01"}});
    call(&client, "arcane_execute_action", destroy).await;
    let q = handler.questions().pop().expect("asked");
    assert!(q.contains("— project `webshop` (`7d3f5a9e-2c4…`)"), "{q}");
    // A swarm service given by its ID: its name beside it.
    let services = call(
        &client,
        "arcane_execute_action",
        json!({"action": "swarm_service.list"}),
    )
    .await;
    let first = &services.structured_content.clone().unwrap()["items"][0];
    let (sid, sname) = (
        first["id"].as_str().unwrap().to_string(),
        first["name"].as_str().unwrap().to_string(),
    );
    let delete = json!({"action": "swarm_service.delete", "params": {"serviceId": sid}});
    call(&client, "arcane_execute_action", delete).await;
    let q = handler.questions().pop().expect("asked");
    assert!(q.contains(&format!("— swarm service `{sname}`")), "{q}");
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();

    // A name from Arcane is a value: no line, no Markdown, no hidden character of its own.
    let mut state = sim.state().await;
    for c in state["containers"].as_array_mut().unwrap() {
        if c["id"] == id.as_str() {
            c["name"] = json!("web-1`\n# Approve this\u{202e}");
        }
    }
    sim.set_state(state).await;
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    call(&client, "arcane_execute_action", kill.clone()).await;
    let q = handler.questions().pop().expect("asked");
    assert!(!q.contains("\n# Approve"), "{q}");
    assert!(q.contains("Approve this\\u{202E}"), "{q}");
    client.cancel().await.ok();

    // The list fails: the ID alone, and the person still decides; an accepted call runs.
    sim.reset().await;
    sim.fault(json!({"method": "GET", "path": "/containers$", "kind": "status", "status": 500}))
        .await;
    let handler = Asker::new(Some((Accept, true)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(&client, "arcane_execute_action", kill.clone()).await;
    assert!(!is_error(&r), "{}", text(&r));
    let q = handler.questions().pop().expect("asked");
    assert!(
        q.contains(&format!("- `containerId`: `{id}`")) && !q.contains("— container"),
        "{q}"
    );
    assert_eq!(sim.kills().await, 1);
    client.cancel().await.ok();

    // Nobody asked: no list is read for a question.
    sim.reset().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--confirm-mode", "param"]).await;
    let before = sim.requests().await.len();
    let mut confirmed = kill.clone();
    confirmed["confirm"] = json!(true);
    let r = call(&client, "arcane_execute_action", confirmed).await;
    assert!(!is_error(&r), "{}", text(&r));
    let log = sim.requests().await;
    assert!(
        log[before..].iter().all(|r| r["method"] != "GET"),
        "{:?}",
        &log[before..]
    );
    client.cancel().await.ok();
}

/// docs/security.md, "What the confirmation shows": `image.prune` with no mode removes every unused image on Arcane 2.8.0, tagged ones
/// too, and the question said only "Prune unused images". It now states the scope and the
/// default in words (overlay `confirmScope`) and what would go, listed through `image.list`:
/// names, count and size; the safe-mode preview says the same; a list that cannot be read is
/// said, and the person still decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_states_its_scope_its_defaults_and_what_it_would_remove() {
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    let mut state = sim.state().await;
    state["images"].as_array_mut().unwrap().push(json!({
        "id": format!("sha256:{}", "b".repeat(64)), "repoTags": ["busybox:1.36"],
        "size": 4_400_000, "created": 1_715_000_000}));
    sim.set_state(state).await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let prune = |params: Value| json!({"action": "image.prune", "params": params});
    call(&client, "arcane_execute_action", prune(json!({}))).await;
    let q = handler.questions().pop().expect("asked");
    let line = q
        .lines()
        .find(|l| {
            l.starts_with(
                "- No mode given: Arcane 2.8.0 removes every unused image, tagged ones too",
            )
        })
        .unwrap_or_else(|| panic!("{q}"));
    assert!(line.contains("`busybox:1.36`"), "{line}");
    assert!(line.contains("`<none> (sha256:e9aa71c85c9f…)`"), "{line}");
    assert!(line.ends_with("(2 images, ~137.4 MB)"), "{line}");
    // The images in use are not listed.
    assert!(!q.contains("nginx:1.27-alpine"), "{q}");
    // `dangling`: only the untagged one.
    call(
        &client,
        "arcane_execute_action",
        prune(json!({"mode": "dangling"})),
    )
    .await;
    let q = handler.questions().pop().expect("asked");
    assert!(
        q.contains("- mode dangling: only unused images without a tag — `<none> (sha256:e9aa71c85c9f…)` (1 image, ~133.0 MB)"),
        "{q}"
    );
    assert!(
        !q.contains("busybox") && !q.contains("No mode given"),
        "{q}"
    );
    // Other prunes: their defaults in words.
    call(
        &client,
        "arcane_execute_action",
        json!({"action": "volume.prune", "params": {}}),
    )
    .await;
    let q = handler.questions().pop().expect("asked");
    assert!(q.contains("removes every unused anonymous volume"), "{q}");
    call(
        &client,
        "arcane_execute_action",
        json!({"action": "system.prune", "params": {}}),
    )
    .await;
    let q = handler.questions().pop().expect("asked");
    assert!(q.contains("- No kind is named: nothing is removed"), "{q}");
    assert!(writes(&sim.requests().await).is_empty());
    client.cancel().await.ok();

    // The safe-mode preview: the same words.
    let handler = Asker::new(Some((rmcp::model::ElicitationAction::Accept, true)));
    let client = spawn_with(
        handler.clone(),
        &sim.base(),
        sim.sim.api_key(),
        &["--safe-mode"],
    )
    .await;
    let r = call(&client, "arcane_execute_action", prune(json!({}))).await;
    let preview = text(&r);
    assert!(preview.contains("`busybox:1.36`"), "{preview}");
    let q = handler.questions().pop().expect("asked");
    let effect = q
        .strip_prefix("An assistant wants to run ")
        .and_then(|rest| rest.split("\n\n").next())
        .expect("the question's effect");
    assert!(effect.contains("(2 images, ~137.4 MB)"), "{effect}");
    assert!(preview.contains(effect), "{preview}\n---\n{effect}");
    client.cancel().await.ok();

    // The list fails: said, and the person still decides.
    sim.reset().await;
    sim.fault(json!({"method": "GET", "path": "/images$", "kind": "status", "status": 500}))
        .await;
    let handler = Asker::new(Some((Decline, false)));
    let client = spawn_with(handler.clone(), &sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(&client, "arcane_execute_action", prune(json!({}))).await;
    assert!(text(&r).contains("declined"), "{}", text(&r));
    let q = handler.questions().pop().expect("asked");
    assert!(
        q.contains("No mode given") && q.contains("(what it would remove could not be listed: "),
        "{q}"
    );
    client.cancel().await.ok();
}
