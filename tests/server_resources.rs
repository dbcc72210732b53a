//! Resources (docs/surfaces.md#resources) and the result decorations of docs/output-format.md (next steps, resource links),
//! against the simulator, on each surface.

use crate::server_support;

use arcane_sim::ArcaneVersion;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ContentBlock, ReadResourceRequestParams, Reference,
    ResourceContents,
};
use serde_json::{Value, json};
use server_support::*;

async fn read(client: &Client, uri: &str) -> Result<String, String> {
    match client
        .read_resource(ReadResourceRequestParams::new(uri.to_string()))
        .await
    {
        Ok(r) => match r.contents.first() {
            Some(ResourceContents::TextResourceContents { text, .. }) => Ok(text.clone()),
            other => Err(format!("unexpected contents {other:?}")),
        },
        Err(e) => Err(e.to_string()),
    }
}

fn links(r: &rmcp::model::CallToolResult) -> Vec<String> {
    r.content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::ResourceLink(l) => Some(l.uri.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_on_every_surface() {
    resources_on_every_surface_on(ArcaneVersion::V2_8).await;
}

/// The same against Arcane main's wire behaviour (the simulator's other mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_on_every_surface_on_main() {
    resources_on_every_surface_on(ArcaneVersion::Main).await;
}

async fn resources_on_every_surface_on(version: ArcaneVersion) {
    let sim = Sim::start_as(version).await;
    let served = catalog().actions.len();
    for surface in ["dynamic", "meta", "individual"] {
        let client = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", surface]).await;

        // The catalog as a resource, adapted to the surface.
        let index: Value =
            serde_json::from_str(&read(&client, "arcane://tools").await.unwrap()).unwrap();
        assert_eq!(index["surface"], surface);
        assert_eq!(index["count"], served);
        let kill = index["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == "container.kill")
            .unwrap();
        let expected_tool = match surface {
            "dynamic" => "arcane_execute_action",
            "meta" => "arcane_container",
            _ => "arcane_container_kill",
        };
        assert_eq!(kill["tool"], expected_tool);
        assert!(
            kill["call"].as_str().unwrap().contains("\"confirm\":true"),
            "{kill}"
        );
        assert_eq!(kill["destructive"], true);
        let detail: Value = serde_json::from_str(
            &read(&client, "arcane://tools/container.restart")
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(detail["operationId"], "restart-container");
        assert_eq!(detail["inputSchema"]["type"], "object");

        // resources/list pages through everything; templates are listed.
        let all = client.list_all_resources().await.unwrap();
        assert!(
            all.iter()
                .any(|r| r.uri == "arcane://guides/deploy-project")
        );
        assert!(all.iter().any(|r| r.uri == "arcane://containers"));
        assert_eq!(
            all.iter()
                .filter(|r| r.uri.starts_with("arcane://tools/"))
                .count(),
            served
        );
        let templates = client.list_all_resource_templates().await.unwrap();
        assert!(
            templates.iter().any(|t| t.uri_template
                == "arcane://environment/{environmentId}/container/{containerId}")
        );

        // Guides name actions as the surface spells them.
        let guide = read(&client, "arcane://guides/deploy-project")
            .await
            .unwrap();
        let up = match surface {
            "dynamic" => "`project.up`",
            "meta" => "`arcane_project` (action `up`)",
            _ => "`arcane_project_up`",
        };
        assert!(guide.contains(up), "{guide}");

        // container.get ends with a link that resolves; its text has next steps named for the surface.
        let (tool, args) = shape(
            surface,
            "container.get",
            json!({"containerId": "db-1"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        ok(&r);
        assert_eq!(
            links(&r),
            vec!["arcane://environment/0/container/db-1".to_string()]
        );
        let t = text(&r);
        assert!(t.contains("**Next steps**"), "{t}");
        let logs = match surface {
            "dynamic" => "`container.logs`",
            "meta" => "`arcane_container` (action `logs`)",
            _ => "`arcane_container_logs`",
        };
        assert!(t.contains(logs), "{t}");
        let doc = read(&client, "arcane://environment/0/container/db-1")
            .await
            .unwrap();
        assert!(doc.contains("db-1"));
        assert!(
            !doc.contains("s3cr3t-demo"),
            "a secret leaked into a resource: {doc}"
        );
        assert!(doc.contains("masked"), "{doc}");
        // The short form reads the same container in the default environment.
        assert!(
            read(&client, "arcane://container/db-1")
                .await
                .unwrap()
                .contains("POSTGRES_PASSWORD")
        );

        for (id, params, uri) in [
            ("environment.get", json!({}), "arcane://environment/0"),
            // Arcane finds projects by ID; the name is resolved first, and the link carries
            // the ID (docs/arcane-wire.md).
            (
                "project.get",
                json!({"projectId": "webshop"}),
                "arcane://environment/0/project/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01",
            ),
        ] {
            let (tool, args) = shape(surface, id, params, false);
            let r = call(&client, &tool, args).await;
            ok(&r);
            assert_eq!(links(&r), vec![uri.to_string()], "{id}");
            let doc = read(&client, uri).await.unwrap();
            assert!(!doc.contains("s3cr3t-demo"), "{uri} leaked a secret");
        }
        // A resource URI may name the project too.
        let doc = read(&client, "arcane://environment/0/project/webshop")
            .await
            .unwrap();
        assert!(
            doc.contains("7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01"),
            "{doc}"
        );
        // A failed call carries no link.
        let (tool, args) = shape(
            surface,
            "container.get",
            json!({"containerId": "nope-404"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        err(&r);
        assert!(links(&r).is_empty());

        // No secret in any list resource either.
        for uri in [
            "arcane://containers",
            "arcane://projects",
            "arcane://environments",
            "arcane://images",
        ] {
            let doc = read(&client, uri).await.unwrap();
            assert!(
                !doc.contains("s3cr3t-demo") && !doc.contains("grafana-admin-demo"),
                "{uri} leaked"
            );
        }
        // Unknown resources are a clear error.
        let e = read(&client, "arcane://tools/container.restrat")
            .await
            .unwrap_err();
        assert!(e.contains("container.restart"), "{e}");

        // Completion returns real IDs from the simulator.
        let done = client
            .complete(CompleteRequestParams::new(
                Reference::for_resource(
                    "arcane://environment/{environmentId}/container/{containerId}",
                ),
                ArgumentInfo::new("containerId", "we"),
            ))
            .await
            .unwrap();
        assert!(
            done.completion.values.contains(&"web-1".to_string()),
            "{:?}",
            done.completion.values
        );
        client.cancel().await.unwrap();
    }
    sim.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_lowers_counts_and_gives_reasons() {
    read_only_lowers_counts_and_gives_reasons_on(ArcaneVersion::V2_8).await;
}

/// The same against Arcane main's wire behaviour (the simulator's other mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_lowers_counts_and_gives_reasons_on_main() {
    read_only_lowers_counts_and_gives_reasons_on(ArcaneVersion::Main).await;
}

async fn read_only_lowers_counts_and_gives_reasons_on(version: ArcaneVersion) {
    let sim = Sim::start_as(version).await;
    let cat = catalog();
    // Reads that reveal a credential are withdrawn by read-only mode too.
    let reads = cat
        .actions
        .iter()
        .filter(|a| !a.safety.mutating && a.safety.reveals_secret.is_none())
        .count();
    let client = spawn(
        &sim.base(),
        sim.sim.api_key(),
        &["--read-only", "--exclude-tools", "image"],
    )
    .await;
    let index: Value =
        serde_json::from_str(&read(&client, "arcane://tools").await.unwrap()).unwrap();
    let images = cat
        .actions
        .iter()
        .filter(|a| !a.safety.mutating && a.domain == "image")
        .count();
    assert_eq!(index["count"], reads - images);
    let detail: Value = serde_json::from_str(
        &read(&client, "arcane://tools/container.restart")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(detail["withdrawn"], true);
    assert!(
        detail["reason"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("read-only"),
        "{detail}"
    );
    let detail: Value =
        serde_json::from_str(&read(&client, "arcane://tools/image.list").await.unwrap()).unwrap();
    assert_eq!(detail["withdrawn"], true);
    // Guides never suggest a withdrawn action without saying so.
    let guide = read(&client, "arcane://guides/clean-up-disk")
        .await
        .unwrap();
    assert!(
        guide.contains("`image.prune` (not available here)"),
        "{guide}"
    );
    // Next steps never suggest a withdrawn action.
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.get", "params": {"containerId": "web-1"}}),
    )
    .await;
    let t = text(&r);
    assert!(!t.contains("container.restart"), "{t}");
    client.cancel().await.unwrap();
    sim.sim.shutdown().await;
}

/// An unknown tool ID of any length is echoed cut, as every echoed name is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_unknown_tool_id_is_echoed_cut() {
    let sim = Sim::start().await;
    let client = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let uri = format!("arcane://tools/{}", "a".repeat(100_000));
    let err = read(&client, &uri).await.expect_err("no such tool");
    assert!(err.len() < 2_000, "an echo of {} characters", err.len());
    assert!(err.contains("no action"), "{err}");
}

/// A read of what does not exist — an address no resource has, or a template's ID or name that
/// nothing carries (Arcane's 404, or a name no lookup finds) — is invalid params (-32602, as
/// SEP-2164 settled it) naming the URI, in either lifecycle; not Arcane's failure (-32603).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_resource_is_invalid_params() {
    let sim = Sim::start().await;
    let legacy = spawn(&sim.base(), sim.sim.api_key(), &[]).await;
    let stateless = spawn_speaking(
        (),
        rmcp::service::ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        },
        &sim.base(),
        sim.sim.api_key(),
        &[],
    )
    .await;
    for client in [&legacy, &stateless] {
        for uri in [
            "arcane://container/no-such-container",
            "arcane://environment/0/container/no-such-container",
            "arcane://project/no-such-project",
            "arcane://environment/0/image/no-such-image",
            "arcane://environment/no-such-env",
            "arcane://environment/no-such-env/dashboard",
            "arcane://guides/no-such-guide",
            "arcane://no-such-resource",
        ] {
            let err = match client
                .read_resource(ReadResourceRequestParams::new(uri.to_string()))
                .await
            {
                Err(rmcp::ServiceError::McpError(e)) => e,
                other => panic!("{uri}: {other:?}"),
            };
            assert_eq!(
                err.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{uri}: {err:?}"
            );
            assert_eq!(err.data, Some(json!({"uri": uri})), "{uri}");
        }
        // What exists still reads.
        assert!(
            read(client, "arcane://container/db-1")
                .await
                .unwrap()
                .contains("db-1")
        );
    }
}
