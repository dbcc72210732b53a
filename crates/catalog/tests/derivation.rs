//! The catalog derived from Arcane's real OpenAPI documents (2.8.0 and 1.11.2, through
//! `arcane-test-support`) and from documents it has never seen: one action or exclusion per
//! operation, well-formed IDs, self-contained schemas, the built-in overlays' reach, and the
//! flags of the actions that matter. What needs the server's assembly of sources (operator
//! overlays and declarations, `check`, the upgrade preview) is in the server's `tests/catalog.rs`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use arcane_catalog::Layers;
use arcane_catalog::MAX_TOOL_NAME;
use arcane_catalog::SpecDoc;
use arcane_catalog::{BuildInput, Catalog, ResultKind, build_catalog};
use arcane_test_support as fixtures;
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
                .filter(|a| {
                    a.request.handler.is_none()
                        && &a.request.method == method
                        && &a.request.path == path
                })
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
        let generic = cat
            .actions
            .iter()
            .filter(|a| a.request.handler.is_none())
            .count();
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
            if let Some(op) = &a.request.operation_id {
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
        assert_eq!(
            (a.request.method.as_str(), a.request.path.as_str()),
            (method, path),
            "{id}"
        );
    }
    // Flags, kinds and parameters of a few.
    let kill = cat.get("container.kill").unwrap();
    assert!(kill.safety.mutating && kill.safety.destructive);
    let list = cat.get("container.list").unwrap();
    assert!(
        !list.safety.mutating
            && list.output.list
            && list.request.sortable
            && list.safety.idempotent
    );
    assert_eq!(list.output.kind, ResultKind::Json);
    let env = list.param("environmentId").unwrap();
    assert!(!env.required && env.wire_name == "id");
    assert_eq!(
        cat.get("image.pull").unwrap().output.kind,
        ResultKind::Stream
    );
    assert_eq!(
        cat.get("project.up").unwrap().output.kind,
        ResultKind::Stream
    );
    assert_eq!(
        cat.get("image.export").unwrap().output.kind,
        ResultKind::Download
    );
    assert_eq!(
        cat.get("container.logs").unwrap().output.kind,
        ResultKind::Handler
    );
    let restart = cat.get("container.restart").unwrap();
    assert_eq!(restart.request.required, vec!["containerId".to_string()]);
    assert!(restart.safety.mutating && !restart.safety.destructive);
    assert!(!cat.get("environment.test").unwrap().safety.destructive);
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
        assert!(a.request.handler.is_some());
    }
    assert!(cat.get("container.exec").unwrap().safety.mutating);
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
        assert!(a.output.columns.is_some(), "{id} has columns");
        assert!(a.output.empty_hint.is_some(), "{id} has an empty-list hint");
        assert!(
            a.output.full_item.is_some(),
            "{id} names its full-item action"
        );
    }
    assert_eq!(
        cat.get("container.list")
            .unwrap()
            .request
            .default_sort
            .as_deref(),
        Some("name")
    );
    // Every sortable list pages by one of Arcane's real keys (docs/arcane-wire.md): never `id`,
    // which no Docker list binds and no database list may sort by.
    for a in cat
        .actions
        .iter()
        .filter(|a| a.output.list && a.request.sortable)
    {
        let key = a.request.default_sort.as_deref();
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
        assert_eq!(
            cat.get(id).unwrap().request.default_sort.as_deref(),
            Some(key)
        );
    }
    // Names and references resolve to IDs through lists, environment first.
    let params: Vec<&str> = cat
        .resolvers
        .iter()
        .filter(|r| !r.names_only)
        .map(|r| r.param.as_str())
        .collect();
    assert_eq!(params, ["environmentId", "projectId", "imageId"]);
    let pull = cat.get("image.pull").unwrap();
    assert_eq!(pull.output.follow_ups[0].action, "project.redeploy");
    assert_eq!(
        cat.get("project.up").unwrap().output.follow_ups[0].action,
        "project.runtime"
    );
    let compose = cat.get("project.compose").unwrap();
    assert!(
        compose
            .output
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
            .filter(|a| a.request.handler.is_none())
            .map(|a| {
                (
                    (a.request.method.clone(), a.request.path.clone()),
                    a.id.clone(),
                )
            })
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
            let s = &a.request.input_schema;
            assert_eq!(s["type"], "object", "{}", a.id);
            assert!(
                jsonschema::draft202012::meta::is_valid(s),
                "{}: {:?}",
                a.id,
                jsonschema::draft202012::meta::validate(s).err()
            );
            assert!(!s.to_string().contains("\"$ref\""), "{} has a $ref", a.id);
            jsonschema::validator_for(s).unwrap_or_else(|e| panic!("{}: {e}", a.id));
            for r in &a.request.required {
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
    let props = create.request.input_schema["properties"]
        .as_object()
        .unwrap();
    assert!(
        props.contains_key("name")
            && props.contains_key("parent")
            && !props.contains_key("$schema")
    );
    assert_eq!(create.request.required, vec!["name".to_string()]);
    assert!(!create.request.input_schema.to_string().contains("$ref"));
    assert!(cat.get("widget.purge").unwrap().safety.destructive);
    assert_eq!(
        cat.get("widget.purge").unwrap().output.kind,
        ResultKind::Empty
    );
    assert!(!cat.get("widget.polish").unwrap().safety.destructive);
    assert!(cat.get("widget.list").unwrap().output.list);
    assert!(
        cat.get("gizmo_group_gizmo.delete")
            .unwrap()
            .safety
            .destructive
    );
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
fn every_action_has_an_executor() {
    // The executor runs json, stream, download and empty results over HTTP and these handler
    // kinds over WebSocket (crates/engine/src/handlers.rs), and the server answers its history's
    // (src/mcp/call.rs); nothing in the catalog may fall outside.
    let known_handlers = [
        "ws_logs",
        "ws_stats",
        "ws_exec",
        "ws_system_stats",
        "history_list",
        "history_undo",
    ];
    let cat = build(&fixtures::spec_v2());
    for a in &cat.actions {
        match a.output.kind {
            ResultKind::Handler => {
                let kind = &a
                    .request
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
                assert!(a.request.handler.is_none(), "{}", a.id);
            }
        }
    }
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
            .find(|a| &a.request.method == method && &a.request.path == path)
            .unwrap();
        let enc = a
            .request
            .encoded
            .iter()
            .find(|e| &e.param == name)
            .unwrap_or_else(|| panic!("{} {name}: JSON text without encodedJson", a.id));
        assert!(!enc.fields.is_empty());
        // The raw form stays accepted but is no longer required.
        assert!(a.param(name).is_some() && !a.request.required.contains(name));
        for (client, _) in &enc.fields {
            let p = a.param(client).unwrap();
            assert_eq!(
                p.location,
                arcane_catalog::ParamLocation::Encoded,
                "{client}"
            );
            assert!(
                a.request.input_schema["properties"][client].is_object(),
                "{client}"
            );
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
    assert_eq!(
        create.request.input_schema["properties"]["name"]["type"],
        "string"
    );
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
        .request
        .encoded
        .iter()
        .find(|e| e.param == "manifest")
        .unwrap();
    assert_eq!(manifest.default, Some(json!({"fileChanges": []})));
    assert!(
        create.request.required.is_empty(),
        "{:?}",
        create.request.required
    );
    // The fields come before the raw parameter in the schema, so clients read them first.
    let keys: Vec<&String> = create.request.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(at("name") < at("project") && at("fileChanges") < at("manifest"));
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
    let mutating: Vec<_> = cat.actions.iter().filter(|a| a.safety.mutating).collect();
    let with_example: Vec<_> = mutating
        .iter()
        .filter(|a| !a.usage.trim().is_empty() && a.request.example.is_some())
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
        if let Some(example) = &a.request.example {
            let validator = jsonschema::validator_for(&a.request.input_schema).unwrap();
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
        .filter_map(|a| a.safety.reveals_secret.as_deref().map(|what| (a, what)))
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
        if a.output.kind == arcane_catalog::ResultKind::Download {
            assert_eq!(fields, "the download", "{}", a.id);
            continue;
        }
        let schema = a.output.response_schema.as_ref().unwrap();
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
    assert!(a.safety.mutating, "notification.test is mutating");
    assert!(!arcane_catalog::Policy::new(true, false, &[]).serves(a));
}

/// A login creates a session and hands out its tokens: a change, held back by read-only and
/// safe mode, and recorded by the audit log.
#[test]
fn a_login_is_a_change_not_a_read() {
    let cat = build(&fixtures::spec_v2());
    let a = cat.get("auth.login").expect("auth.login");
    assert!(a.safety.mutating, "auth.login is mutating");
    assert!(a.safety.reveals_secret.is_some());
}

/// `never-destructive` serves the `confirm: always` actions and asks the person about them
/// whenever the client can ask; `param` never asks; `elicit` always does.
#[test]
fn the_strictest_mode_asks_about_commands_and_rewrites() {
    use arcane_catalog::{Confirmation, Policy};
    let cat = build(&fixtures::spec_v2());
    let exec = cat.get("container.exec").expect("container.exec");
    let restart = cat.get("container.restart").expect("container.restart");
    assert!(exec.safety.confirm_always && !restart.safety.confirm_always);
    let never = Policy::new(false, false, &[]).with_confirm(Confirmation::NeverDestructive);
    assert!(never.serves(exec));
    assert!(never.asks_for(exec), "a command is asked about");
    assert!(
        !never.takes_confirm_param_for(exec, true),
        "confirm: true does not skip it"
    );
    assert!(
        never.takes_confirm_param_for(exec, false),
        "a client that cannot ask keeps the rule"
    );
    assert!(!never.asks_for(restart));
    let param = Policy::new(false, false, &[]).with_confirm(Confirmation::Param);
    assert!(!param.asks_for(exec));
    assert!(param.takes_confirm_param_for(exec, true));
    let elicit = Policy::new(false, false, &[]).with_confirm(Confirmation::Ask);
    assert!(elicit.asks_for(exec) && !elicit.takes_confirm_param_for(exec, true));
}

/// An exclusion that names nothing is reported, so the snapshot is refused rather than the
/// action it meant served.
#[test]
fn an_exclusion_that_names_nothing_is_reported() {
    let cat = build(&fixtures::spec_v2());
    let entries = ["Container.Delete".to_string(), "volume".to_string()];
    let p = arcane_catalog::Policy::new(false, false, &entries);
    assert_eq!(p.unknown_exclusions(&cat), vec!["Container.Delete"]);
    let fine = arcane_catalog::Policy::new(false, false, &["container.delete".to_string()]);
    assert!(fine.unknown_exclusions(&cat).is_empty());
}

/// A caller's narrowing whose preset or allow-list entries are blank serves nothing: a blank
/// must never read as "no narrowing" (an OAuth users-file typo would serve everything).
#[test]
fn a_blank_narrowing_serves_nothing() {
    use arcane_catalog::{Narrowing, Policy};
    let cat = build(&fixtures::spec_v2());
    let list = cat.get("container.list").expect("container.list");
    let server = Policy::new(false, false, &[]);
    for narrowing in [
        Narrowing {
            preset: Some(" ".into()),
            ..Narrowing::default()
        },
        Narrowing {
            tools: vec![" ".into()],
            ..Narrowing::default()
        },
    ] {
        assert!(narrowing.narrows(), "{narrowing:?}");
        let view = server.narrowed(&narrowing, &cat);
        assert!(
            cat.actions.iter().all(|a| !view.serves(a)),
            "{narrowing:?} serves something"
        );
    }
    let named = Narrowing {
        tools: vec![" container.list ".into()],
        ..Narrowing::default()
    };
    assert!(
        server.narrowed(&named, &cat).serves(list),
        "entries are trimmed"
    );
}
