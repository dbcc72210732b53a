//! Output schemas (docs/output-schemas.md) end to end: every JSON action of the 2.8.0 spec called on the
//! individual surface with schemas on, each successful structuredContent checked against the
//! tool's declared output schema, as a strict client would. With `E2E_VALIDATE_OUTPUT=1` the
//! sweep also writes a report of every part the server had to adjust.

use crate::report;
use crate::server_support;

use arcane_sim::ArcaneVersion;
use std::collections::HashMap;

use arcane_catalog::ResultKind;
use serde_json::{Map, Value, json};
use server_support::*;

/// A plausible value for a required parameter: the simulator's demo IDs where the name says
/// which object, else a value of the schema's type.
fn value_for(name: &str, schema: &Value) -> Value {
    let known: HashMap<&str, &str> = HashMap::from([
        ("containerId", "web-1"),
        ("projectId", "webshop"),
        ("imageId", "nginx:1.27-alpine"),
        ("name", "nginx:1.27-alpine"),
        ("volumeName", "webshop_db-data"),
        ("networkId", "webshop_default"),
        ("serviceId", "edge-proxy"),
        ("environmentId", "0"),
    ]);
    if let Some(v) = known.get(name) {
        return json!(v);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string")
            .to_string(),
        _ => "string".into(),
    };
    if let Some(Value::Array(options)) = schema.get("enum") {
        return options[0].clone();
    }
    match ty.as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!("demo"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_json_action_fits_its_declared_schema() {
    let standard = sweep(&[], ArcaneVersion::V2_8).await;
    // The same sweep in the flat client profile: every input given as the flat tool declares
    // it (objects and arrays of objects as JSON text), every result flat and valid, and every
    // call that succeeds in the standard profile succeeds in it too.
    let flat = sweep(&["--client-profile", "agentforce"], ArcaneVersion::V2_8).await;
    assert_eq!(standard, flat, "successful calls: standard vs flat");
}

/// The sweep against Arcane main's wire behaviour (the simulator's other mode): every result
/// still fits its declared schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_json_action_fits_its_declared_schema_on_main() {
    let on_main = sweep(&[], ArcaneVersion::Main).await;
    assert!(on_main.len() > 250, "{} successful calls", on_main.len());
}

/// A required parameter's value as the tool declares it: JSON text where the tool's schema
/// says string but the action's schema wants something else (the flat profile).
fn as_declared(tool: &rmcp::model::Tool, name: &str, v: Value) -> Value {
    let declared = tool
        .input_schema
        .get("properties")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("type"));
    match (declared, &v) {
        (Some(t), Value::Object(_) | Value::Array(_)) if t == "string" => {
            Value::String(v.to_string())
        }
        _ => v,
    }
}

/// Calls every JSON action; returns the IDs of the successful calls.
async fn sweep(extra: &[&str], version: ArcaneVersion) -> Vec<String> {
    let flat = !extra.is_empty();
    let sim = Sim::start_as(version).await;
    let mut args = vec!["--tool-surface", "individual", "--output-schemas=on"];
    args.extend_from_slice(extra);
    let client = spawn(&sim.base(), sim.sim.api_key(), &args).await;
    let tools: HashMap<String, rmcp::model::Tool> = tools(&client)
        .await
        .into_iter()
        .map(|t| (t.name.to_string(), t))
        .collect();
    let cat = catalog();
    let report_on = std::env::var("E2E_VALIDATE_OUTPUT").is_ok_and(|v| v == "1");
    let report = report::ValidationReport::new();
    let (mut checked, mut rejected, mut declared) = (0usize, Vec::new(), 0usize);
    let mut succeeded = Vec::new();
    for a in &cat.actions {
        let tool = &tools[&a.individual_tool_name()];
        let has_schema = tool.output_schema.is_some();
        assert_eq!(
            has_schema,
            a.output.kind == ResultKind::Json,
            "{}: output schema only for JSON actions",
            a.id
        );
        let Some(schema) = &tool.output_schema else {
            continue;
        };
        declared += 1;
        let schema = Value::Object((**schema).clone());
        assert!(jsonschema::draft202012::meta::is_valid(&schema), "{}", a.id);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut args = Map::new();
        for p in a.params.iter().filter(|p| p.required) {
            let v = as_declared(tool, &p.name, value_for(&p.name, &p.schema));
            args.insert(p.name.clone(), v);
        }
        if a.needs_confirmation() {
            args.insert("confirm".into(), json!(true));
        }
        let r = call(&client, &tool.name, Value::Object(args)).await;
        if a.safety.mutating {
            sim.reset().await;
        }
        if is_error(&r) {
            continue;
        }
        checked += 1;
        succeeded.push(a.id.clone());
        let sc = r.structured_content.clone().expect("structuredContent");
        if flat {
            let problems = arcane_catalog::unmappable(&schema, arcane_catalog::Side::Output);
            assert!(problems.is_empty(), "{}: {problems:?}", a.id);
            for (k, v) in sc.as_object().unwrap() {
                assert!(
                    !v.is_object() && !v.is_null() && (k == "items" || !v.is_array()),
                    "{}: {k} is not flat: {v}",
                    a.id
                );
            }
        }
        if !validator.is_valid(&sc) {
            rejected.push(format!(
                "{}: {:?}",
                a.id,
                validator
                    .iter_errors(&sc)
                    .map(|e| e.to_string())
                    .take(3)
                    .collect::<Vec<_>>()
            ));
        }
        if report_on {
            // What the server adjusted is named in the text's note; record it for the report.
            let t = text(&r);
            if t.contains("**Output schema**") {
                report.record(
                    &a.id,
                    &[arcane_catalog::Adjustment {
                        pointer: "(see the result's Output schema note)".into(),
                        original: Value::String(t.clone()),
                        expected: "the declared schema".into(),
                    }],
                );
            }
        }
    }
    if report_on {
        let path = std::env::temp_dir().join("arcane-mcp-output-schema-report.txt");
        report.write(&path).unwrap();
        eprintln!("validator report: {}", path.display());
    }
    eprintln!(
        "output schemas{}: {declared} declared, {checked} successful results checked",
        if flat { " (flat)" } else { "" }
    );
    assert!(
        rejected.is_empty(),
        "results a strict client would reject: {rejected:#?}"
    );
    assert!(declared > 300, "{declared}");
    assert!(
        checked > 200,
        "only {checked} calls succeeded; the sweep checks too little"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
    succeeded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_divergence_becomes_null_with_a_note_and_none_elsewhere() {
    let sim = Sim::start().await;
    // Not on meta or dynamic, and not with the flag off.
    for args in [
        &["--tool-surface", "meta", "--output-schemas=on"][..],
        &["--tool-surface", "individual"][..],
    ] {
        let client = spawn(&sim.base(), sim.sim.api_key(), args).await;
        assert!(
            tools(&client)
                .await
                .iter()
                .all(|t| t.output_schema.is_none())
        );
        client.cancel().await.unwrap();
    }
    // Safe mode: mutating tools declare none.
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &[
            "--tool-surface",
            "individual",
            "--output-schemas=on",
            "--safe-mode",
        ],
    )
    .await;
    let all = tools(&client).await;
    let restart = all
        .iter()
        .find(|t| t.name == "arcane_container_restart")
        .unwrap();
    assert!(restart.output_schema.is_none());
    assert!(
        all.iter()
            .find(|t| t.name == "arcane_container_list")
            .unwrap()
            .output_schema
            .is_some()
    );
    client.cancel().await.unwrap();

    // A planted divergence: Arcane answers a string where the schema says an object.
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--output-schemas=on"],
    )
    .await;
    sim.fault(json!({
        "method": "GET", "path": "/environments/0/containers/counts$", "kind": "status", "status": 200,
        "body": {"success": true, "data": {"runningContainers": "many", "stoppedContainers": 1, "totalContainers": 2}}
    }))
    .await;
    let r = call(&client, "arcane_container_counts", json!({})).await;
    let sc = ok(&r);
    assert_eq!(sc["runningContainers"], Value::Null, "{sc}");
    assert_eq!(sc["stoppedContainers"], 1);
    let t = text(&r);
    assert!(
        t.contains("Output schema") && t.contains("/runningContainers") && t.contains("many"),
        "{t}"
    );
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

#[test]
fn tools_list_size_with_and_without_output_schemas() {
    use arcane_catalog::Policy;
    use arcane_mcp::surface::Surface;
    let cat = catalog();
    let size_in = |on: bool, profile: arcane_catalog::ClientProfile| {
        let policy = Policy::new(false, false, &[])
            .with_output_schemas(on)
            .with_profile(profile);
        serde_json::to_vec(&arcane_mcp::surface::tools(
            Surface::Individual,
            &cat,
            &policy,
        ))
        .unwrap()
        .len()
    };
    let size = |on: bool| size_in(on, arcane_catalog::ClientProfile::Standard);
    let (off, on) = (size(false), size(true));
    let flat = size_in(true, arcane_catalog::ClientProfile::Flat);
    eprintln!(
        "individual tools/list: {off} bytes without output schemas, {on} with, {flat} with flat ones"
    );
    assert!(flat > off, "flat schemas declared: {off} → {flat}");
    assert!(on > off + 300_000, "schemas declared: {off} → {on}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_profile_end_to_end_same_call_flat_shapes() {
    let sim = Sim::start().await;
    let args = ["--tool-surface", "individual", "--output-schemas=on"];
    let standard = spawn(&sim.base(), sim.sim.api_key(), &args).await;
    let flat_args = [&args[..], &["--client-profile", "flat"]].concat();
    let client = spawn(&sim.base(), sim.sim.api_key(), &flat_args).await;

    // The same text, a flat structuredContent.
    let get = json!({"containerId": "web-1"});
    let s = call(&standard, "arcane_container_get", get.clone()).await;
    let f = call(&client, "arcane_container_get", get).await;
    assert_eq!(text(&s), text(&f));
    let (s, f) = (ok(&s), ok(&f));
    assert_eq!(f["state_status"], s["state"]["status"], "{f}");
    assert_eq!(f["name"], s["name"]);
    assert!(f.get("state").is_none());
    let labels: Value = serde_json::from_str(f["labels"].as_str().unwrap()).unwrap();
    assert_eq!(labels, s["labels"], "a map is carried whole, as JSON text");
    let list = ok(&call(&client, "arcane_container_list", json!({})).await);
    assert_eq!(list["count"], 7, "{list}");
    assert!(list["totalItems"].is_number(), "{list}");
    assert!(list["items"][0]["state"].is_string(), "{list}");

    // Nested inputs are JSON text, decoded and judged by the original schema.
    let tools = tools(&client).await;
    let update = tools
        .iter()
        .find(|t| t.name == "arcane_swarm_service_update")
        .unwrap();
    let spec = &update.input_schema["properties"]["spec"];
    assert_eq!(spec["type"], "string");
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .contains("JSON text of an object, e.g. {"),
        "{spec}"
    );
    let base = json!({"serviceId": "edge-proxy", "version": 1});
    let mut bad = base.clone();
    bad["spec"] = json!("{\"Name\": ");
    let r = call(&client, "arcane_swarm_service_update", bad).await;
    assert!(is_error(&r));
    assert!(
        text(&r).contains("/spec: must be JSON text of an object"),
        "{}",
        text(&r)
    );
    let mut wrong = base.clone();
    wrong["spec"] = json!("{\"Name\": 5}");
    let r = call(&client, "arcane_swarm_service_update", wrong).await;
    assert!(
        is_error(&r) && text(&r).contains("/spec/Name"),
        "{}",
        text(&r)
    );
    assert!(
        sim.requests().await.iter().all(|q| q["method"] != "PUT"),
        "nothing was sent"
    );

    // A divergence: the note as today; the part is omitted (a flat field is never null).
    sim.fault(json!({
        "method": "GET", "path": "/environments/0/containers/counts$", "kind": "status", "status": 200,
        "body": {"success": true, "data": {"runningContainers": "many", "stoppedContainers": 1, "totalContainers": 2}}
    }))
    .await;
    let r = call(&client, "arcane_container_counts", json!({})).await;
    let sc = ok(&r);
    assert!(sc.get("runningContainers").is_none(), "{sc}");
    assert_eq!(sc["stoppedContainers"], 1);
    let t = text(&r);
    assert!(
        t.contains("Output schema") && t.contains("/runningContainers") && t.contains("many"),
        "{t}"
    );
    standard.cancel().await.unwrap();
    client.cancel().await.unwrap();

    // Meta: `params` is JSON text.
    let meta = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "meta", "--client-profile", "flat"],
    )
    .await;
    let container = tools_of(&meta, "arcane_container").await;
    assert_eq!(
        container.input_schema["properties"]["params"]["type"],
        "string"
    );
    let r = call(
        &meta,
        "arcane_container",
        json!({"action": "get", "params": "{\"containerId\": \"web-1\"}"}),
    )
    .await;
    assert_eq!(ok(&r)["name"], "web-1");
    meta.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

async fn tools_of(client: &Client, name: &str) -> rmcp::model::Tool {
    tools(client)
        .await
        .into_iter()
        .find(|t| t.name == name)
        .unwrap()
}
