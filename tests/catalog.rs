//! The catalog as the server assembles it from its sources (`arcane_mcp::reload::Sources`):
//! operator overlays and declarations, `check` and the upgrade preview of the command line, and
//! the server's own views of it (the catalog's JSON, the guides). What needs only the catalog
//! crate is in `crates/catalog/tests/derivation.rs`.

use crate::fixtures;

use std::collections::BTreeSet;
use std::path::Path;

use arcane_catalog::Layers;
use arcane_catalog::SpecDoc;
use arcane_catalog::{BuildInput, Catalog, ResultKind, build_catalog};
use arcane_mcp::load::sources::Sources;
use serde_json::{Value, json};

fn build(path: &Path) -> Catalog {
    let doc = SpecDoc::from_file(path).unwrap();
    let layers = Layers::builtin().unwrap();
    build_catalog(BuildInput {
        spec: &doc,
        layers: &layers,
    })
    .unwrap()
}

#[test]
fn operator_overlays_layer_on_top_and_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  container.list:\n    title: My containers\n  image.pull:\n    exclude: not here\n",
    )
    .unwrap();
    let sources = crate::server_support::with_operator_overlays(dir.path());
    let cat = sources.build().unwrap();
    assert_eq!(cat.get("container.list").unwrap().title, "My containers");
    // Built-in overlay values the operator did not touch remain.
    assert!(
        cat.get("container.list")
            .unwrap()
            .output
            .empty_hint
            .is_some()
    );
    assert!(cat.get("image.pull").is_none());
    let ex = cat
        .excluded
        .iter()
        .find(|e| e.id.as_deref() == Some("image.pull"))
        .unwrap();
    assert_eq!(ex.reason, "not here");

    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  container.list:\n    title: ok\n    destructive: maybe\n",
    )
    .unwrap();
    let err = format!("{:#}", sources.build().unwrap_err());
    assert!(err.contains("mine.yaml:4:"), "{err}");
    assert!(err.contains("maybe"), "{err}");

    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  a.b: {id: container.get}\n",
    )
    .unwrap();
    let cat = sources.build();
    assert!(cat.is_ok(), "an entry for an unknown key is not an error");
}

/// `textOmits` reaches the action; a path with an empty name, or one ending in a name later calls
/// take as a path parameter, fails the build and names the action.
#[test]
fn text_omits_apply_and_never_hide_what_a_later_call_takes() {
    let dir = tempfile::tempdir().unwrap();
    let sources = crate::server_support::with_operator_overlays(dir.path());
    let built_in = sources.build().unwrap();
    assert_eq!(
        built_in.get("project.get").unwrap().output.text_omits,
        ["services"]
    );
    let write = |omits: &str| {
        std::fs::write(
            dir.path().join("mine.yaml"),
            format!("actions:\n  container.get:\n    textOmits: {omits}\n"),
        )
        .unwrap()
    };
    write("[hostConfig, networkSettings.networks]");
    let cat = sources.build().unwrap();
    assert_eq!(
        cat.get("container.get").unwrap().output.text_omits,
        ["hostConfig", "networkSettings.networks"]
    );
    for (bad, says) in [
        (
            "[state.containerId]",
            "container.get: textOmits names \"state.containerId\"",
        ),
        ("[imageId]", "imageId is what later calls take"),
        ("[environmentId]", "environmentId is what later calls take"),
        // The overlay schema refuses an empty name first, with the file and line.
        ("[\"config..env\"]", "mine.yaml:3"),
    ] {
        write(bad);
        let err = format!("{:#}", sources.build().unwrap_err());
        assert!(err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn operator_declarations_add_actions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("extra.yaml"),
        "actions:\n  - id: container.top\n    title: Top\n    description: Processes\n    handler: {kind: ws_exec, path: \"/environments/{id}/ws/containers/{containerId}/terminal\"}\n    params: {type: object, properties: {containerId: {type: string}}, required: [containerId]}\n",
    )
    .unwrap();
    let sources = Sources::of_spec(fixtures::spec_v2()).with_catalog_dir(dir.path().to_path_buf());
    let cat = sources.build().unwrap();
    let top = cat.get("container.top").unwrap();
    assert_eq!(top.output.kind, ResultKind::Handler);
    assert!(top.param("environmentId").is_some());
    assert_eq!(top.request.required, vec!["containerId".to_string()]);
    // It runs a command, and its file did not say `mutating`: it changes state all the same
    // (read-only withdraws it, safe mode previews it, the audit log records it) and the person
    // confirms every call — a declaration cannot make a command a read.
    assert!(top.safety.mutating, "a ws_exec declaration is mutating");
    assert!(
        top.safety.confirm_always,
        "a ws_exec declaration is confirmed"
    );
    assert!(
        !arcane_catalog::Policy::new(true, false, &[]).serves(top),
        "read-only withdraws it"
    );
}

#[test]
fn the_documents_servers_url_is_never_used() {
    let cat = build(&fixtures::spec_v2());
    let json = serde_json::to_string(&arcane_mcp::cmd::catalog::catalog_json(&cat)).unwrap();
    assert!(!json.contains("localhost:3552"));
    let _ = Value::Null;
}

#[test]
fn guides_name_only_actions_of_the_catalog() {
    let cat = build(&fixtures::spec_v2());
    for g in arcane_mcp::resources::guides::GUIDES {
        for id in g.actions() {
            assert!(
                cat.get(id).is_some(),
                "guide {} names unknown action {id}",
                g.slug
            );
        }
    }
}

/// docs/security.md, "What the confirmation shows": the clean-up guide said `image.prune` removes dangling images by default and
/// "needs `confirm: true`" — both wrong: without a mode Arcane 2.8.0 removes every unused image,
/// and in the default `elicit` mode the person is asked whatever the model passes. No guide
/// tells the model to confirm for the person, and what the guide says each prune removes with
/// no mode is what that prune's question says (its `confirmScope` notes for a bare call).
#[test]
fn guides_agree_with_what_the_tools_do() {
    let cat = build(&fixtures::spec_v2());
    let rendered = |slug: &str| {
        let g = arcane_mcp::resources::guides::GUIDES
            .iter()
            .find(|g| g.slug == slug)
            .unwrap();
        let t = g.render(&|id| Some(format!("`{id}`")));
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    for g in arcane_mcp::resources::guides::GUIDES {
        let t = rendered(g.slug);
        assert!(!t.contains("confirm: true"), "{}: {t}", g.slug);
    }
    let t = rendered("clean-up-disk");
    assert!(!t.contains("removes dangling images"), "{t}");
    for (id, words) in [
        ("image.prune", "every unused image, tagged ones too"),
        ("volume.prune", "unused anonymous volume"),
        ("network.prune", "no container uses, except Docker's own"),
    ] {
        let bare: Vec<&str> = cat
            .get(id)
            .unwrap()
            .safety
            .confirm_scope
            .iter()
            .filter(|n| n.applies(&serde_json::Map::new()))
            .map(|n| n.says.as_str())
            .collect();
        assert!(
            bare.iter().any(|s| s.contains(words)),
            "{id}'s question says {bare:?}"
        );
        assert!(t.contains(words), "the guide on {id}: {t}");
    }
}

// ---- The operator's loop: unmatched entries, `check`, strict YAML, the upgrade preview ----

/// Runs the real binary with a clean environment.
fn cli(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"))
        .env_clear()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_mistyped_overlay_key_is_reported_by_catalog_json_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.yaml");
    std::fs::write(
        &file,
        "# notes\nactions:\n  container.restartt:\n    usage: Restart it gently.\n",
    )
    .unwrap();
    let spec = fixtures::spec_v2();
    let base = [
        "--spec",
        path_str(&spec),
        "--overrides",
        path_str(dir.path()),
    ];
    let expected_at = format!("{}:3:", file.display());

    // `catalog`: a section naming file, line, key and the closest IDs.
    let (ok, out, err) = cli(&[&["catalog"][..], &base].concat());
    assert!(ok, "{err}");
    let section = out
        .split("unmatched overlay entries (1)")
        .nth(1)
        .unwrap_or_else(|| panic!("no unmatched section in:\n{out}"));
    assert!(
        section.contains(&expected_at)
            && section.contains("`container.restartt`")
            && section.contains("did you mean `container.restart`"),
        "{out}"
    );

    // `catalog --json`: `unmatchedOverlays`.
    let (ok, out, err) = cli(&[&["catalog", "--json"][..], &base].concat());
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let unmatched = v["unmatchedOverlays"].as_array().unwrap();
    assert_eq!(unmatched.len(), 1, "{unmatched:?}");
    assert_eq!(unmatched[0]["file"], json!(file.display().to_string()));
    assert_eq!(unmatched[0]["line"], json!(3));
    assert_eq!(unmatched[0]["key"], json!("container.restartt"));
    assert_eq!(unmatched[0]["closest"][0], json!("container.restart"));

    // `check`: non-zero, the same line; `--allow-unmatched` downgrades it to a warning.
    let (ok, out, _) = cli(&[&["check"][..], &base].concat());
    assert!(!ok, "check must fail on an unmatched entry:\n{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&expected_at) && l.contains("did you mean `container.restart`")),
        "{out}"
    );
    let (ok, out, err) = cli(&[&["check", "--allow-unmatched"][..], &base].concat());
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("warning: ") && out.contains("check ok"),
        "{out}"
    );

    // Fixed, the check passes.
    std::fs::write(
        &file,
        "actions:\n  container.restart:\n    usage: Restart it gently.\n",
    )
    .unwrap();
    let (ok, out, err) = cli(&[&["check"][..], &base].concat());
    assert!(ok, "{out}{err}");
    assert!(out.contains("check ok: 0 error(s), 0 unmatched"), "{out}");
}

/// On an Arcane the built-in files were not written for (1.11.2: a thousand of their entries
/// name actions it lacks), `check` and the startup log are about the operator's files: the
/// built-in entries are one note, never a failure, and carry no closest-ID guess; an operator's
/// mistyped key still fails with its suggestion.
#[test]
fn built_in_entries_for_another_arcane_are_a_note_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let spec = fixtures::spec_v1();
    let base = [
        "--spec",
        path_str(&spec),
        "--overrides",
        path_str(dir.path()),
    ];
    let (ok, out, err) = cli(&[&["check"][..], &base].concat());
    assert!(ok, "{out}{err}");
    assert!(out.contains("check ok: 0 error(s), 0 unmatched"), "{out}");
    let note = out
        .lines()
        .find(|l| l.contains("built-in overlay entries are for actions this Arcane spec lacks"))
        .unwrap_or_else(|| panic!("no note on the built-in entries:\n{out}"));
    let counted: usize = note
        .trim_start_matches("note: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!(counted > 100, "{note}");
    assert!(!out.contains("did you mean"), "{out}");

    // `catalog --json` still lists them, marked by their file, without a guess.
    let (ok, json_out, err) = cli(&[&["catalog", "--json"][..], &base].concat());
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&json_out).unwrap();
    let unmatched = v["unmatchedOverlays"].as_array().unwrap();
    assert_eq!(unmatched.len(), counted);
    assert!(unmatched.iter().all(|u| {
        u["file"].as_str().unwrap().ends_with(" (built in)")
            && u["closest"].as_array().unwrap().is_empty()
    }));

    // The operator's own typo on the same spec fails as ever, with its closest ID.
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  container.restartt:\n    usage: Restart it gently.\n",
    )
    .unwrap();
    let (ok, out, _) = cli(&[&["check"][..], &base].concat());
    assert!(!ok, "{out}");
    assert!(
        out.contains("check FAILED: 0 error(s), 1 unmatched overlay entry")
            && out.contains("did you mean `container.restart`"),
        "{out}"
    );
}

#[test]
fn check_reports_every_broken_file_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let dup = dir.path().join("a-dup.yaml");
    std::fs::write(
        &dup,
        "actions:\n  container.list:\n    title: One\n  container.get:\n    title: Get\n  container.list:\n    title: Two\n",
    )
    .unwrap();
    let typo = dir.path().join("b-typo.yaml");
    std::fs::write(
        &typo,
        "actions:\n  container.get:\n    title: Inspect\n    relatd: [container.list]\n",
    )
    .unwrap();
    let deep = dir.path().join("c-deep.yaml");
    std::fs::write(
        &deep,
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .unwrap();
    let spec = fixtures::spec_v2();
    let (ok, out, _) = cli(&[
        "check",
        "--spec",
        path_str(&spec),
        "--overrides",
        path_str(dir.path()),
    ]);
    assert!(!ok, "{out}");
    // Duplicate keys: an error naming both lines, at the second.
    assert!(
        out.contains(&format!(
            "{}:6: duplicate key `container.list` (first at line 2)",
            dup.display()
        )),
        "{out}"
    );
    // Unknown field: the line of the field, the closest known one.
    assert!(
        out.contains(&format!(
            "{}:4: unknown field `relatd` in actions.container.get — did you mean `related`?",
            typo.display()
        )),
        "{out}"
    );
    // Nesting: refused with file:line instead of stalling.
    assert!(
        out.contains(&format!("{}:1: nested deeper than", deep.display())),
        "{out}"
    );
    assert!(out.contains("check FAILED: 3 error(s)"), "{out}");
}

#[test]
fn check_refuses_a_spec_without_operations() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.json");
    std::fs::write(
        &spec,
        r#"{"openapi":"3.1.0","info":{"title":"Arcane","version":"2.8.0"},"paths":{}}"#,
    )
    .unwrap();
    let (ok, out, _) = cli(&["check", "--spec", path_str(&spec)]);
    assert!(!ok, "{out}");
    assert!(out.contains("has no operations"), "{out}");
}

/// (method, path with parameter names erased) of every action of a catalog.
fn shapes(cat: &Catalog) -> BTreeSet<(String, String)> {
    let erase = |p: &str| {
        regex::Regex::new(r"\{[^}]*\}")
            .unwrap()
            .replace_all(p, "{}")
            .into_owned()
    };
    cat.actions
        .iter()
        .map(|a| (a.request.method.clone(), erase(&a.request.path)))
        .collect()
}

#[test]
fn upgrade_preview_from_1_11_2_to_2_8_0_agrees_with_both_catalogs() {
    use arcane_catalog::diff;
    let old = build(&fixtures::spec_v1());
    let new = build(&fixtures::spec_v2());
    let d = diff(&old, &new);
    assert_eq!(
        (d.old_actions, d.new_actions),
        (old.actions.len(), new.actions.len())
    );
    assert_eq!(
        (d.old_version.as_str(), d.new_version.as_str()),
        ("1.11.2", "2.8.0")
    );
    // Every action of each catalog is accounted for exactly once.
    assert_eq!(
        d.unchanged + d.renamed.len() + d.added.len(),
        new.actions.len()
    );
    assert_eq!(
        d.unchanged + d.renamed.len() + d.removed.len(),
        old.actions.len()
    );
    // Added: no operation of that shape or operationId in the old catalog; removed: the reverse.
    let (old_shapes, new_shapes) = (shapes(&old), shapes(&new));
    let erase = |p: &str| {
        regex::Regex::new(r"\{[^}]*\}")
            .unwrap()
            .replace_all(p, "{}")
            .into_owned()
    };
    for a in &d.added {
        assert!(new.get(&a.id).is_some(), "{} not in the new catalog", a.id);
        assert!(
            !old_shapes.contains(&(a.method.clone(), erase(&a.path))),
            "{a:?}"
        );
        assert!(
            a.operation_id
                .as_deref()
                .is_none_or(|op| old.resolve(op).is_none()),
            "{a:?}"
        );
    }
    for r in &d.removed {
        assert!(old.get(&r.id).is_some(), "{} not in the old catalog", r.id);
        assert!(
            !new_shapes.contains(&(r.method.clone(), erase(&r.path))),
            "{r:?}"
        );
    }
    // The 2.8.0 API grew: the counts say so, and known removals and additions are there.
    assert!(d.added.len() > 150, "{}", d.added.len());
    assert!(
        d.removed.iter().any(|r| r.id == "font.mono"),
        "{:?}",
        d.removed
    );
    assert!(d.added.iter().any(|a| a.id == "swarm_service.list"));
    // New required parameters are flag changes.
    let api_key = d
        .flag_changes
        .iter()
        .find(|f| f.id == "api_key.create")
        .unwrap();
    assert!(
        api_key
            .changes
            .iter()
            .any(|c| c.contains("new required parameter `permissions`"))
    );
    // The built-in overlays target 2.8.0: none stops matching on the way up…
    assert!(
        d.overlays_stop_matching.is_empty(),
        "{:?}",
        d.overlays_stop_matching
    );
    // …and on the way down, exactly those unmatched under 1.11.2.
    let down = diff(&new, &old);
    assert_eq!(down.overlays_stop_matching, old.unmatched_overlays);
    assert!(!down.overlays_stop_matching.is_empty());
    assert_eq!(down.added.len(), d.removed.len());
    assert_eq!(down.removed.len(), d.added.len());

    // The binary prints the same counts, in text and in JSON.
    let (v1, v2) = (fixtures::spec_v1(), fixtures::spec_v2());
    let (ok, out, err) = cli(&[
        "catalog",
        "--spec",
        path_str(&v2),
        "--diff",
        path_str(&v1),
        "--json",
    ]);
    assert!(ok, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["added"].as_array().unwrap().len(), d.added.len());
    assert_eq!(j["removed"].as_array().unwrap().len(), d.removed.len());
    assert_eq!(j["renamed"].as_array().unwrap().len(), d.renamed.len());
    assert_eq!(j["unchanged"], json!(d.unchanged));
    let (ok, out, err) = cli(&["catalog", "--spec", path_str(&v2), "--diff", path_str(&v1)]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "actions: {} → {} (unchanged {}, renamed {}, added {}, removed {})",
            old.actions.len(),
            new.actions.len(),
            d.unchanged,
            d.renamed.len(),
            d.added.len(),
            d.removed.len()
        )),
        "{out}"
    );
    assert!(out.contains("  - font.mono  GET /fonts/mono"), "{out}");
}

#[test]
fn upgrade_preview_names_renames_and_flag_changes() {
    use arcane_catalog::diff;
    let text = std::fs::read_to_string(fixtures::spec_v2()).unwrap();
    let mut spec: Value = serde_json::from_str(&text).unwrap();
    let paths = spec["paths"].as_object_mut().unwrap();
    // Same operationId, new path — whose last word is destructive: read → mutating.
    let search = paths.remove("/customize/search").unwrap();
    paths.insert("/customize/purge".into(), search);
    // Same method and path, new operationId.
    paths["/environments/{id}/containers"]["get"]["operationId"] = json!("listContainersV3");
    // A new required query parameter.
    let get = &mut paths["/environments/{id}/containers/{containerId}"]["get"];
    let params = get["parameters"].as_array_mut().unwrap();
    params.push(
        json!({"name": "view", "in": "query", "required": true, "schema": {"type": "string"}}),
    );
    // One operation gone.
    paths.remove("/version");
    let dir = tempfile::tempdir().unwrap();
    let new_path = dir.path().join("openapi-next.json");
    std::fs::write(&new_path, serde_json::to_string(&spec).unwrap()).unwrap();
    // An operator overlay keyed by the old operationId stops matching.
    let overrides = dir.path().join("overrides");
    std::fs::create_dir(&overrides).unwrap();
    std::fs::write(
        overrides.join("mine.yaml"),
        "actions:\n  list-containers:\n    usage: Filter by name.\n",
    )
    .unwrap();

    let sources =
        |spec: &Path| Sources::of_spec(spec.to_path_buf()).with_overrides(overrides.clone());
    let old = sources(&fixtures::spec_v2()).build().unwrap();
    let new = sources(&new_path).build().unwrap();
    let d = diff(&old, &new);
    assert_eq!(
        d.removed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["version.get"]
    );
    assert!(d.added.is_empty(), "{:?}", d.added);
    let by_how = |how: &str| {
        d.renamed
            .iter()
            .filter(|r| r.how == how)
            .collect::<Vec<_>>()
    };
    let moved = by_how("new path");
    assert_eq!(moved.len(), 1, "{:?}", d.renamed);
    assert_eq!(
        (moved[0].old.id.as_str(), moved[0].new.id.as_str()),
        ("customize.search", "customize.purge")
    );
    let reid = by_how("new operationId");
    assert_eq!(reid.len(), 1, "{:?}", d.renamed);
    assert_eq!(
        reid[0].new.operation_id.as_deref(),
        Some("listContainersV3")
    );
    let purge = d
        .flag_changes
        .iter()
        .find(|f| f.id == "customize.purge")
        .unwrap();
    assert!(
        purge.changes.contains(&"read → mutating".to_string()),
        "{purge:?}"
    );
    assert!(
        purge.changes.contains(&"now destructive".to_string()),
        "{purge:?}"
    );
    let get = d
        .flag_changes
        .iter()
        .find(|f| f.id == "container.get")
        .unwrap();
    assert_eq!(get.changes, ["new required parameter `view`"]);
    // The operator's entry keyed by the old operationId, the built-in search keywords of the
    // removed `version.get`, and the built-in asks of `version.get` and of the renamed
    // `customize.search` (keyed by the old ID).
    let stopped: Vec<(&str, &str, usize)> = d
        .overlays_stop_matching
        .iter()
        .map(|u| (u.file.as_str(), u.key.as_str(), u.line))
        .collect();
    // One entry for each of the two actions: an action's asks are in its domain's file of
    // `overrides/asks/`.
    let ask_files = 1;
    assert_eq!(stopped.len(), 2 + 2 * ask_files, "{stopped:?}");
    for key in ["version.get", "customize.search"] {
        assert!(
            stopped
                .iter()
                .filter(|(f, k, _)| f.contains("asks") && *k == key)
                .count()
                == ask_files,
            "{key}: {stopped:?}"
        );
    }
    assert!(
        stopped
            .iter()
            .any(|(f, k, l)| f.ends_with("mine.yaml") && *k == "list-containers" && *l == 2),
        "{stopped:?}"
    );
    assert!(
        stopped
            .iter()
            .any(|(f, k, _)| f.contains("(built in)") && *k == "version.get"),
        "{stopped:?}"
    );
    assert_eq!(
        d.unchanged + d.renamed.len() + d.added.len(),
        new.actions.len()
    );
    assert_eq!(
        d.unchanged + d.renamed.len() + d.removed.len(),
        old.actions.len()
    );
    let text = d.text();
    assert!(
        text.contains(
            "~ customize.search → customize.purge  (new path: /customize/search → /customize/purge)"
        ),
        "{text}"
    );
    assert!(
        text.contains("! customize.purge: read → mutating; now destructive"),
        "{text}"
    );
}

/// Every YAML example of docs/overlays.md is a valid file that applies to Arcane 2.8.0.
#[test]
fn the_overlay_guide_examples_apply() {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/overlays.md"))
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (overrides, catalog_dir) = (dir.path().join("overrides"), dir.path().join("catalog"));
    std::fs::create_dir(&overrides).unwrap();
    std::fs::create_dir(&catalog_dir).unwrap();
    let mut blocks = 0;
    for (i, block) in guide.split("```yaml\n").skip(1).enumerate() {
        let text = block.split("```").next().unwrap();
        let into = if text.contains("handler:") {
            &catalog_dir
        } else {
            &overrides
        };
        std::fs::write(into.join(format!("example-{i:02}.yaml")), text).unwrap();
        blocks += 1;
    }
    assert!(blocks >= 6, "{blocks} examples");
    let cat = Sources::of_spec(fixtures::spec_v2())
        .with_overrides(overrides)
        .with_catalog_dir(catalog_dir)
        .build()
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        cat.unmatched_overlays.is_empty(),
        "{:?}",
        cat.unmatched_overlays
    );
    assert!(cat.get("image_update.check_refs").is_some());
    assert!(cat.get("volume.prune").is_none());
    assert!(
        cat.get("container.restart")
            .unwrap()
            .usage
            .contains("restart loop")
    );
}

#[test]
fn a_mistyped_domain_key_is_reported_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("d.yaml"),
        "domains:\n  volume: {title: Volumes}\n  contaner: {title: Boxes}\n",
    )
    .unwrap();
    let cat = Sources::of_spec(fixtures::spec_v2())
        .with_overrides(dir.path().to_path_buf())
        .build()
        .unwrap();
    assert_eq!(
        cat.unmatched_overlays.len(),
        1,
        "{:?}",
        cat.unmatched_overlays
    );
    let u = &cat.unmatched_overlays[0];
    assert_eq!(
        (u.section.as_str(), u.key.as_str(), u.line),
        ("domains", "contaner", 3)
    );
    assert_eq!(u.closest.first().map(String::as_str), Some("container"));
    assert!(u.to_string().contains("matches no domain"), "{u}");
}

#[test]
fn an_operator_overlay_replaces_or_turns_off_an_encoding_and_bad_ones_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let sources = crate::server_support::with_operator_overlays(dir.path());
    // Replaced: only the operator's fields, with a prefix.
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  project.create:\n    encodedJson:\n      - param: project\n        prefix: project_\n        schema: {type: object, required: [name], properties: {name: {type: string}, composeContent: {type: string}, newField: {type: integer}}}\n",
    )
    .unwrap();
    let cat = sources.build().unwrap();
    let a = cat.get("project.create").unwrap();
    assert_eq!(a.request.encoded.len(), 1);
    assert!(a.param("project_newField").is_some());
    assert!(a.param("fileChanges").is_none() && a.param("name").is_none());
    assert!(
        a.request.required.contains(&"manifest".to_string()),
        "without its encoding manifest is required again"
    );

    // Turned off: the document's parameters as they are.
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  project.create:\n    encodedJson: []\n",
    )
    .unwrap();
    let cat = sources.build().unwrap();
    let a = cat.get("project.create").unwrap();
    assert!(a.request.encoded.is_empty() && a.param("composeContent").is_none());
    assert!(a.request.required.contains(&"project".to_string()));

    // A parameter the action does not have, and a collision: skipped (the overlay may be
    // written for another Arcane version) and reported with the file and the reason.
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  project.create:\n    encodedJson:\n      - {param: projekt, schema: {type: object, properties: {name: {type: string}}}}\n",
    )
    .unwrap();
    let cat = sources.build().unwrap();
    let problem = cat
        .unmatched_overlays
        .iter()
        .find(|u| u.file.ends_with("mine.yaml"))
        .unwrap();
    assert_eq!((problem.key.as_str(), problem.line), ("project.create", 3));
    let text = problem.to_string();
    assert!(
        text.contains("mine.yaml:3:")
            && text.contains("projekt")
            && text.contains("project.create"),
        "{text}"
    );
    assert!(
        cat.get("project.create")
            .unwrap()
            .request
            .encoded
            .is_empty()
    );
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  project.update_workspace:\n    encodedJson:\n      - {param: manifest, schema: {type: object, properties: {projectId: {type: string}}}}\n",
    )
    .unwrap();
    let cat = sources.build().unwrap();
    assert!(
        cat.unmatched_overlays.iter().any(|u| {
            let t = u.to_string();
            t.contains("mine.yaml") && t.contains("collides") && t.contains("prefix")
        }),
        "{:?}",
        cat.unmatched_overlays
    );
    // The overlay schema refuses an encoding without properties, with file and line.
    std::fs::write(
        dir.path().join("mine.yaml"),
        "actions:\n  project.create:\n    encodedJson:\n      - {param: project, schema: {type: object}}\n",
    )
    .unwrap();
    let err = format!("{:#}", sources.build().unwrap_err());
    assert!(err.contains("mine.yaml:"), "{err}");
}

/// Every action that streams or runs a WebSocket handler, and each deploy, sync, backup,
/// restore, scan and prune Arcane answers only when done, is long running: a client that speaks
/// MCP tasks gets a task for it (`overrides/tasks.yaml`, docs/tasks.md). Plain reads are not.
#[test]
fn the_built_in_long_running_list_covers_every_stream_and_handler() {
    for spec in [fixtures::spec_v2(), fixtures::spec_v1()] {
        let cat = build(&spec);
        for a in &cat.actions {
            // The history's handlers (catalog/history.yaml) read a file: answered at once.
            let websocket = a
                .request
                .handler
                .as_ref()
                .is_some_and(|h| h.kind.starts_with("ws_"));
            if a.output.kind == ResultKind::Stream || websocket {
                assert!(
                    a.request.long_running,
                    "{} streams but is not long running",
                    a.id
                );
            } else if a.output.kind == ResultKind::Handler {
                assert!(!a.request.long_running, "{}", a.id);
            }
        }
    }
    let cat = build(&fixtures::spec_v2());
    for id in [
        "image.pull",
        "image.build",
        "project.up",
        "project.redeploy",
        "project.pull",
        "project.build",
        "container.redeploy",
        "swarm_stack.create",
        "gitops_sync.sync",
        "volume_backup.create",
        "volume_backup.restore",
        "volume_backup.restore_files",
        "vulnerability.scan",
        "system.prune",
        "container.logs",
        "system.stats",
    ] {
        let a = cat
            .resolve(id)
            .unwrap_or_else(|| panic!("{id} is in the catalog"));
        assert!(a.request.long_running, "{id} is long running");
    }
    for id in [
        "container.list",
        "image.get",
        "project.create",
        "container.restart",
    ] {
        assert!(
            !cat.resolve(id).unwrap().request.long_running,
            "{id} is instant"
        );
    }
}

/// image.prune takes `dangling` twice (the query's, and the body's lifted as `body_dangling`):
/// each says which wins, so a model can choose one instead of guessing.
#[test]
fn image_prunes_two_danglings_say_which_wins() {
    let cat = build(&fixtures::spec_v2());
    let a = cat.get("image.prune").unwrap();
    let says = |name: &str| {
        a.request.input_schema["properties"][name]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        says("dangling").contains("body_dangling"),
        "{}",
        says("dangling")
    );
    assert!(
        says("body_dangling").contains("wins over dangling"),
        "{}",
        says("body_dangling")
    );
}
