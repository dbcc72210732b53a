//! The catalog built from Arcane's real OpenAPI documents .

use crate::fixtures;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use arcane_catalog::Layers;
use arcane_catalog::MAX_TOOL_NAME;
use arcane_catalog::SpecDoc;
use arcane_catalog::{BuildInput, Catalog, ResultKind, build_catalog};
use arcane_mcp::load::sources::Sources;
use arcane_mcp::load::spec::SpecSource;
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

fn operations(path: &Path) -> Vec<(String, String, String)> {
    let doc = SpecDoc::from_file(path).unwrap();
    let mut ops = Vec::new();
    for (p, item) in doc.root["paths"].as_object().unwrap() {
        for m in ["get", "head", "post", "put", "patch", "delete", "options"] {
            if let Some(op) = item.get(m) {
                ops.push((
                    m.to_ascii_uppercase(),
                    p.clone(),
                    op["operationId"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    ops
}

#[test]
fn every_operation_is_exactly_one_action_or_excluded() {
    for spec in [fixtures::spec_v2(), fixtures::spec_v1()] {
        let cat = build(&spec);
        let ops = operations(&spec);
        if spec.ends_with("openapi-v2.8.0.json") {
            assert_eq!(ops.len(), 347, "the 2.8.0 document has 347 operations");
        }
        for (method, path, op_id) in &ops {
            let actions = cat
                .actions
                .iter()
                .filter(|a| a.handler.is_none() && &a.method == method && &a.path == path)
                .count();
            let excluded = cat
                .excluded
                .iter()
                .filter(|e| &e.method == method && &e.path == path)
                .count();
            assert_eq!(
                actions + excluded,
                1,
                "{method} {path} ({op_id}) must be one action or one exclusion in {}",
                spec.display()
            );
            if excluded == 1 {
                let e = cat.excluded.iter().find(|e| &e.path == path).unwrap();
                assert!(!e.reason.trim().is_empty());
            }
        }
        let generic = cat.actions.iter().filter(|a| a.handler.is_none()).count();
        assert_eq!(generic + cat.excluded.len(), ops.len());
    }
}

#[test]
fn ids_are_well_formed_unique_and_short_enough() {
    let re = regex::Regex::new(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$").unwrap();
    for spec in [fixtures::spec_v2(), fixtures::spec_v1()] {
        let cat = build(&spec);
        let mut seen = BTreeSet::new();
        for a in &cat.actions {
            assert!(re.is_match(&a.id), "bad ID {}", a.id);
            assert!(seen.insert(a.id.clone()), "duplicate ID {}", a.id);
            assert_eq!(a.id, format!("{}.{}", a.domain, a.name));
            let tool = a.individual_tool_name();
            assert!(tool.len() <= MAX_TOOL_NAME, "{tool} is longer than 64");
            assert!(cat.resolve(&tool).is_some_and(|b| b.id == a.id));
            assert!(
                cat.resolve(&format!("arcane_{}", a.id))
                    .is_some_and(|b| b.id == a.id)
            );
            if let Some(op) = &a.operation_id {
                assert_eq!(cat.resolve(op).map(|b| b.id.as_str()), Some(a.id.as_str()));
            }
        }
    }
}

#[test]
fn the_main_actions_exist_with_their_obvious_meaning() {
    let cat = build(&fixtures::spec_v2());
    let expect = [
        ("container.list", "GET", "/environments/{id}/containers"),
        (
            "container.get",
            "GET",
            "/environments/{id}/containers/{containerId}",
        ),
        (
            "container.restart",
            "POST",
            "/environments/{id}/containers/{containerId}/restart",
        ),
        (
            "container.kill",
            "POST",
            "/environments/{id}/containers/{containerId}/kill",
        ),
        ("image.pull", "POST", "/environments/{id}/images/pull"),
        (
            "project.up",
            "POST",
            "/environments/{id}/projects/{projectId}/up",
        ),
        (
            "project.compose",
            "GET",
            "/environments/{id}/projects/{projectId}/compose",
        ),
        (
            "project.runtime",
            "GET",
            "/environments/{id}/projects/{projectId}/runtime",
        ),
        (
            "project.update",
            "PUT",
            "/environments/{id}/projects/{projectId}",
        ),
        (
            "project.updates",
            "GET",
            "/environments/{id}/projects/{projectId}/updates",
        ),
        (
            "swarm_service.scale",
            "POST",
            "/environments/{id}/swarm/services/{serviceId}/scale",
        ),
        ("environment.get", "GET", "/environments/{id}"),
        ("environment.test", "POST", "/environments/{id}/test"),
    ];
    for (id, method, path) in expect {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!((a.method.as_str(), a.path.as_str()), (method, path), "{id}");
    }
    // Flags, kinds and parameters of a few.
    let kill = cat.get("container.kill").unwrap();
    assert!(kill.mutating && kill.destructive);
    let list = cat.get("container.list").unwrap();
    assert!(!list.mutating && list.list && list.sortable && list.idempotent);
    assert_eq!(list.kind, ResultKind::Json);
    let env = list.param("environmentId").unwrap();
    assert!(!env.required && env.wire_name == "id");
    assert_eq!(cat.get("image.pull").unwrap().kind, ResultKind::Stream);
    assert_eq!(cat.get("project.up").unwrap().kind, ResultKind::Stream);
    assert_eq!(cat.get("image.export").unwrap().kind, ResultKind::Download);
    assert_eq!(cat.get("container.logs").unwrap().kind, ResultKind::Handler);
    let restart = cat.get("container.restart").unwrap();
    assert_eq!(restart.required, vec!["containerId".to_string()]);
    assert!(restart.mutating && !restart.destructive);
    assert!(!cat.get("environment.test").unwrap().destructive);
    // Declared handlers.
    for id in [
        "container.logs",
        "container.stats",
        "container.exec",
        "project.logs",
        "swarm_service.logs",
        "system.stats",
    ] {
        let a = cat.get(id).unwrap_or_else(|| panic!("{id} missing"));
        assert!(a.handler.is_some());
    }
    assert!(cat.get("container.exec").unwrap().mutating);
    // Overlays made the main lists read well.
    for id in [
        "container.list",
        "image.list",
        "project.list",
        "volume.list",
        "network.list",
        "environment.list",
    ] {
        let a = cat.get(id).unwrap();
        assert!(a.columns.is_some(), "{id} has columns");
        assert!(a.empty_hint.is_some(), "{id} has an empty-list hint");
        assert!(a.full_item.is_some(), "{id} names its full-item action");
    }
    assert_eq!(
        cat.get("container.list").unwrap().default_sort.as_deref(),
        Some("name")
    );
    // Every sortable list pages by one of Arcane's real keys (docs/arcane-wire.md): never `id`,
    // which no Docker list binds and no database list may sort by.
    for a in cat.actions.iter().filter(|a| a.list && a.sortable) {
        let key = a.default_sort.as_deref();
        assert!(key.is_some_and(|k| k != "id"), "{} sorts by {key:?}", a.id);
    }
    for (id, key) in [
        ("image.list", "repo"),
        ("port.list", "hostPort"),
        ("swarm_node.list", "hostname"),
        ("swarm_task.list", "service"),
        ("vulnerability.image_list", "vulnerabilityId"),
        ("user.list", "username"),
    ] {
        assert_eq!(cat.get(id).unwrap().default_sort.as_deref(), Some(key));
    }
    // Names and references resolve to IDs through lists, environment first.
    let params: Vec<&str> = cat.resolvers.iter().map(|r| r.param.as_str()).collect();
    assert_eq!(params, ["environmentId", "projectId", "imageId"]);
    let pull = cat.get("image.pull").unwrap();
    assert_eq!(pull.follow_ups[0].action, "project.redeploy");
    assert_eq!(
        cat.get("project.up").unwrap().follow_ups[0].action,
        "project.runtime"
    );
    let compose = cat.get("project.compose").unwrap();
    assert!(
        compose
            .widenings
            .iter()
            .any(|w| w.fields.contains(&"mem_limit".to_string()))
    );
}

#[test]
fn the_same_operation_gets_the_same_id_in_both_versions() {
    let new = build(&fixtures::spec_v2());
    let old = build(&fixtures::spec_v1());
    let key = |c: &Catalog| -> HashMap<(String, String), String> {
        c.actions
            .iter()
            .filter(|a| a.handler.is_none())
            .map(|a| ((a.method.clone(), a.path.clone()), a.id.clone()))
            .collect()
    };
    let (n, o) = (key(&new), key(&old));
    let mut shared = 0;
    for (k, id) in &o {
        if let Some(nid) = n.get(k) {
            shared += 1;
            assert_eq!(id, nid, "{} {} differs between 1.11.2 and 2.8.0", k.0, k.1);
        }
    }
    assert!(shared > 100, "only {shared} operations in common");
}

#[test]
fn input_schemas_are_self_contained_2020_12_object_schemas() {
    for spec in [fixtures::spec_v2(), fixtures::spec_v1()] {
        let cat = build(&spec);
        for a in &cat.actions {
            let s = &a.input_schema;
            assert_eq!(s["type"], "object", "{}", a.id);
            assert!(
                jsonschema::draft202012::meta::is_valid(s),
                "{}: {:?}",
                a.id,
                jsonschema::draft202012::meta::validate(s).err()
            );
            assert!(!s.to_string().contains("\"$ref\""), "{} has a $ref", a.id);
            jsonschema::validator_for(s).unwrap_or_else(|e| panic!("{}: {e}", a.id));
            for r in &a.required {
                assert!(
                    s["properties"].get(r).is_some(),
                    "{} requires unknown {r}",
                    a.id
                );
            }
        }
    }
}

#[test]
fn builtin_overlays_all_match_the_current_spec() {
    let cat = build(&fixtures::spec_v2());
    assert!(
        cat.unmatched_overlays.is_empty(),
        "overlay entries matching nothing (typos?): {:?}",
        cat.unmatched_overlays
    );
}

#[test]
fn derivation_works_on_a_spec_it_has_never_seen() {
    let spec = json!({
        "openapi": "3.1.0",
        "info": {"title": "x", "version": "9.9.9"},
        "servers": [{"url": "http://elsewhere.invalid/api"}],
        "paths": {
            "/environments/{id}/widgets": {
                "get": {"operationId": "lw", "summary": "List widgets", "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "sort", "in": "query", "schema": {"type": "string"}}],
                    "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/WidgetList"}}}}}},
                "post": {"operationId": "cw", "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}}},
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}}
            },
            "/environments/{id}/widgets/{widgetId}/polish": {
                "post": {"operationId": "pw", "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "widgetId", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}}
            },
            "/environments/{id}/widgets/{widgetId}/purge": {
                "post": {"operationId": "xw", "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "widgetId", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"204": {"description": "gone"}}}
            },
            "/gizmo-groups/{groupId}/gizmos/{gizmoId}": {
                "delete": {"operationId": "dg", "parameters": [
                    {"name": "groupId", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "gizmoId", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}}
            }
        },
        "components": {"schemas": {
            "Widget": {"type": "object", "required": ["name"], "properties": {
                "$schema": {"type": "string", "readOnly": true},
                "name": {"type": "string"}, "id": {"type": "string"},
                "parent": {"$ref": "#/components/schemas/Widget"}}},
            "WidgetList": {"type": "object", "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Widget"}}}}
        }}
    });
    let doc = SpecDoc::parse(&spec.to_string(), "unseen.json").unwrap();
    let cat = build_catalog(BuildInput {
        spec: &doc,
        layers: &Layers::default(),
    })
    .unwrap();
    let ids: Vec<&str> = cat.actions.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "gizmo_group_gizmo.delete",
            "widget.create",
            "widget.list",
            "widget.polish",
            "widget.purge"
        ]
    );
    let create = cat.get("widget.create").unwrap();
    // Body properties join the top level; read-only `$schema` is dropped; the cycle is cut.
    let props = create.input_schema["properties"].as_object().unwrap();
    assert!(
        props.contains_key("name")
            && props.contains_key("parent")
            && !props.contains_key("$schema")
    );
    assert_eq!(create.required, vec!["name".to_string()]);
    assert!(!create.input_schema.to_string().contains("$ref"));
    assert!(cat.get("widget.purge").unwrap().destructive);
    assert_eq!(cat.get("widget.purge").unwrap().kind, ResultKind::Empty);
    assert!(!cat.get("widget.polish").unwrap().destructive);
    assert!(cat.get("widget.list").unwrap().list);
    assert!(cat.get("gizmo_group_gizmo.delete").unwrap().destructive);
}

#[test]
fn body_properties_colliding_with_parameters_are_renamed() {
    let spec = json!({
        "openapi": "3.1.0", "info": {"version": "1"},
        "paths": {"/things/{name}": {"put": {
            "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}}}},
            "responses": {"200": {"content": {"application/json": {"schema": {"type": "object"}}}}}}}}
    });
    let doc = SpecDoc::parse(&spec.to_string(), "c.json").unwrap();
    let cat = build_catalog(BuildInput {
        spec: &doc,
        layers: &Layers::default(),
    })
    .unwrap();
    let a = cat.get("thing.update").unwrap();
    let p = a.param("body_name").unwrap();
    assert_eq!(p.wire_name, "name");
    assert!(a.param("name").is_some() && a.param("size").is_some());
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
    assert!(cat.get("container.list").unwrap().empty_hint.is_some());
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
        built_in.get("project.get").unwrap().text_omits,
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
        cat.get("container.get").unwrap().text_omits,
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
    let sources = Sources {
        spec: SpecSource {
            explicit: Some(fixtures::spec_v2()),
            ..Default::default()
        },
        overrides_dir: None,
        catalog_dir: Some(dir.path().to_path_buf()),
    };
    let cat = sources.build().unwrap();
    let top = cat.get("container.top").unwrap();
    assert_eq!(top.kind, ResultKind::Handler);
    assert!(top.param("environmentId").is_some());
    assert_eq!(top.required, vec!["containerId".to_string()]);
    // It runs a command, and its file did not say `mutating`: it changes state all the same
    // (read-only withdraws it, safe mode previews it, the audit log records it) and the person
    // confirms every call — a declaration cannot make a command a read.
    assert!(top.mutating, "a ws_exec declaration is mutating");
    assert!(top.confirm_always, "a ws_exec declaration is confirmed");
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

#[test]
fn every_action_has_an_executor() {
    // The executor runs json, stream, download and empty results over HTTP and these handler
    // kinds over WebSocket (crates/engine/src/handlers.rs); nothing in the catalog may fall outside.
    let known_handlers = ["ws_logs", "ws_stats", "ws_exec", "ws_system_stats"];
    let cat = build(&fixtures::spec_v2());
    for a in &cat.actions {
        match a.kind {
            ResultKind::Handler => {
                let kind = &a
                    .handler
                    .as_ref()
                    .expect("a handler action declares its handler")
                    .kind;
                assert!(
                    known_handlers.contains(&kind.as_str()),
                    "{}: unknown handler {kind}",
                    a.id
                );
            }
            ResultKind::Json | ResultKind::Stream | ResultKind::Download | ResultKind::Empty => {
                assert!(a.handler.is_none(), "{}", a.id);
            }
        }
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
        .map(|a| (a.method.clone(), erase(&a.path)))
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

    let sources = |spec: &Path| Sources {
        spec: SpecSource {
            explicit: Some(spec.to_path_buf()),
            ..Default::default()
        },
        overrides_dir: Some(overrides.clone()),
        catalog_dir: None,
    };
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
    // The operator's entry keyed by the old operationId, and the built-in search keywords of
    // the removed `version.get`.
    let stopped: Vec<(&str, &str, usize)> = d
        .overlays_stop_matching
        .iter()
        .map(|u| (u.file.as_str(), u.key.as_str(), u.line))
        .collect();
    assert_eq!(stopped.len(), 2, "{stopped:?}");
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
    let cat = Sources {
        spec: SpecSource {
            explicit: Some(fixtures::spec_v2()),
            ..Default::default()
        },
        overrides_dir: Some(overrides),
        catalog_dir: Some(catalog_dir),
    }
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
    let cat = Sources {
        spec: SpecSource {
            explicit: Some(fixtures::spec_v2()),
            ..Default::default()
        },
        overrides_dir: Some(dir.path().to_path_buf()),
        catalog_dir: None,
    }
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

/// Every parameter Arcane's document describes as JSON encoded text, found by its wording.
fn json_text_params(spec: &Path) -> Vec<(String, String, String)> {
    let doc = SpecDoc::from_file(spec).unwrap();
    let resolver = arcane_catalog::RefResolver::new(&doc.root);
    let mut found = Vec::new();
    for (p, item) in doc.root["paths"].as_object().unwrap() {
        for m in ["get", "post", "put", "patch", "delete"] {
            let Some(op) = item.get(m) else { continue };
            let Some(content) = op
                .pointer("/requestBody/content")
                .and_then(Value::as_object)
            else {
                continue;
            };
            for media in content.values() {
                let schema = resolver.inline(&media["schema"]);
                for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                    let desc = prop["description"].as_str().unwrap_or("").to_lowercase();
                    if prop["type"] == "string"
                        && (desc.contains("json encoded") || desc.contains("json string"))
                    {
                        found.push((m.to_ascii_uppercase(), p.clone(), name.clone()));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_json_text_parameter_of_2_8_0_is_callable_with_plain_fields() {
    let spec = fixtures::spec_v2();
    let cat = build(&spec);
    let found = json_text_params(&spec);
    assert_eq!(
        found.len(),
        4,
        "project create (project, manifest), both workspace updates (manifest): {found:?}"
    );
    for (method, path, name) in &found {
        let a = cat
            .actions
            .iter()
            .find(|a| &a.method == method && &a.path == path)
            .unwrap();
        let enc = a
            .encoded
            .iter()
            .find(|e| &e.param == name)
            .unwrap_or_else(|| panic!("{} {name}: JSON text without encodedJson", a.id));
        assert!(!enc.fields.is_empty());
        // The raw form stays accepted but is no longer required.
        assert!(a.param(name).is_some() && !a.required.contains(name));
        for (client, _) in &enc.fields {
            let p = a.param(client).unwrap();
            assert_eq!(
                p.location,
                arcane_catalog::ParamLocation::Encoded,
                "{client}"
            );
            assert!(a.input_schema["properties"][client].is_object(), "{client}");
        }
    }

    let create = cat.get("project.create").unwrap();
    for field in [
        "name",
        "composeContent",
        "envContent",
        "tags",
        "fileChanges",
    ] {
        assert!(create.param(field).is_some(), "project.create {field}");
    }
    assert_eq!(create.input_schema["properties"]["name"]["type"], "string");
    assert!(
        create
            .param("name")
            .unwrap()
            .description
            .contains("required unless project is given"),
        "{}",
        create.param("name").unwrap().description
    );
    let manifest = create
        .encoded
        .iter()
        .find(|e| e.param == "manifest")
        .unwrap();
    assert_eq!(manifest.default, Some(json!({"fileChanges": []})));
    assert!(create.required.is_empty(), "{:?}", create.required);
    // The fields come before the raw parameter in the schema, so clients read them first.
    let keys: Vec<&String> = create.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(at("name") < at("project") && at("fileChanges") < at("manifest"));
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
    assert_eq!(a.encoded.len(), 1);
    assert!(a.param("project_newField").is_some());
    assert!(a.param("fileChanges").is_none() && a.param("name").is_none());
    assert!(
        a.required.contains(&"manifest".to_string()),
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
    assert!(a.encoded.is_empty() && a.param("composeContent").is_none());
    assert!(a.required.contains(&"project".to_string()));

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
    assert!(cat.get("project.create").unwrap().encoded.is_empty());
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

/// Canonical IDs named in a text (`domain.action` of a known domain).
fn mentioned_ids<'a>(cat: &Catalog, text: &'a str) -> Vec<&'a str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            w.split_once('.')
                .is_some_and(|(d, n)| !n.is_empty() && cat.domain(d).is_some())
        })
        .collect()
}

#[test]
fn usage_notes_with_an_example_cover_three_quarters_of_the_mutating_actions() {
    let cat = build(&fixtures::spec_v2());
    let mutating: Vec<_> = cat.actions.iter().filter(|a| a.mutating).collect();
    let with_example: Vec<_> = mutating
        .iter()
        .filter(|a| !a.usage.trim().is_empty() && a.example.is_some())
        .collect();
    let share = with_example.len() as f64 / mutating.len() as f64;
    println!(
        "usage notes with an example call: {} of {} mutating actions ({:.1}%)",
        with_example.len(),
        mutating.len(),
        share * 100.0
    );
    assert!(share >= 0.75, "{:.1}%", share * 100.0);

    // Every example is a valid call of its action, and every action a note names exists, so
    // neither can rot when parameters or IDs change.
    for a in &cat.actions {
        if let Some(example) = &a.example {
            let validator = jsonschema::validator_for(&a.input_schema).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(example)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{} example: {errors:?}", a.id);
            assert!(example.is_object(), "{}", a.id);
        }
        for id in mentioned_ids(&cat, &a.usage) {
            assert!(
                cat.get(id).is_some(),
                "{}'s usage note names {id}, which is no action",
                a.id
            );
        }
    }
}

#[test]
fn secrets_an_action_exists_to_reveal_name_fields_of_its_answer() {
    let cat = build(&fixtures::spec_v2());
    let revealing: Vec<_> = cat
        .actions
        .iter()
        .filter_map(|a| a.reveals_secret.as_deref().map(|what| (a, what)))
        .collect();
    for id in [
        "api_key.create",
        "my_api_key.create",
        "swarm.join_tokens",
        "swarm.unlock_key",
        "auth.regenerate_recovery_codes",
        "environment.pair_agent",
    ] {
        assert!(revealing.iter().any(|(a, _)| a.id == id), "{id}");
    }
    // Each note names, in parentheses, the fields of the answer that hold the secret.
    for (a, what) in revealing {
        let fields = what
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(inside, _)| inside)
            .unwrap_or_else(|| panic!("{}: {what:?} names no field in parentheses", a.id));
        // A download's secret is the file itself: it has no fields to name.
        if a.kind == arcane_catalog::ResultKind::Download {
            assert_eq!(fields, "the download", "{}", a.id);
            continue;
        }
        let schema = a.response_schema.as_ref().unwrap();
        let data = schema
            .pointer("/properties/data/properties")
            .or_else(|| schema.get("properties"))
            .and_then(Value::as_object)
            .unwrap();
        for field in fields.split(',').map(str::trim) {
            assert!(
                data.contains_key(field),
                "{}: {field} is not a field of its answer",
                a.id
            );
        }
    }
}

/// A "test" that acts on the world is not a read: `notification.test` sends a real message
/// through its provider, so read-only mode and safe mode hold it back.
#[test]
fn a_test_notification_is_a_change_not_a_read() {
    let cat = build(&fixtures::spec_v2());
    let a = cat.get("notification.test").expect("notification.test");
    assert!(a.mutating, "notification.test is mutating");
    assert!(!arcane_catalog::Policy::new(true, false, &[]).serves(a));
}
