//! End-to-end (`scripts/e2e.sh`): sign-in with Arcane (`--oauth-issuer self`)
//! driven by other programs — the TypeScript SDK's OAuth client with the sign-in page in
//! Debian's Chromium (tests/browser/oauth.mjs), the Python SDK's OAuth client
//! (tests/python/oauth_client.py), and two replicas behind Debian's HAProxy sharing a key file.
//! A missing program fails the test, saying what to install.

use serde_json::{Value, json};

use crate::process_support::{HttpServer, free_port, post_call_2026};
use crate::oauth_self::{
    PASSWORD, alice_keys, client_id, code_for, exchange, refresh, server_at, sim_with_people,
    users_seen,
};

/// The TypeScript SDK's OAuth client with the sign-in page in Chromium (tests/browser/oauth.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_signs_in_through_chromium() {
    let dir = crate::process_support::repo().join("tests/browser");
    assert!(
        dir.join("node_modules/puppeteer-core").is_dir(),
        "this test needs puppeteer-core and the MCP TypeScript SDK: run `npm ci --prefix \
         tests/browser --no-audit --no-fund`, and Chromium (apt-get install chromium)"
    );
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    sim.reset().await;
    let out = tokio::process::Command::new("node")
        .arg("oauth.mjs")
        .current_dir(&dir)
        .env("ARCANE_MCP_URL", &server.base)
        .env("ARCANE_SIM_URL", sim.base())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("this test needs Node.js: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "no report:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(
        report["steps"],
        json!(["alice", "refreshed", "deleted", "bob", "revoked"]),
        "{report:#}"
    );
    assert_eq!(
        report["deleted"],
        json!(["arcane-mcp: Claude"]),
        "{report:#}"
    );
    // The refresh after the deletion said why, and what to do.
    let answers = report["tokenAnswers"].as_array().unwrap();
    assert!(
        answers.iter().any(|a| a["grant"] == "refresh_token"
            && a["error"] == "invalid_grant"
            && a["description"]
                .as_str()
                .unwrap()
                .contains("no longer accepts the API key")
            && a["description"].as_str().unwrap().contains("sign in again")),
        "{answers:#?}"
    );
    // Calls ran as the person who signed in, each with their own key.
    let seen = users_seen(&sim).await;
    assert!(
        seen.iter().any(|u| u == "alice") && seen.iter().any(|u| u == "bob"),
        "{seen:?}"
    );
    assert!(seen.iter().all(|u| u == "alice" || u == "bob"), "{seen:?}");
}

/// The MCP Python SDK's OAuth client (`mcp.client.auth.OAuthClientProvider`, through its
/// Streamable HTTP client; tests/python/oauth_client.py): from the first 401 it finds our
/// metadata, registers, is sent to the page (its form posted as a browser would, alice's
/// password), exchanges the code with PKCE, calls as alice, and refreshes when its access token
/// lapses; once her key is deleted in Arcane the refresh is refused and the SDK signs her in
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_signs_in() {
    let sim = sim_with_people().await;
    let port = free_port();
    let server = server_at(&sim, port, &[]).await;
    let base = server.base.clone();
    sim.reset().await;
    let report = crate::e2e_oauth::sdk_report("python", &["self", &base, &sim.base()]).await;
    assert_eq!(report["problems"], json!([]), "{report:#}");
    assert_eq!(
        report["steps"],
        json!(["alice", "alice refreshed", "alice signed in again"]),
        "{report:#}"
    );
    assert_eq!(
        report["pages"], 2,
        "a sign-in page, and one after the key's deletion: {report:#}"
    );
    assert_eq!(
        report["deleted"],
        json!(["arcane-mcp: python-sdk-alice"]),
        "{report:#}"
    );
    assert_eq!(
        report["alice_resource"],
        format!("{base}/mcp"),
        "{report:#}"
    );
    assert_eq!(
        report["alice_authorization"]["resource"],
        format!("{base}/mcp"),
        "{report:#}"
    );
    assert_eq!(
        report["alice_authorization"]["scope"], "arcane:read arcane:write",
        "{report:#}"
    );
    assert_eq!(report["alice_refresh_rotated"], true, "{report:#}");
    let asked: Vec<String> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {} {}", r["method"], r["path"], r["status"]).replace('"', ""))
        .collect();
    for want in [
        "POST /mcp 401",
        "GET /.well-known/oauth-protected-resource/mcp 200",
        "GET /.well-known/oauth-authorization-server 200",
        "POST /register 201",
    ] {
        assert!(asked.iter().any(|a| a == want), "{want}: {asked:#?}");
    }
    // The code exchange, the refresh, the refresh refused once the key was deleted (saying
    // why and what to do), and the exchange of the second sign-in.
    let tokens: Vec<&str> = asked
        .iter()
        .filter(|a| a.starts_with("POST /token"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        tokens,
        [
            "POST /token 200",
            "POST /token 200",
            "POST /token 400",
            "POST /token 200"
        ],
        "{asked:#?}"
    );
    let refused = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/token" && r["status"] == 400)
        .unwrap();
    assert_eq!(refused["error"], "invalid_grant", "{refused}");
    assert!(
        refused["description"]
            .as_str()
            .unwrap()
            .contains("no longer accepts the API key")
            && refused["description"]
                .as_str()
                .unwrap()
                .ends_with("sign in again"),
        "{refused}"
    );
    // Calls ran as alice, with the key the sign-in made for her in Arcane (the second one,
    // the first deleted).
    let seen = users_seen(&sim).await;
    assert!(
        !seen.is_empty() && seen.iter().all(|u| u == "alice"),
        "{seen:?}"
    );
    let (_, keys) = alice_keys(&sim).await;
    assert_eq!(
        keys.iter()
            .map(|k| k["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        vec!["arcane-mcp: python-sdk-alice"]
    );
    server.stop().await;
}

/// HAProxy (Debian's) in front of two replicas sharing a key file, round-robin per request,
/// naming the replica that answered in `x-served-by`; killed when dropped.
struct Balancer {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Balancer {
    async fn start(port: u16, replicas: [u16; 2]) -> Balancer {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(
            &config,
            format!(
                "global\n  maxconn 256\ndefaults\n  mode http\n  timeout connect 5s\n  \
                 timeout client 60s\n  timeout server 60s\nfrontend mcp\n  bind 127.0.0.1:{port}\n  \
                 default_backend replicas\nbackend replicas\n  balance roundrobin\n  \
                 http-response set-header x-served-by %s\n  server one 127.0.0.1:{}\n  \
                 server two 127.0.0.1:{}\n",
                replicas[0], replicas[1]
            ),
        )
        .unwrap();
        let child = tokio::process::Command::new("haproxy")
            .arg("-f")
            .arg(&config)
            .arg("-db")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("this test needs HAProxy (apt-get install haproxy): {e}"));
        for _ in 0..200 {
            if reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return Balancer {
                    _child: child,
                    _dir: dir,
                };
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("HAProxy did not forward /healthz within 10 s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_behind_haproxy() {
    let sim = sim_with_people().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "c3".repeat(32)).unwrap();
    let (front, p1, p2) = (free_port(), free_port(), free_port());
    let public = format!("http://127.0.0.1:{front}");
    let args = [
        "--public-url",
        &public,
        "--oauth-issuer",
        "self",
        "--state-key-file",
        key.to_str().unwrap(),
    ];
    let arcane = sim.base();
    let start = |port| HttpServer::start_at(port, &arcane, Some(sim.sim.api_key()), &args, &[]);
    let (_one, _two) = (start(p1).await, start(p2).await);
    let _lb = Balancer::start(front, [p1, p2]).await;

    // The whole flow through the balancer: each step may land on either replica.
    let client = client_id(&public, "Claude").await;
    let (code, verifier) = code_for(&public, &client, &PASSWORD).await;
    let (status, tokens) = exchange(&public, &client, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let mut served = Vec::new();
    for _ in 0..4 {
        let (status, h, body) =
            post_call_2026(&public, &access, "phone", "container.list", json!({})).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("web-1"), "{body}");
        served.push(h["x-served-by"].to_str().unwrap().to_string());
    }
    assert!(
        served.iter().any(|s| s == "one") && served.iter().any(|s| s == "two"),
        "the calls alternate replicas: {served:?}"
    );
    let mut rt = tokens["refresh_token"].as_str().unwrap().to_string();
    for _ in 0..2 {
        let (status, next) = refresh(&public, &client, &rt).await;
        assert_eq!(status, 200, "{next}");
        rt = next["refresh_token"].as_str().unwrap().to_string();
    }

    // Confirmation round trips of the 2026-07-28 protocol: the question and the person's yes
    // land on alternating replicas, and each yes runs its kill once.
    let mut hops = 0;
    for round in 1..=4 {
        let (asked, at) = kill_at(&public, &access, json!({})).await;
        assert_eq!(asked["resultType"], "input_required", "{asked}");
        let yes = json!({
            "requestState": asked["requestState"],
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}
        });
        let (done, answered_at) = kill_at(&public, &access, yes).await;
        assert_ne!(done["isError"], true, "{done}");
        assert_ne!(done["resultType"], "input_required", "{done}");
        assert_eq!(sim.kills().await, round);
        hops += usize::from(at != answered_at);
        let (status, _, body) = post_call_2026(
            &public,
            &access,
            "phone",
            "container.start",
            json!({"containerId": "web-1"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    assert!(hops > 0, "no question was answered at the other replica");
    assert!(users_seen(&sim).await.iter().all(|u| u == "alice"));
}

/// A sessionless kill of web-1 through the balancer; its result and the replica that answered.
async fn kill_at(base: &str, token: &str, extra: Value) -> (Value, String) {
    let (result, h) = crate::process_support::kill_2026(base, token, "web-1", true, extra).await;
    (result, h["x-served-by"].to_str().unwrap().to_string())
}
