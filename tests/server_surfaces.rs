//! The three tool surfaces against the simulator: tool lists and schemas, listing and restarting
//! containers, the confirm rule for destructive actions (nothing sent without it), and that
//! every surface returns the same result.

use crate::server_support;

use serde_json::{Value, json};
use server_support::*;

/// Every input schema is a valid JSON Schema 2020-12 object schema.
fn assert_object_schemas(tools: &[rmcp::model::Tool]) {
    for t in tools {
        let schema = Value::Object(t.input_schema.as_ref().clone());
        assert_eq!(schema["type"], "object", "{} has an object schema", t.name);
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("{}: invalid JSON Schema: {e}", t.name);
        }
        assert!(
            jsonschema::draft202012::new(&schema).is_ok(),
            "{} compiles",
            t.name
        );
    }
}

/// List, restart, the confirm rule and a confirmed delete on one surface.
async fn exercise(surface: &str) {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", surface]).await;
    let catalog = catalog();

    // tools/list
    let tools = tools(&client).await;
    match surface {
        "dynamic" => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            assert_eq!(names, ["arcane_find_action", "arcane_execute_action"]);
        }
        "meta" => {
            assert_eq!(tools.len(), catalog.domains.len(), "one tool per domain");
            let c = tools.iter().find(|t| t.name == "arcane_container").unwrap();
            let desc = c.description.as_deref().unwrap();
            for a in ["list", "restart", "delete!"] {
                assert!(desc.contains(a), "meta description lists {a}: {desc}");
            }
        }
        _ => {
            assert_eq!(tools.len(), catalog.actions.len(), "one tool per action");
            let del = tools
                .iter()
                .find(|t| t.name == "arcane_container_delete")
                .unwrap();
            assert!(del.input_schema["properties"].get("confirm").is_some());
            let ann = del.annotations.as_ref().unwrap();
            assert_eq!(ann.destructive_hint, Some(true));
            assert_eq!(ann.read_only_hint, Some(false));
            let list = tools
                .iter()
                .find(|t| t.name == "arcane_container_list")
                .unwrap();
            assert_eq!(
                list.annotations.as_ref().unwrap().read_only_hint,
                Some(true)
            );
            assert!(list.input_schema["properties"].get("confirm").is_none());
        }
    }
    assert_object_schemas(&tools);
    sim.reset().await;

    // List containers: the envelope unwrapped, an explicit sort sent.
    let (tool, args) = shape(surface, "container.list", json!({}), false);
    let r = call(&client, &tool, args).await;
    let v = ok(&r);
    assert!(v["items"].as_array().is_some_and(|i| !i.is_empty()), "{v}");
    assert!(v["items"].to_string().contains("web-1"), "{v}");
    assert!(
        v.get("pagination").is_some() && v.get("counts").is_some(),
        "{v}"
    );
    assert!(v.get("success").is_none() && v.get("data").is_none());
    assert!(text(&r).contains("web-1"), "the text shows the list");
    let log = sim.requests().await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["path"], "/api/environments/0/containers");
    assert!(
        log[0]["query"].as_str().unwrap().contains("sort="),
        "{}",
        log[0]
    );

    // Restart a stopped container: the simulator's state shows it running.
    assert_eq!(
        sim.container("prometheus-1").await.unwrap()["state"],
        "exited"
    );
    let (tool, args) = shape(
        surface,
        "container.restart",
        json!({"containerId": "prometheus-1"}),
        false,
    );
    ok(&call(&client, &tool, args).await);
    assert_eq!(
        sim.container("prometheus-1").await.unwrap()["state"],
        "running"
    );

    // Destructive without confirm: refused, nothing sent.
    sim.reset().await;
    let (tool, args) = shape(
        surface,
        "container.delete",
        json!({"containerId": "backup-1"}),
        false,
    );
    let e = err(&call(&client, &tool, args).await);
    assert!(e.contains("confirm"), "{e}");
    assert!(sim.requests().await.is_empty(), "nothing reached Arcane");
    assert!(sim.container("backup-1").await.is_some());

    // With confirm: it happens.
    let (tool, args) = shape(
        surface,
        "container.delete",
        json!({"containerId": "backup-1"}),
        true,
    );
    ok(&call(&client, &tool, args).await);
    assert!(sim.container("backup-1").await.is_none(), "deleted");
    assert_eq!(writes(&sim.requests().await).len(), 1);

    // A project from plain fields: the executor encodes them into Arcane's `project` and
    // `manifest` multipart parts (JSON text).
    sim.reset().await;
    let compose = "services:\n  web:\n    image: nginx:1.27\n";
    let (tool, args) = shape(
        surface,
        "project.create",
        json!({"name": "shop", "composeContent": compose, "envContent": "TZ=UTC\n", "tags": ["prod"]}),
        true,
    );
    ok(&call(&client, &tool, args).await);
    let log = sim.requests().await;
    let sent = writes(&log);
    assert_eq!(sent.len(), 1, "{log:?}");
    assert_eq!(sent[0]["path"], "/api/environments/0/projects");
    let body = sent[0]["body"].as_str().unwrap();
    let project: Value = serde_json::from_str(&multipart_part(body, "project")).unwrap();
    assert_eq!(
        project,
        json!({"name": "shop", "composeContent": compose, "envContent": "TZ=UTC\n", "tags": ["prod"]})
    );
    let manifest: Value = serde_json::from_str(&multipart_part(body, "manifest")).unwrap();
    assert_eq!(manifest, json!({"fileChanges": []}));
    assert!(
        !body.contains("name=\"composeContent\""),
        "fields are not sent apart"
    );

    // With a workspace file: the manifest from its field, the file as a file part.
    sim.reset().await;
    let change =
        json!({"operation": "create_file", "relativePath": "nginx/default.conf", "uploadIndex": 0});
    let (tool, args) = shape(
        surface,
        "project.create",
        json!({"name": "shop", "composeContent": compose, "fileChanges": [change], "files": ["server { listen 80; }\n"]}),
        true,
    );
    ok(&call(&client, &tool, args).await);
    let log = sim.requests().await;
    let body = writes(&log)[0]["body"].as_str().unwrap().to_string();
    let manifest: Value = serde_json::from_str(&multipart_part(&body, "manifest")).unwrap();
    assert_eq!(manifest, json!({"fileChanges": [change]}));
    assert!(
        body.contains("name=\"files\"; filename=") && body.contains("server { listen 80; }"),
        "{body}"
    );

    // Both forms at once: refused locally, nothing sent.
    sim.reset().await;
    let (tool, args) = shape(
        surface,
        "project.create",
        json!({"name": "shop", "composeContent": compose, "project": "{\"name\":\"x\"}"}),
        true,
    );
    let e = err(&call(&client, &tool, args).await);
    assert!(e.contains("not both"), "{e}");
    // The error shows the action's example call, ready to copy.
    assert!(e.contains("Example: `{\"name\":\"shop\""), "{e}");
    assert!(sim.requests().await.is_empty(), "nothing reached Arcane");

    // An octet-stream body: the base64 `body` parameter goes as the raw bytes.
    sim.reset().await;
    let (tool, args) = shape(
        surface,
        "upload.chunk",
        json!({"kind": "image", "uploadId": "up-1", "index": 0, "body": "aGVsbG8gY2h1bmsK"}),
        false,
    );
    ok(&call(&client, &tool, args).await);
    let log = sim.requests().await;
    let sent = writes(&log);
    assert_eq!(sent.len(), 1, "{log:?}");
    assert_eq!(
        sent[0]["path"],
        "/api/environments/0/uploads/image/up-1/chunks/0"
    );
    assert_eq!(sent[0]["body"], "hello chunk\n");
    // Not base64: refused before anything is sent.
    sim.reset().await;
    let (tool, args) = shape(
        surface,
        "upload.chunk",
        json!({"kind": "image", "uploadId": "up-1", "index": 0, "body": "not base64!"}),
        false,
    );
    let e = err(&call(&client, &tool, args).await);
    assert!(e.contains("base64"), "{e}");
    assert!(sim.requests().await.is_empty(), "nothing reached Arcane");

    client.cancel().await.ok();
    sim.sim.shutdown().await;
}

/// The content of one text part of a multipart/form-data body.
fn multipart_part(body: &str, name: &str) -> String {
    let header = format!("name=\"{name}\"");
    let at = body
        .find(&header)
        .unwrap_or_else(|| panic!("no {name} part in {body}"));
    let rest = &body[at..];
    let start = rest.find("\r\n\r\n").unwrap() + 4;
    let end = rest[start..].find("\r\n--").unwrap();
    rest[start..start + end].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_surface() {
    exercise("dynamic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_surface() {
    exercise("meta").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn individual_surface() {
    exercise("individual").await;
}

/// Search on the dynamic surface: schemas for the first five, parameter lines for the rest,
/// schemaUri everywhere; bad queries are isError results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_action_results() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let r = call(
        &client,
        "arcane_find_action",
        json!({"query": "restart container", "limit": 8}),
    )
    .await;
    let v = ok(&r);
    let results = v["results"].as_array().unwrap();
    assert!(!results.is_empty() && results.len() <= 8);
    assert!(
        results.iter().any(|x| x["id"] == "container.restart"),
        "{v}"
    );
    for (i, x) in results.iter().enumerate() {
        assert_eq!(
            x["schemaUri"],
            format!("arcane://tools/{}", x["id"].as_str().unwrap())
        );
        for k in [
            "title",
            "description",
            "required",
            "mutating",
            "destructive",
            "related",
        ] {
            assert!(x.get(k).is_some(), "result has {k}");
        }
        assert_eq!(
            x.get("inputSchema").is_some(),
            i < 5,
            "full schema only in the first five"
        );
        assert_eq!(x.get("params").is_some(), i >= 5);
    }
    let long = "x".repeat(257);
    assert!(
        err(&call(&client, "arcane_find_action", json!({"query": long})).await).contains("256")
    );
    assert!(
        err(&call(
            &client,
            "arcane_find_action",
            json!({"query": "containers", "limit": 51})
        )
        .await)
        .contains("50")
    );
    let d = ok(&call(
        &client,
        "arcane_find_action",
        json!({"query": "list containers"}),
    )
    .await);
    assert!(
        d["results"].as_array().unwrap().len() <= 10,
        "default limit 10"
    );
    assert!(sim.requests().await.is_empty(), "search never calls Arcane");
    client.cancel().await.ok();
}
