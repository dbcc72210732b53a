//! Next steps: follow-ups first, then related actions; never a withdrawn action; destructive and
//! safe-mode marks; names as the calling surface spells them.

use crate::fixtures;

use arcane_catalog::{Action, Catalog};
use arcane_mcp::load::sources::Sources;
use arcane_mcp::present::next_steps::{MAX_NEXT_STEPS, Naming, next_steps};

fn catalog() -> Catalog {
    Sources::of_spec(fixtures::spec_v2()).build().unwrap()
}

fn dotted(a: &Action) -> String {
    format!("`{}`", a.id)
}

#[test]
fn follow_ups_come_first_then_related_with_titles() {
    let cat = catalog();
    let all = |_: &Action| true;
    let naming = Naming {
        name: &dotted,
        served: &all,
        safe_mode: false,
        asks: false,
    };
    let text = next_steps(cat.get("image.pull").unwrap(), &cat, &naming, None).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    assert!(
        lines[0].starts_with("- `project.redeploy` — redeploy the project that uses the image"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("- `image.list` — see the pulled image"),
        "{text}"
    );
    let text = next_steps(cat.get("image.list").unwrap(), &cat, &naming, None).unwrap();
    assert!(text.contains("- `image.get` — Inspect image"), "{text}");
    assert!(
        text.contains("- `image.prune` — Prune unused images (destructive: needs `confirm: true`)"),
        "{text}"
    );
    for id in ["container.get", "project.get", "container.list"] {
        let t = next_steps(cat.get(id).unwrap(), &cat, &naming, None).unwrap_or_default();
        assert!(t.lines().filter(|l| l.starts_with("- ")).count() <= MAX_NEXT_STEPS);
    }
}

#[test]
fn withdrawn_actions_are_never_suggested_and_safe_mode_marks_mutations() {
    let cat = catalog();
    let read_only = |a: &Action| !a.safety.mutating;
    let naming = Naming {
        name: &dotted,
        served: &read_only,
        safe_mode: false,
        asks: false,
    };
    let text = next_steps(cat.get("image.pull").unwrap(), &cat, &naming, None).unwrap();
    assert!(!text.contains("project.redeploy"), "{text}");
    assert!(text.contains("`image.list`"));
    let all = |_: &Action| true;
    let naming = Naming {
        name: &dotted,
        served: &all,
        safe_mode: true,
        asks: false,
    };
    let text = next_steps(cat.get("image.pull").unwrap(), &cat, &naming, None).unwrap();
    assert!(text.contains("`project.redeploy` — redeploy the project that uses the image (changes-workload: needs `confirm: true`) (safe mode: preview only)"), "{text}");
    assert!(
        !text.contains("`image.list` — see the pulled image (safe mode"),
        "{text}"
    );
}

#[test]
fn names_follow_the_surface_and_logs_get_none() {
    let cat = catalog();
    let all = |_: &Action| true;
    let meta = |a: &Action| format!("`arcane_{}` (action `{}`)", a.domain, a.name);
    let naming = Naming {
        name: &meta,
        served: &all,
        safe_mode: false,
        asks: false,
    };
    let text = next_steps(cat.get("project.up").unwrap(), &cat, &naming, None).unwrap();
    assert!(
        text.contains("`arcane_project` (action `runtime`)"),
        "{text}"
    );
    assert!(next_steps(cat.get("container.logs").unwrap(), &cat, &naming, None).is_none());
    assert!(next_steps(cat.get("image.export").unwrap(), &cat, &naming, None).is_none());
}

#[test]
fn conditional_follow_ups_fit_the_state_the_answer_shows() {
    let cat = catalog();
    let all = |_: &Action| true;
    let naming = Naming {
        name: &dotted,
        served: &all,
        safe_mode: false,
        asks: false,
    };
    let get = cat.get("container.get").unwrap();
    let ids = |facts: Option<serde_json::Value>| -> Vec<String> {
        next_steps(get, &cat, &naming, facts.as_ref())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("- `"))
            .map(|l| l.split('`').nth(1).unwrap().to_string())
            .collect()
    };
    let exited = ids(Some(serde_json::json!({"state": {"status": "exited"}})));
    assert_eq!(exited, ["container.logs", "container.start"]);
    let running = ids(Some(serde_json::json!({"state": {"status": "running"}})));
    assert_eq!(
        running,
        [
            "container.logs",
            "container.restart",
            "container.stop",
            "container.exec"
        ]
    );
    let dead = ids(Some(serde_json::json!({"state": {"status": "dead"}})));
    assert_eq!(dead, ["container.logs", "container.delete"]);
    // No state in the answer: no conditional step, and none of them through `related` either.
    assert_eq!(ids(None), ["container.logs"]);
    // A withdrawn conditional follow-up is not suggested.
    let no_start = |a: &Action| a.id != "container.start";
    let naming = Naming {
        name: &dotted,
        served: &no_start,
        safe_mode: false,
        asks: false,
    };
    let t = next_steps(
        get,
        &cat,
        &naming,
        Some(&serde_json::json!({"state": {"status": "exited"}})),
    )
    .unwrap();
    assert!(!t.contains("container.start"), "{t}");
}

/// docs/output-format.md, "Links and next steps": after `image.prune` the next steps offered `system.prune`, a wider removal the
/// person never asked for. After any prune (a destructive action naming no target) no prune is
/// suggested; after a targeted removal, and after a read, one still may be.
#[test]
fn after_a_prune_no_prune_is_suggested() {
    let cat = catalog();
    let all = |_: &Action| true;
    let naming = Naming {
        name: &dotted,
        served: &all,
        safe_mode: false,
        asks: true,
    };
    let bulk = |a: &Action| a.safety.destructive && a.targets().next().is_none();
    let prunes: Vec<&Action> = cat.actions.iter().filter(|a| bulk(a)).collect();
    assert!(
        [
            "image.prune",
            "volume.prune",
            "network.prune",
            "system.prune"
        ]
        .iter()
        .all(|id| prunes.iter().any(|a| a.id == *id)),
        "{:?}",
        prunes.iter().map(|a| &a.id).collect::<Vec<_>>()
    );
    for a in &prunes {
        let text = next_steps(a, &cat, &naming, None).unwrap_or_default();
        for p in &prunes {
            assert!(
                !text.contains(&format!("`{}`", p.id)),
                "{} suggests {}: {text}",
                a.id,
                p.id
            );
        }
    }
    // A read still offers the prune.
    let text = next_steps(cat.get("image.list").unwrap(), &cat, &naming, None).unwrap();
    assert!(text.contains("`image.prune`"), "{text}");
}
