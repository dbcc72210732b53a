//! Output schemas (SPEC §9) end to end: every JSON action of the 2.8.0 spec called on the
//! individual surface with schemas on, each successful structuredContent checked against the
//! tool's declared output schema, as a strict client would. With `E2E_VALIDATE_OUTPUT=1` the
//! sweep also writes a report of every part the server had to adjust.

mod server_support;

use std::collections::HashMap;

use arcane_mcp::catalog::ResultKind;
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
    let sim = Sim::start().await;
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--tool-surface", "individual", "--output-schemas", "on"],
    )
    .await;
    let tools: HashMap<String, rmcp::model::Tool> = tools(&client)
        .await
        .into_iter()
        .map(|t| (t.name.to_string(), t))
        .collect();
    let cat = catalog();
    let report_on = std::env::var("E2E_VALIDATE_OUTPUT").is_ok_and(|v| v == "1");
    let report = arcane_mcp::output_schema::ValidationReport::new();
    let (mut checked, mut rejected, mut declared) = (0usize, Vec::new(), 0usize);
    for a in &cat.actions {
        let tool = &tools[&a.individual_tool_name()];
        let has_schema = tool.output_schema.is_some();
        assert_eq!(
            has_schema,
            a.kind == ResultKind::Json,
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
            args.insert(p.name.clone(), value_for(&p.name, &p.schema));
        }
        if a.destructive {
            args.insert("confirm".into(), json!(true));
        }
        let r = call(&client, &tool.name, Value::Object(args)).await;
        if a.mutating {
            sim.reset().await;
        }
        if is_error(&r) {
            continue;
        }
        checked += 1;
        let sc = r.structured_content.clone().expect("structuredContent");
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
                    &[arcane_mcp::output_schema::Adjustment {
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
    eprintln!("output schemas: {declared} declared, {checked} successful results checked");
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_divergence_becomes_null_with_a_note_and_none_elsewhere() {
    let sim = Sim::start().await;
    // Not on meta or dynamic, and not with the flag off.
    for args in [
        &["--tool-surface", "meta", "--output-schemas", "on"][..],
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
            "--output-schemas",
            "on",
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
        &["--tool-surface", "individual", "--output-schemas", "on"],
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
    use arcane_mcp::config::Surface;
    use arcane_mcp::policy::Policy;
    let cat = catalog();
    let size = |on: bool| {
        let policy = Policy::new(false, false, &[]).with_output_schemas(on);
        serde_json::to_vec(&arcane_mcp::surface::tools(
            Surface::Individual,
            &cat,
            &policy,
        ))
        .unwrap()
        .len()
    };
    let (off, on) = (size(false), size(true));
    eprintln!("individual tools/list: {off} bytes without output schemas, {on} with");
    assert!(on > off + 300_000, "schemas declared: {off} → {on}");
}
