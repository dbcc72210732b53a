//! Output schemas: generation, relaxation, unwrapping and fitting, against the real
//! Arcane 2.8.0 document and bodies synthesized by the simulator.

use crate::fixtures;
use crate::report;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arcane_catalog::ClientProfile;
use arcane_catalog::Layers;
use arcane_catalog::SpecDoc;
use arcane_catalog::{Action, BuildInput, Catalog, ResultKind, build_catalog};
use arcane_catalog::{Adjustment, OutputFitter};
use arcane_catalog::{FlatOutput, Side, output_schema, unmappable, unwrap_envelope};
use arcane_mcp::present::output_schema::{NOTE_MAX_PARTS, note};
use report::{ValidationReport, is_flat, report_line};
use serde_json::{Map, Value, json};

fn catalog() -> Catalog {
    let doc = SpecDoc::from_file(&fixtures::spec_v2()).unwrap();
    let layers = Layers::builtin().unwrap();
    build_catalog(BuildInput {
        spec: &doc,
        layers: &layers,
    })
    .unwrap()
}

fn json_actions(c: &Catalog) -> Vec<&Action> {
    c.actions
        .iter()
        .filter(|a| a.output.kind == ResultKind::Json && a.output.response_schema.is_some())
        .collect()
}

/// The catalog with every widening removed (what the schemas would be without the overlay).
fn without_widenings(mut c: Catalog) -> Catalog {
    for a in &mut c.actions {
        a.output.widenings.clear();
    }
    c
}

/// Every schema node of a generated schema, with its JSON Pointer.
fn walk<'a>(schema: &'a Value, ptr: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((ptr.clone(), schema));
    let Some(obj) = schema.as_object() else {
        return;
    };
    for k in ["additionalProperties", "items"] {
        if let Some(s) = obj.get(k) {
            walk(s, format!("{ptr}/{k}"), out);
        }
    }
    for k in ["properties", "patternProperties"] {
        if let Some(Value::Object(m)) = obj.get(k) {
            for (name, s) in m {
                walk(s, format!("{ptr}/{k}/{name}"), out);
            }
        }
    }
    for k in ["anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(a)) = obj.get(k) {
            for (i, s) in a.iter().enumerate() {
                walk(s, format!("{ptr}/{k}/{i}"), out);
            }
        }
    }
}

fn types_of(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

/// Synthesizes a value with *every* declared property (the simulator fills only required
/// ones), one item per array, one entry per map, the first listed non-null type.
fn full_value(schema: &Value, depth: usize) -> Value {
    if depth > 12 {
        return Value::Null;
    }
    if let Some(Value::Array(e)) = schema.get("enum")
        && let Some(first) = e.first()
    {
        return first.clone();
    }
    let t = types_of(schema)
        .into_iter()
        .find(|t| *t != "null")
        .unwrap_or(if schema.get("properties").is_some() {
            "object"
        } else if schema.get("items").is_some() {
            "array"
        } else {
            "null"
        });
    match t {
        "object" => {
            let mut m = Map::new();
            if let Some(Value::Object(p)) = schema.get("properties") {
                for (k, s) in p {
                    if k == "success" && depth == 0 {
                        m.insert(k.clone(), json!(true));
                    } else {
                        m.insert(k.clone(), full_value(s, depth + 1));
                    }
                }
            }
            if let Some(ap @ Value::Object(_)) = schema.get("additionalProperties") {
                m.insert("some-key".into(), full_value(ap, depth + 1));
            }
            Value::Object(m)
        }
        "array" => json!([full_value(
            schema.get("items").unwrap_or(&json!({})),
            depth + 1
        )]),
        "string" => json!("text"),
        "integer" => json!(42),
        "number" => json!(1.5),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

/// Adds an unknown field to every object (except maps, whose every entry must fit the map's
/// value schema) and turns every leaf into null.
fn hostile(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out: Map<String, Value> =
                m.iter().map(|(k, v)| (k.clone(), hostile(v))).collect();
            if !m.contains_key("some-key") {
                out.insert("zzUnknownField".into(), json!({"nested": [1, "two", null]}));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(hostile).collect()),
        _ => Value::Null,
    }
}

#[test]
fn every_json_action_has_a_valid_relaxed_object_schema() {
    let c = catalog();
    let mut with_schema = 0;
    for a in &c.actions {
        let s = output_schema(a);
        let expected = a.output.kind == ResultKind::Json && a.output.response_schema.is_some();
        assert_eq!(s.is_some(), expected, "{}: kind {:?}", a.id, a.output.kind);
        let Some(s) = s else { continue };
        with_schema += 1;
        assert!(
            jsonschema::draft202012::meta::is_valid(&s),
            "{}: not a 2020-12 schema",
            a.id
        );
        jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("{}: does not compile: {e}", a.id));
        assert_eq!(
            s["type"],
            json!("object"),
            "{}: root must be an object",
            a.id
        );
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("\"$ref\""), "{}: $ref left", a.id);

        let mut nodes = Vec::new();
        walk(&s, String::new(), &mut nodes);
        let allowed: BTreeSet<&str> = [
            "type",
            "properties",
            "additionalProperties",
            "patternProperties",
            "items",
            "prefixItems",
            "anyOf",
            "allOf",
            "title",
            "description",
        ]
        .into();
        for (ptr, node) in nodes {
            let obj = node
                .as_object()
                .unwrap_or_else(|| panic!("{}{ptr}: not an object", a.id));
            for k in obj.keys() {
                assert!(
                    allowed.contains(k.as_str()),
                    "{}{ptr}: keyword {k} kept",
                    a.id
                );
            }
            if let Some(ap) = obj.get("additionalProperties") {
                assert!(ap.is_object(), "{}{ptr}: additionalProperties {ap}", a.id);
            }
            if let Some(p) = obj.get("properties") {
                assert!(
                    p.get("$schema").is_none(),
                    "{}{ptr}: $schema declared",
                    a.id
                );
            }
            if !ptr.is_empty() && obj.contains_key("type") {
                assert!(
                    types_of(node).contains(&"null"),
                    "{}{ptr}: does not accept null",
                    a.id
                );
            }
            if !ptr.is_empty() && obj.contains_key("anyOf") {
                let nullable = obj["anyOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| types_of(b).contains(&"null"));
                assert!(
                    nullable || obj.contains_key("type"),
                    "{}{ptr}: anyOf rejects null",
                    a.id
                );
            }
        }
    }
    // 328 JSON actions in the 2.8.0 catalog (`arcane-mcp catalog`); all have a response schema.
    assert_eq!(with_schema, json_actions(&c).len());
    assert!(with_schema >= 300, "{with_schema}");
}

#[test]
fn simulator_and_full_bodies_fit_with_zero_adjustments() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let sim_spec = arcane_sim::spec::Spec::load(&fixtures::spec_v2()).unwrap();
    let mut checked = 0;
    for a in json_actions(&c) {
        let response = a.output.response_schema.as_ref().unwrap();
        // The simulator's generic responder: required fields, realistic values.
        let body = arcane_sim::synth::synth(&sim_spec, response, "", &a.id);
        let mut value = unwrap_envelope(body.clone());
        assert!(value.is_object());
        assert_eq!(
            fitter.fit(&a.id, &mut value),
            vec![],
            "{}: simulator body {body}",
            a.id
        );

        // Every declared field.
        let full = unwrap_envelope(full_value(response, 0));
        assert_eq!(
            fitter.check(&a.id, &full),
            vec![],
            "{}: full body {full}",
            a.id
        );

        // Nulls everywhere and unknown fields everywhere.
        let nasty = hostile(&full);
        assert_eq!(
            fitter.check(&a.id, &nasty),
            vec![],
            "{}: nulls/unknown fields {nasty}",
            a.id
        );

        // Every top-level field null.
        let nulls: Map<String, Value> = full
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (k.clone(), Value::Null))
            .collect();
        assert_eq!(
            fitter.check(&a.id, &Value::Object(nulls)),
            vec![],
            "{}",
            a.id
        );
        checked += 1;
    }
    assert_eq!(checked, fitter.len());
    assert!(fitter.compile_all().is_empty());
}

#[test]
fn lifted_data_fields_never_collide_with_envelope_members() {
    // unwrap_envelope lets a data field win over an envelope member of the same name (and the
    // schema does the same); Arcane 2.8.0 never has such a pair, so nothing is dropped.
    let c = catalog();
    for a in json_actions(&c) {
        let r = a.output.response_schema.as_ref().unwrap();
        let Some(props) = r.get("properties").and_then(Value::as_object) else {
            continue;
        };
        let Some(data) = props.get("data") else {
            continue;
        };
        let members: BTreeSet<&str> = props
            .keys()
            .map(String::as_str)
            .filter(|k| !["data", "success", "$schema"].contains(k))
            .collect();
        let mut lifted: BTreeSet<&str> = BTreeSet::new();
        if let Some(dp) = data.get("properties").and_then(Value::as_object) {
            lifted.extend(dp.keys().map(String::as_str));
        }
        lifted.insert("items");
        lifted.insert("value");
        let clash: Vec<_> = members.intersection(&lifted).collect();
        assert!(clash.is_empty(), "{}: {clash:?}", a.id);
    }
}

#[test]
fn unwrapping_contract() {
    // An object's fields at the top level, other members beside; $schema and success dropped.
    let body = json!({"$schema": "https://x/api/schemas/P.json", "success": true,
        "data": {"id": "p1", "name": "web"}, "warnings": ["w"]});
    let v = unwrap_envelope(body);
    assert_eq!(v, json!({"id": "p1", "name": "web", "warnings": ["w"]}));
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "name", "warnings"]
    );

    // A list under items, pagination and counts beside.
    let body = json!({"success": true, "data": [{"id": 1}], "pagination": {"totalItems": 1},
        "counts": {"running": 1}});
    assert_eq!(
        unwrap_envelope(body),
        json!({"items": [{"id": 1}], "pagination": {"totalItems": 1}, "counts": {"running": 1}})
    );

    // A lone value under value; a null data too.
    assert_eq!(
        unwrap_envelope(json!({"success": true, "data": "ok"})),
        json!({"value": "ok"})
    );
    assert_eq!(
        unwrap_envelope(json!({"success": true, "data": null})),
        json!({"value": null})
    );
    assert_eq!(
        unwrap_envelope(json!({"success": true, "data": 3})),
        json!({"value": 3})
    );

    // Not an envelope: the body itself; only $schema (and success) go.
    assert_eq!(
        unwrap_envelope(json!({"$schema": "x", "status": "UP"})),
        json!({"status": "UP"})
    );
    assert_eq!(
        unwrap_envelope(json!({"success": true, "message": "started"})),
        json!({"message": "started"})
    );
    assert_eq!(unwrap_envelope(json!([1, 2])), json!({"items": [1, 2]}));
    assert_eq!(unwrap_envelope(json!("png")), json!({"value": "png"}));
    assert_eq!(unwrap_envelope(Value::Null), json!({"value": null}));

    // Nested $schema/success are data and stay; a clash keeps the data's field.
    assert_eq!(
        unwrap_envelope(
            json!({"success": true, "data": {"success": false, "$schema": "s", "pagination": 1},
            "pagination": {"page": 1}})
        ),
        json!({"success": false, "$schema": "s", "pagination": 1})
    );
}

#[test]
fn schema_shapes_follow_the_unwrapping() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let list = c
        .actions
        .iter()
        .find(|a| a.output.list && a.output.kind == ResultKind::Json)
        .unwrap();
    let s = fitter.schema(&list.id).unwrap();
    assert!(
        types_of(&s["properties"]["items"]).contains(&"array"),
        "{}: {s}",
        list.id
    );
    assert!(s["properties"].get("pagination").is_some(), "{}", list.id);
    assert!(s["properties"].get("success").is_none());

    // Health is no envelope: {$schema, status} → {status}.
    let health = c
        .actions
        .iter()
        .find(|a| a.request.path == "/health" && a.request.method == "GET")
        .unwrap();
    let s = fitter.schema(&health.id).unwrap();
    assert_eq!(
        s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["status"]
    );

    // A non-envelope bare array (customize categories) lists under items.
    let cats = c
        .actions
        .iter()
        .find(|a| a.request.path == "/customize/categories" && a.request.method == "GET")
        .unwrap();
    let s = fitter.schema(&cats.id).unwrap();
    assert!(
        types_of(&s["properties"]["items"]).contains(&"array"),
        "{s}"
    );

    // project.get: an object data with compose byte sizes widened.
    let s = fitter.schema("project.get").unwrap();
    assert!(s["properties"].get("id").is_some(), "{s}");
    let text = serde_json::to_string(s).unwrap();
    assert!(
        text.contains(r#""mem_limit":{"type":["integer","null","string"]}"#),
        "mem_limit not widened"
    );
    // `memory` is widened only under `resources`, `size` only under `tmpfs`.
    let mut nodes = Vec::new();
    walk(s, String::new(), &mut nodes);
    let mut widened_memory = 0;
    let mut widened_size = 0;
    for (ptr, node) in &nodes {
        let last = ptr.rsplit('/').next().unwrap();
        let ts = types_of(node);
        if last == "memory" {
            assert_eq!(ts.contains(&"string"), ptr.contains("/resources/"), "{ptr}");
            widened_memory += usize::from(ts.contains(&"string"));
        }
        if last == "size" {
            assert_eq!(ts.contains(&"string"), ptr.contains("/tmpfs/"), "{ptr}");
            widened_size += usize::from(ts.contains(&"string"));
        }
    }
    assert!(
        widened_memory >= 1 && widened_size >= 1,
        "{widened_memory} {widened_size}"
    );
}

/// Path parameters filled from the simulator's demo state.
fn demo_path(a: &Action) -> String {
    let values: BTreeMap<&str, &str> = [
        ("id", "0"),
        ("projectId", "7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01"),
        ("containerId", "web-1"),
        ("imageId", "nginx:1.27-alpine"),
        ("volumeName", "webshop_db-data"),
        ("networkId", "bridge"),
        ("serviceId", "edge-proxy"),
        ("environmentId", "0"),
    ]
    .into();
    let mut out = String::new();
    let mut rest = a.request.path.as_str();
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 1..start + end];
        out.push_str(values.get(name).copied().unwrap_or("demo"));
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Every GET JSON action answered 2xx by the simulator over HTTP, unwrapped.
async fn sim_answers(c: &Catalog) -> Vec<(String, Value)> {
    arcane_engine::ensure_crypto_provider();
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(fixtures::spec_v2()))
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for a in json_actions(c)
        .into_iter()
        .filter(|a| a.request.method == "GET")
    {
        let url = format!("{}/api{}", sim.base_url(), demo_path(a));
        let resp = client
            .get(&url)
            .header("X-API-Key", sim.api_key())
            .send()
            .await
            .unwrap();
        if !resp.status().is_success() {
            continue;
        }
        let Ok(body) = resp.json::<Value>().await else {
            continue;
        };
        out.push((a.id.clone(), unwrap_envelope(body)));
    }
    // project.update answers the project with its compose services too.
    let url = format!(
        "{}/api/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01",
        sim.base_url()
    );
    let resp = client
        .put(&url)
        .header("X-API-Key", sim.api_key())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    if resp.status().is_success()
        && let Ok(body) = resp.json::<Value>().await
    {
        out.push(("project.update".into(), unwrap_envelope(body)));
    }
    sim.shutdown().await;
    out
}

#[tokio::test]
async fn simulator_answers_fit_and_only_compose_byte_sizes_need_the_widenings() {
    let c = catalog();
    let answers = sim_answers(&c).await;
    let gets = json_actions(&c)
        .iter()
        .filter(|a| a.request.method == "GET")
        .count();
    assert!(
        answers.len() * 10 >= gets * 9,
        "only {} of {gets} GET actions answered",
        answers.len()
    );

    // With the shipped widenings: no adjustment in any action that has widenings or that
    // returns no compose services. project.list of 2.8.0 also returns its projects' compose
    // services, and overrides/widenings.yaml does not widen it (yet): its adjustments may only
    // be compose byte sizes (the gap is reported in docs/output-schemas.md).
    let widened = OutputFitter::new(&c);
    let mut gaps: BTreeSet<&str> = BTreeSet::new();
    for (id, v) in &answers {
        let adj = widened.check(id, v);
        if adj.is_empty() {
            continue;
        }
        assert!(
            c.get(id).unwrap().output.widenings.is_empty(),
            "{id}: widened yet {adj:?}"
        );
        for a in &adj {
            assert_byte_size(id, a);
        }
        gaps.insert(id.as_str());
    }
    assert!(gaps.is_subset(&["project.list"].into()), "{gaps:?}");
    eprintln!("with the shipped widenings, byte sizes still diverge in: {gaps:?}");

    let plain = OutputFitter::new(&without_widenings(c));
    let mut divergent: BTreeSet<&str> = BTreeSet::new();
    let mut fields: BTreeSet<String> = BTreeSet::new();
    for (id, v) in &answers {
        for adj in plain.check(id, v) {
            assert_byte_size(id, &adj);
            let last = adj.pointer.rsplit('/').next().unwrap().to_string();
            divergent.insert(id.as_str());
            fields.insert(last);
        }
    }
    // The simulator answers project.update (PUT) generically, without compose services, so only
    // the GETs can show the divergence; project.update's schema is checked to be widened below.
    for id in [
        "project.compose",
        "project.runtime",
        "project.updates",
        "project.get",
    ] {
        assert!(
            divergent.contains(id),
            "{id} showed no divergence: {divergent:?}"
        );
    }
    assert!(
        answers.iter().any(|(id, _)| id == "project.update"),
        "project.update not answered"
    );
    for id in [
        "project.compose",
        "project.runtime",
        "project.updates",
        "project.update",
        "project.get",
    ] {
        let text = serde_json::to_string(widened.schema(id).unwrap()).unwrap();
        assert!(
            text.contains(r#""mem_limit":{"type":["integer","null","string"]}"#),
            "{id}"
        );
        assert!(
            text.contains(r#""shm_size":{"type":["integer","null","string"]}"#),
            "{id}"
        );
    }
    let allowed: BTreeSet<&str> = [
        "project.compose",
        "project.runtime",
        "project.update",
        "project.updates",
        "project.get",
        "project.list",
    ]
    .into();
    assert!(divergent.is_subset(&allowed), "{divergent:?}");
    assert_eq!(fields, BYTE_FIELDS.iter().map(|f| f.to_string()).collect());
    eprintln!("without widenings: divergent actions {divergent:?}, fields {fields:?}");
}

const BYTE_FIELDS: [&str; 7] = [
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "shm_size",
    "memory",
    "size",
];

/// A compose byte size sent as a string, where the document says integer.
fn assert_byte_size(id: &str, adj: &Adjustment) {
    let last = adj.pointer.rsplit('/').next().unwrap();
    assert!(BYTE_FIELDS.contains(&last), "{id}: {adj:?}");
    assert!(adj.original.is_string(), "{id}: {adj:?}");
    assert_eq!(adj.expected, "integer or null", "{id}: {adj:?}");
    if last == "memory" {
        assert!(adj.pointer.contains("/resources/"), "{id}: {}", adj.pointer);
    }
    if last == "size" {
        assert!(adj.pointer.contains("/tmpfs/"), "{id}: {}", adj.pointer);
    }
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn with_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    let buf = Captured::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (out, logs)
}

#[test]
fn a_planted_divergence_becomes_null_with_a_note_and_a_warning() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let full = unwrap_envelope(full_value(
        c.get("project.get")
            .unwrap()
            .output
            .response_schema
            .as_ref()
            .unwrap(),
        0,
    ));
    let mut v = full.clone();
    v["name"] = json!({"first": "web", "second": "shop"});
    v["services"][0]["cpu_count"] = json!("two");

    let (adj, logs) = with_logs(|| fitter.fit("project.get", &mut v));
    assert_eq!(
        adj,
        vec![
            Adjustment {
                pointer: "/name".into(),
                original: json!({"first": "web", "second": "shop"}),
                expected: "string or null".into(),
            },
            Adjustment {
                pointer: "/services/0/cpu_count".into(),
                original: json!("two"),
                expected: "integer or null".into(),
            },
        ]
    );
    assert_eq!(v["name"], Value::Null);
    assert_eq!(v["services"][0]["cpu_count"], Value::Null);
    // Everything else is untouched.
    let mut expected = full.clone();
    expected["name"] = Value::Null;
    expected["services"][0]["cpu_count"] = Value::Null;
    assert_eq!(v, expected);
    assert!(fitter.check("project.get", &v).is_empty());

    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("project.get"), "{logs}");
    assert!(
        logs.contains("/name") && logs.contains("/services/0/cpu_count"),
        "{logs}"
    );

    let n = note(&adj);
    assert!(n.starts_with("**Output schema**\n"), "{n}");
    assert!(
        n.contains(
            "- `/name` (expected string or null): `{\"first\":\"web\",\"second\":\"shop\"}`"
        ),
        "{n}"
    );
    assert!(
        n.contains("- `/services/0/cpu_count` (expected integer or null): `\"two\"`"),
        "{n}"
    );
    assert!(!n.contains("more part"));

    // A fitting value: nothing adjusted, nothing logged, no note.
    let mut ok = full.clone();
    let (adj, logs) = with_logs(|| fitter.fit("project.get", &mut ok));
    assert!(adj.is_empty() && logs.is_empty() && note(&adj).is_empty());
    assert_eq!(ok, full);

    // Unknown actions and actions without a schema are left alone.
    let mut x = json!({"a": 1});
    assert!(fitter.fit("no.such_action", &mut x).is_empty());
    assert!(fitter.schema("container.logs").is_none());
}

#[test]
fn twenty_one_divergences_list_twenty_and_one_more() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let a = c.get("container.list").unwrap();
    let item = full_value(
        &a.output.response_schema.as_ref().unwrap()["properties"]["data"]["items"],
        0,
    );
    let items: Vec<Value> = (0..21)
        .map(|i| {
            let mut it = item.clone();
            it["created"] = json!(format!("not a number {i}"));
            it
        })
        .collect();
    let mut v = json!({"items": items, "pagination": {"totalItems": 21}});
    let adj = fitter.fit_quietly("container.list", &mut v);
    assert_eq!(adj.len(), 21);
    let pointers: BTreeSet<String> = adj.iter().map(|a| a.pointer.clone()).collect();
    assert_eq!(
        pointers,
        (0..21).map(|i| format!("/items/{i}/created")).collect()
    );
    let n = note(&adj);
    assert_eq!(
        n.lines().filter(|l| l.contains("/created")).count(),
        NOTE_MAX_PARTS
    );
    assert!(n.contains("21 part(s)"), "{n}");
    assert!(n.ends_with("- … and 1 more part(s) not listed.\n"), "{n}");
}

#[test]
fn a_huge_original_is_cut_at_4000_bytes() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let a = c.get("project.get").unwrap();
    let mut v = unwrap_envelope(full_value(a.output.response_schema.as_ref().unwrap(), 0));
    // Multi-byte characters: the cut must fall on a character boundary.
    let huge: String = "é".repeat(5000);
    v["name"] = json!([huge]);
    let adj = fitter.fit_quietly("project.get", &mut v);
    assert_eq!(adj.len(), 1);
    let n = note(&adj);
    let total = serde_json::to_string(&adj[0].original).unwrap().len();
    assert!(
        n.contains(&format!("(cut at 4000 of {total} bytes)")),
        "{}",
        &n[n.len() - 200..]
    );
    let line = n.lines().find(|l| l.contains("/name")).unwrap();
    assert!(line.len() < 4200, "{}", line.len());
    let report = report_line("project.get", &adj[0]);
    assert!(
        report.starts_with("project.get\t/name\texpected string or null\tgot [\"éé"),
        "{}",
        &report[..60]
    );
    assert!(report.contains("(cut at 4000 of"));
}

#[test]
fn fitting_never_loops_and_keeps_the_root_an_object() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    // A root that is not an object becomes {}.
    for bad in [json!([1, 2]), json!("x"), Value::Null, json!(3)] {
        let mut v = bad.clone();
        let adj = fitter.fit_quietly("project.get", &mut v);
        assert_eq!(v, json!({}));
        assert_eq!(
            adj,
            vec![Adjustment {
                pointer: String::new(),
                original: bad,
                expected: "object".into()
            }]
        );
        assert!(note(&adj).contains("(the whole value)"));
    }
    // Deeply nested garbage everywhere still ends valid.
    let mut v = json!({"services": [{"mem_limit": {"deep": [[[["x"]]]]}, "deploy": "nope"}],
        "name": [1], "id": {"`": "``"}});
    let adj = fitter.fit_quietly("project.get", &mut v);
    assert!(fitter.check("project.get", &v).is_empty(), "{v}");
    let pointers: Vec<&str> = adj.iter().map(|a| a.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/id",
            "/name",
            "/services/0/deploy",
            "/services/0/mem_limit"
        ]
    );
    // Backticks in a value get a longer fence.
    assert!(
        note(&adj).contains("```{\"`\":\"``\"}```"),
        "{}",
        note(&adj)
    );
}

#[test]
fn validation_report_collects_and_writes() {
    let report = ValidationReport::new();
    report.record(
        "project.compose",
        &[Adjustment {
            pointer: "/services/0/mem_limit".into(),
            original: json!("0"),
            expected: "integer or null".into(),
        }],
    );
    report.record("container.list", &[]);
    report.record("container.list", &[]);
    assert_eq!(report.checked(), 3);
    assert_eq!(report.divergences(), 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.txt");
    report.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "# output schema validation: 3 result(s) of 2 action(s) checked, 1 divergence(s) in 1 action(s)\n\
         # divergent actions: project.compose\n\
         project.compose\t/services/0/mem_limit\texpected integer or null\tgot \"0\"\n"
    );
}

#[test]
fn flat_results_for_top_level_primitive_clients() {
    let c = catalog();
    let fitter = OutputFitter::new(&c);
    let mut flat = Vec::new();
    let mut lists = 0;
    for id in fitter.action_ids() {
        let s = fitter.schema(id).unwrap();
        if is_flat(s) {
            flat.push(id);
        }
        if s["properties"].get("items").is_some() {
            lists += 1;
        }
    }
    eprintln!(
        "flat: {} of {} ({lists} lists): {}",
        flat.len(),
        fitter.len(),
        flat.join(", ")
    );
    let version = c
        .actions
        .iter()
        .find(|a| a.request.path == "/version" && a.request.method == "GET")
        .unwrap();
    assert!(flat.contains(&version.id.as_str()), "{}", version.id);
    assert!(!flat.contains(&"project.get") && !flat.contains(&"container.list"));
    assert!(is_flat(
        &json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})
    ));
    assert!(!is_flat(
        &json!({"type": "object", "properties": {"a": {"type": ["object", "null"]}}})
    ));
    assert!(!is_flat(&json!({"type": "object", "properties": {}})));
}

#[test]
fn measure_schema_sizes_and_compile_time() {
    let c = catalog();
    let started = Instant::now();
    let fitter = OutputFitter::new(&c);
    let generate = started.elapsed();
    let started = Instant::now();
    assert!(fitter.compile_all().is_empty());
    let compile = started.elapsed();
    let mut total = 0;
    let mut largest = (0, "");
    for id in fitter.action_ids() {
        let n = serde_json::to_string(fitter.schema(id).unwrap())
            .unwrap()
            .len();
        total += n;
        if n > largest.0 {
            largest = (n, id);
        }
    }
    let plain = OutputFitter::new(&without_widenings(c));
    let plain_total: usize = plain
        .action_ids()
        .iter()
        .map(|id| {
            serde_json::to_string(plain.schema(id).unwrap())
                .unwrap()
                .len()
        })
        .sum();
    let bare_total: usize = fitter
        .action_ids()
        .iter()
        .map(|id| {
            let mut s = fitter.schema(id).unwrap().clone();
            strip_annotations(&mut s);
            serde_json::to_string(&s).unwrap().len()
        })
        .sum();
    eprintln!("without titles and descriptions: {bare_total} bytes");
    eprintln!(
        "{} schemas, {total} bytes compact JSON ({plain_total} without widenings), largest {} bytes ({}); generated in {generate:?}, all validators compiled in {compile:?}",
        fitter.len(),
        largest.0,
        largest.1
    );
    assert!(total > 0 && total >= plain_total);
}

/// Removes `title` and `description` from every schema node (to measure what they cost).
fn strip_annotations(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let annotations: Vec<String> = m
                .iter()
                .filter(|(k, val)| (*k == "title" || *k == "description") && val.is_string())
                .map(|(k, _)| k.clone())
                .collect();
            for k in annotations {
                m.shift_remove(&k);
            }
            for val in m.values_mut() {
                strip_annotations(val);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_annotations),
        _ => {}
    }
}

// ---- the flat client profile (docs/output-schemas.md, "The flat profile") -------------------

fn flat_fitter(c: &Catalog) -> OutputFitter {
    OutputFitter::for_profile(c, ClientProfile::Flat)
}

/// A flat value: every field a primitive, except `items`, an array of objects of primitives.
fn assert_flat_value(id: &str, v: &Value) {
    let prim = |x: &Value| matches!(x, Value::String(_) | Value::Number(_) | Value::Bool(_));
    for (k, x) in v.as_object().unwrap() {
        match (k.as_str(), x) {
            ("items", Value::Array(xs)) => {
                for item in xs {
                    assert!(
                        item.as_object().unwrap().values().all(prim),
                        "{id}: {k}: {item}"
                    );
                }
            }
            _ => assert!(prim(x), "{id}: {k} is not a primitive: {x}"),
        }
    }
}

/// No value constraints, no nulls, no unions, nothing required anywhere in a flat schema.
fn assert_relaxed_single_types(id: &str, schema: &Value) {
    let mut nodes = Vec::new();
    walk(schema, String::new(), &mut nodes);
    for (ptr, node) in nodes {
        let Some(m) = node.as_object() else { continue };
        for k in [
            "enum",
            "const",
            "format",
            "pattern",
            "minimum",
            "maximum",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "required",
            "anyOf",
            "oneOf",
            "allOf",
        ] {
            assert!(!m.contains_key(k), "{id}{ptr}: {k}");
        }
        if let Some(t) = m.get("type") {
            assert!(t.is_string() && t != "null", "{id}{ptr}: type {t}");
        }
        assert_ne!(
            m.get("additionalProperties"),
            Some(&json!(false)),
            "{id}{ptr}"
        );
    }
}

#[test]
fn flat_profile_every_body_takes_the_flat_shape_of_its_schema() {
    let c = catalog();
    let fitter = flat_fitter(&c);
    let sim_spec = arcane_sim::spec::Spec::load(&fixtures::spec_v2()).unwrap();
    let (mut checked, mut lists) = (0, 0);
    for a in json_actions(&c) {
        let schema = fitter.schema(&a.id).unwrap().clone();
        assert!(
            unmappable(&schema, Side::Output).is_empty(),
            "{}: {:?}",
            a.id,
            unmappable(&schema, Side::Output)
        );
        assert_relaxed_single_types(&a.id, &schema);
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        let response = a.output.response_schema.as_ref().unwrap();
        let full = unwrap_envelope(full_value(response, 0));
        let bodies = [
            unwrap_envelope(arcane_sim::synth::synth(&sim_spec, response, "", &a.id)),
            full.clone(),
            hostile(&full),
        ];
        for body in bodies {
            let mut value = body.clone();
            assert_eq!(fitter.fit(&a.id, &mut value), vec![], "{}: {body}", a.id);
            assert!(validator.is_valid(&value), "{}: {value}", a.id);
            assert_flat_value(&a.id, &value);
            assert_eq!(fitter.check(&a.id, &value), vec![], "{}", a.id);
        }
        if schema["properties"].get("items").is_some() {
            lists += 1;
            // Ours, or a field Arcane already calls `count`.
            assert!(schema["properties"].get("count").is_some(), "{}", a.id);
        }
        checked += 1;
    }
    eprintln!("flat profile: {checked} output schemas flatten ({lists} lists)");
    assert_eq!(checked, fitter.len());
    assert!(lists > 50, "{lists}");
    assert!(fitter.compile_all().is_empty());
}

#[test]
fn flat_plan_lifts_joins_and_carries_json_text() {
    let relaxed = json!({"type": "object", "properties": {
        "id": {"type": ["string", "null"]},
        "state": {"type": ["object", "null"], "properties": {
            "status": {"type": ["string", "null"]}, "running": {"type": ["boolean", "null"]}
        }},
        "hostConfig": {"type": ["object", "null"], "properties": {
            "memory": {"type": ["integer", "null"]},
            "restartPolicy": {"type": ["object", "null"], "properties": {
                "name": {"type": ["string", "null"]},
                "deep": {"type": ["object", "null"], "properties": {"x": {"type": ["string", "null"]}}}
            }}
        }},
        "labels": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "null"]}},
        "names": {"type": ["array", "null"], "items": {"type": ["string", "null"]}},
        "ports": {"type": ["array", "null"], "items": {"type": ["object", "null"], "properties": {"p": {"type": ["integer", "null"]}}}},
        "size": {"type": ["integer", "string", "null"]},
        "state_status": {"type": ["integer", "null"]}
    }});
    let plan = FlatOutput::new(&relaxed);
    let p = &plan.schema()["properties"];
    let names: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "id",
            "state_status",
            "state_running",
            "hostConfig_memory",
            "hostConfig_restartPolicy_name",
            "hostConfig_restartPolicy_deep",
            "labels",
            "names",
            "ports",
            "size",
            "state_status_2"
        ]
    );
    assert_eq!(p["hostConfig_memory"]["type"], "integer");
    assert_eq!(p["labels"]["type"], "string");
    let value = json!({
        "id": "abc", "state": {"status": "running", "running": true, "health": {"s": 1}},
        "hostConfig": {"memory": null, "restartPolicy": {"name": "always", "deep": {"x": "y"}}},
        "labels": {"a": "1"}, "names": ["/web", "/web-1"], "ports": [{"p": 80}],
        "size": 7, "state_status": 3, "extra": [1]
    });
    assert_eq!(
        plan.flatten(&value),
        json!({
            "id": "abc", "state_status": "running", "state_running": true,
            "state_health": "{\"s\":1}",
            "hostConfig_restartPolicy_name": "always",
            "hostConfig_restartPolicy_deep": "{\"x\":\"y\"}",
            "labels": "{\"a\":\"1\"}", "names": "/web, /web-1", "ports": "[{\"p\":80}]",
            "size": "7", "state_status_2": 3, "extra": "[1]"
        })
    );
    assert!(unmappable(plan.schema(), Side::Output).is_empty());

    // A list: items of flat objects, a count, the page's counts under their own names.
    let list = FlatOutput::new(&json!({"type": "object", "properties": {
        "items": {"type": ["array", "null"], "items": {"type": ["object", "null"], "properties": {
            "id": {"type": ["string", "null"]},
            "ports": {"type": ["array", "null"], "items": {"type": ["object", "null"], "properties": {"p": {"type": ["integer", "null"]}}}}
        }}},
        "pagination": {"type": ["object", "null"], "properties": {
            "totalItems": {"type": ["integer", "null"]}, "currentPage": {"type": ["integer", "null"]}
        }}
    }}));
    assert_eq!(
        list.flatten(
            &json!({"items": [{"id": "a", "ports": [{"p": 1}]}, null, {"id": null}],
            "pagination": {"totalItems": 3, "currentPage": 1}})
        ),
        json!({"items": [{"id": "a", "ports": "[{\"p\":1}]"}, {}, {}], "totalItems": 3,
            "currentPage": 1, "count": 3})
    );
    assert!(unmappable(list.schema(), Side::Output).is_empty());

    // A map or an empty object: the whole value as JSON text.
    let map = FlatOutput::new(&json!({"type": "object", "properties": {},
        "additionalProperties": {"type": ["integer", "null"]}}));
    assert_eq!(
        map.flatten(&json!({"a": 1, "b": 2})),
        json!({"json": "{\"a\":1,\"b\":2}"})
    );
    assert!(unmappable(map.schema(), Side::Output).is_empty());
}

#[test]
fn flat_depth_and_count_limits_hold() {
    // 200 nested fields: lifted up to the cap, the rest carried as JSON text.
    let mut groups = Map::new();
    for g in 0..10 {
        let mut fields = Map::new();
        for f in 0..20 {
            fields.insert(format!("f{f}"), json!({"type": ["string", "null"]}));
        }
        groups.insert(
            format!("g{g}"),
            json!({"type": ["object", "null"], "properties": fields}),
        );
    }
    let plan = FlatOutput::new(&json!({"type": "object", "properties": groups}));
    let props = plan.schema()["properties"].as_object().unwrap();
    let lifted = props.keys().filter(|k| k.contains('_')).count();
    assert!(lifted <= arcane_catalog::FLAT_MAX_FIELDS, "{lifted}");
    assert_eq!(
        props.len(),
        lifted + 4,
        "the groups past the cap stay, as JSON text"
    );
    assert!(props.contains_key("g0_f0") && props.contains_key("g9"));
    assert_eq!(props["g9"]["type"], "string");
    for k in props.keys() {
        assert!(
            k.split('_').count() <= arcane_catalog::FLAT_MAX_LIFT_DEPTH,
            "{k}"
        );
    }
}

#[test]
fn checker_over_every_served_tool_flat_maps_all_standard_does_not() {
    use arcane_catalog::Policy;
    use arcane_mcp::surface::Surface;
    use arcane_mcp::surface::client_profile::check_tool;
    let c = catalog();
    let mut figures = Vec::new();
    for profile in [ClientProfile::Standard, ClientProfile::Flat] {
        for surface in [Surface::Individual, Surface::Meta, Surface::Dynamic] {
            let policy = Policy::new(false, false, &[])
                .with_output_schemas(true)
                .with_profile(profile);
            let tools = arcane_mcp::surface::tools(surface, &c, &policy);
            let checks: Vec<_> = tools
                .iter()
                .map(|t| (t.name.to_string(), check_tool(t)))
                .collect();
            let bad_inputs = checks.iter().filter(|(_, c)| !c.input.is_empty()).count();
            let outputs = checks.iter().filter(|(_, c)| c.has_output).count();
            let bad_outputs = checks.iter().filter(|(_, c)| !c.output.is_empty()).count();
            figures.push(format!(
                "{} {}: {} tools, {bad_inputs} inputs and {bad_outputs} of {outputs} outputs do not map",
                profile.as_str(),
                surface.as_str(),
                tools.len()
            ));
            if profile == ClientProfile::Flat {
                let bad: Vec<_> = checks.iter().filter(|(_, c)| !c.maps()).collect();
                assert!(bad.is_empty(), "{}: {bad:#?}", surface.as_str());
                if surface == Surface::Individual {
                    assert_eq!(outputs, flat_fitter(&c).len());
                }
            } else if surface == Surface::Individual {
                assert!(
                    bad_inputs > 40 && bad_outputs > 150,
                    "{bad_inputs} {bad_outputs}"
                );
            } else {
                // `params` is a dynamic object on meta and dynamic.
                assert_eq!(
                    bad_inputs,
                    tools.len() - usize::from(surface == Surface::Dynamic)
                );
            }
        }
    }
    eprintln!("{}", figures.join("\n"));
}

#[test]
fn flat_profile_maps_completely_on_the_1_11_document_too() {
    use arcane_catalog::Policy;
    use arcane_mcp::surface::Surface;
    use arcane_mcp::surface::client_profile::check_tool;
    let doc = SpecDoc::from_file(&fixtures::spec_v1()).unwrap();
    let layers = Layers::builtin().unwrap();
    let c = build_catalog(BuildInput {
        spec: &doc,
        layers: &layers,
    })
    .unwrap();
    let policy = Policy::new(false, false, &[])
        .with_output_schemas(true)
        .with_profile(ClientProfile::Flat);
    let tools = arcane_mcp::surface::tools(Surface::Individual, &c, &policy);
    let bad: Vec<_> = tools
        .iter()
        .map(|t| (t.name.to_string(), check_tool(t)))
        .filter(|(_, c)| !c.maps())
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let fitter = flat_fitter(&c);
    assert!(fitter.len() > 100, "{}", fitter.len());
    for a in json_actions(&c) {
        let response = a.output.response_schema.as_ref().unwrap();
        let mut value = unwrap_envelope(full_value(response, 0));
        assert_eq!(fitter.fit(&a.id, &mut value), vec![], "{}", a.id);
        assert_flat_value(&a.id, &value);
    }
}
