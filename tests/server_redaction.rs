//! Environment variables in results and resources (docs/security.md, "Secrets"): a value is
//! masked when its name says secret or it looks like a credential, and the rest is shown —
//! `LOG_LEVEL=info` and a password-less `REDIS_URL` are the clue to a crash.
//! `structuredContent` keeps every value; `--show-secrets` shows them all in the text too.

use crate::server_support::*;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::json;

/// A GitHub token under a neutral name.
fn ghp() -> String {
    format!("ghp_{}", "Qz7Rk2".repeat(6))
}

const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1cHN0cmVhbSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";

/// Secrets of the planted variables, and what must stay visible.
const HIDDEN: &[&str] = &["dbpw-SECRET1", "urlpw-SECRET2"];

async fn plant(sim: &Sim) {
    let mut state = sim.state().await;
    let web = state["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "web-1")
        .expect("web-1 in the demo state");
    web["env"] = json!([
        "LOG_LEVEL=info",
        "REDIS_URL=redis://cache:6379",
        "DB_PASSWORD=dbpw-SECRET1",
        "DATABASE_URL=postgres://shop:urlpw-SECRET2@db-1:5432/shop",
        format!("UPSTREAM={}", ghp()),
        format!("CALLBACK_SESSION={JWT}"),
    ]);
    sim.set_state(state).await;
}

fn leaks(text: &str) -> Vec<String> {
    let ghp = ghp();
    HIDDEN
        .iter()
        .copied()
        .chain([ghp.as_str(), JWT])
        .filter(|s| text.contains(s))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_env_shows_ordinary_values_and_masks_secrets_in_results_and_resources() {
    let sim = Sim::start().await;
    plant(&sim).await;
    for surface in ["dynamic", "meta", "individual"] {
        let client = spawn(&sim.base(), sim.sim.api_key(), &["--tool-surface", surface]).await;
        let (tool, args) = shape(
            surface,
            "container.get",
            json!({"containerId": "web-1"}),
            false,
        );
        let r = call(&client, &tool, args).await;
        let sc = ok(&r).to_string();
        let t = text(&r);
        for shown in [
            "LOG_LEVEL=info",
            "REDIS_URL=redis://cache:6379",
            "DATABASE_URL=postgres://shop:********@db-1:5432/shop",
            "DB_PASSWORD=********",
            "UPSTREAM=********",
            "CALLBACK_SESSION=********",
        ] {
            assert!(t.contains(shown), "{surface}: {shown} in the text: {t}");
        }
        assert!(leaks(&t).is_empty(), "{surface}: {:?} in {t}", leaks(&t));
        // structuredContent keeps Arcane's values.
        assert_eq!(leaks(&sc).len(), 4, "{sc}");

        // The resource of the same container: the same judgement, and it says what it masked.
        let doc = client
            .read_resource(ReadResourceRequestParams::new(
                "arcane://environment/0/container/web-1".to_string(),
            ))
            .await
            .unwrap();
        let Some(ResourceContents::TextResourceContents { text: doc, .. }) = doc.contents.first()
        else {
            panic!("a text resource: {doc:?}");
        };
        for shown in ["LOG_LEVEL=info", "REDIS_URL=redis://cache:6379"] {
            assert!(
                doc.contains(shown),
                "{surface}: {shown} in the resource: {doc}"
            );
        }
        assert!(
            doc.contains("postgres://shop:********@db-1:5432/shop"),
            "{doc}"
        );
        assert!(
            leaks(doc).is_empty(),
            "{surface}: {:?} in {doc}",
            leaks(doc)
        );
        assert!(doc.contains("masked"), "{doc}");
        client.cancel().await.unwrap();
    }
    // --show-secrets: the text shows every value, as before.
    let client = spawn(&sim.base(), sim.sim.api_key(), &["--show-secrets"]).await;
    let r = call(
        &client,
        "arcane_execute_action",
        json!({"action": "container.get", "params": {"containerId": "web-1"}}),
    )
    .await;
    let t = text(&r);
    assert_eq!(leaks(&t).len(), 4, "--show-secrets shows them: {t}");
    client.cancel().await.unwrap();
}

/// A hostile or buggy Arcane that echoes the server's own API key — in an answer's body, in
/// an error, in a mutating call's error the audit log records: the key is in no result text,
/// no structuredContent (also with `--show-secrets`) and no audit line; what is around it
/// stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_key_echoed_by_arcane_is_masked_everywhere() {
    let sim = Sim::start().await;
    let key = sim.sim.api_key().to_string();
    let mut state = sim.state().await;
    let web = state["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "web-1")
        .expect("web-1 in the demo state");
    web["labels"]["echo.sent-header"] = json!(format!("X-API-Key {key}"));
    web["env"] = json!([format!("NOTE=the key {key} was seen"), "LOG_LEVEL=info"]);
    sim.set_state(state).await;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl").display().to_string();
    for extra in [&[][..], &["--show-secrets"][..]] {
        let mut args = vec!["--audit-log", audit.as_str()];
        args.extend_from_slice(extra);
        let client = spawn(&sim.base(), &key, &args).await;
        let (tool, a) = shape(
            "dynamic",
            "container.get",
            json!({"containerId": "web-1"}),
            false,
        );
        let r = call(&client, &tool, a).await;
        let (t, sc) = (text(&r), ok(&r).to_string());
        for (place, shown) in [("text", &t), ("structuredContent", &sc)] {
            assert!(
                !shown.contains(&key),
                "{extra:?}: the key in the {place}: {shown}"
            );
            assert!(
                shown.contains("LOG_LEVEL=info"),
                "{extra:?} {place}: {shown}"
            );
            assert!(shown.contains(MASK_TEXT), "{extra:?} {place}: {shown}");
        }
        // The container's resource.
        let doc = client
            .read_resource(ReadResourceRequestParams::new(
                "arcane://environment/0/container/web-1".to_string(),
            ))
            .await
            .unwrap();
        let doc = serde_json::to_string(&doc.contents).unwrap();
        assert!(doc.contains("LOG_LEVEL=info"), "{doc}");
        assert!(!doc.contains(&key), "the key in the resource: {doc}");
        // An error body echoing the key, on a read and on a mutating call (audited).
        sim.fault(
            json!({"path": "/containers/[^/]+$", "kind": "status", "status": 500,
            "body": {"success": false, "error": format!("invalid X-API-Key: {key} (echo)")}}),
        )
        .await;
        let r = call(
            &client,
            &tool,
            shape(
                "dynamic",
                "container.get",
                json!({"containerId": "web-1"}),
                false,
            )
            .1,
        )
        .await;
        let e = err(&r);
        assert!(!e.contains(&key) && e.contains("(echo)"), "{e}");
        sim.fault(json!({"path": "/restart$", "kind": "status", "status": 500,
            "body": {"success": false, "error": format!("upstream rejected key={key}")}}))
            .await;
        let (tool, a) = shape(
            "dynamic",
            "container.restart",
            json!({"containerId": "web-1"}),
            false,
        );
        let r = call(&client, &tool, a).await;
        let e = err(&r);
        assert!(!e.contains(&key) && e.contains("upstream rejected"), "{e}");
        client.cancel().await.unwrap();
    }
    let audit = std::fs::read_to_string(&audit).unwrap();
    assert!(
        audit.contains("container.restart") && audit.contains("upstream rejected"),
        "{audit}"
    );
    assert!(!audit.contains(&key), "{audit}");
}

const MASK_TEXT: &str = arcane_redact::MASK;
