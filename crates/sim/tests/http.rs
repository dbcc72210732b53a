//! HTTP-level tests of the simulator. Each wire fact (docs/arcane-wire.md) the simulator implements is cited.

use crate::common;

use std::time::Duration;

use crate::story::ANONYMOUS_VOLUME;
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

#[tokio::test]
async fn openapi_and_health_are_public() {
    let s = start().await;
    // docs/arcane-wire.md#authentication: /api/openapi.json and /api/health need no credentials.
    let r = s.get("/openapi.json").anonymous().await;
    let doc = r.expect(200);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(doc["info"]["version"], "2.8.0");
    let h = s.get("/health").anonymous().await.expect(200);
    assert_eq!(h["status"], "UP");
}

#[tokio::test]
async fn yaml_spec_is_served_as_json() {
    let s = start_with(arcane_sim::SimConfig::new(spec_v1())).await;
    let r = s.get("/openapi.json").anonymous().await;
    assert_eq!(r.header("content-type"), "application/json");
    let doc = r.json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/environments/{id}/containers"].is_object());
}

#[tokio::test]
async fn auth_is_required_and_answers_problem_json() {
    let s = start().await;
    let list = "/environments/0/containers";
    // docs/arcane-wire.md#errors: no credentials → 401 `Unauthorized: valid authentication required`.
    let r = s.get(list).anonymous().await;
    assert_eq!(r.header("content-type"), "application/problem+json");
    let b = r.expect(401);
    assert_eq!(b["title"], "Unauthorized");
    assert_eq!(b["status"], 401);
    assert_eq!(b["detail"], "Unauthorized: valid authentication required");
    // docs/arcane-wire.md#errors: a bad API key → `Unauthorized: invalid API key`.
    let b = s.get(list).key("wrong").await.expect(401);
    assert_eq!(b["detail"], "Unauthorized: invalid API key");
    // docs/arcane-wire.md#authentication: X-API-Key is checked first, even when a good bearer follows.
    let bearer = format!("Bearer {}", arcane_sim::DEFAULT_API_KEY);
    s.get(list)
        .key("wrong")
        .header("Authorization", &bearer)
        .await
        .expect(401);
    // Bearer with the key works; so does X-API-Key.
    s.get(list)
        .bearer(arcane_sim::DEFAULT_API_KEY)
        .await
        .expect(200);
    s.get(list)
        .key(arcane_sim::DEFAULT_API_KEY)
        .await
        .expect(200);
    // docs/arcane-wire.md#authentication: query-string tokens are never accepted.
    let query = format!("{list}?token={}", arcane_sim::DEFAULT_API_KEY);
    s.get(&query).anonymous().await.expect(401);
}

#[tokio::test]
async fn custom_api_key() {
    let mut cfg = arcane_sim::SimConfig::new(spec_v2());
    cfg.api_key = "k-123".into();
    let s = start_with(cfg).await;
    assert_eq!(s.sim.api_key(), "k-123");
    s.get("/environments").await.expect(200);
}

/// Several users, each with its own key: the request log names the user of each request (never
/// its key), an unknown key is a 401 as on Arcane, and a viewer's writes are refused with
/// Arcane's `permission denied: <perm>`.
#[tokio::test]
async fn users_are_named_in_the_request_log_and_viewers_only_read() {
    let mut cfg = arcane_sim::SimConfig::new(spec_v2());
    cfg.users = vec![
        "alice=alice-key".parse().unwrap(),
        "bob=bob-key:viewer".parse().unwrap(),
    ];
    let s = start_with(cfg).await;
    let list = "/environments/0/containers";
    for key in ["alice-key", "bob-key", arcane_sim::DEFAULT_API_KEY] {
        s.get(list).key(key).await.expect(200);
    }
    let b = s.get(list).key("carol-key").await.expect(401);
    assert_eq!(b["detail"], "Unauthorized: invalid API key");
    // A bearer key names its user too.
    s.get(list).bearer("bob-key").await.expect(200);
    // The viewer cannot write; the admin can.
    let restart = "/environments/0/containers/web-1/restart";
    let b = s.post(restart).key("bob-key").await.expect(403);
    assert_eq!(b["detail"], "permission denied: containers:restart");
    s.post(restart).key("alice-key").await.expect(200);

    let log = s.hooks.requests().await.unwrap();
    let users: Vec<(&str, Value)> = log
        .iter()
        .map(|e| (e["method"].as_str().unwrap(), e["user"].clone()))
        .collect();
    assert_eq!(
        users,
        [
            ("GET", json!("alice")),
            ("GET", json!("bob")),
            ("GET", json!(arcane_sim::DEFAULT_USER)),
            ("GET", Value::Null),
            ("GET", json!("bob")),
            ("POST", json!("bob")),
            ("POST", json!("alice")),
        ]
    );
    assert_eq!(log[1]["role"], "viewer");
    assert_eq!(log[0]["role"], "admin");
    let text = serde_json::to_string(&log).unwrap();
    for key in [
        "alice-key",
        "bob-key",
        "carol-key",
        arcane_sim::DEFAULT_API_KEY,
    ] {
        assert!(!text.contains(key), "the log holds {key}: {text}");
    }
    // A malformed user is a clear error.
    let e = "alice".parse::<arcane_sim::SimUser>().unwrap_err();
    assert!(e.contains("NAME=KEY"), "{e}");
    let e = "=k".parse::<arcane_sim::SimUser>().unwrap_err();
    assert!(e.contains("NAME=KEY"), "{e}");
}

#[tokio::test]
async fn container_list_envelope_counts_and_pagination() {
    let s = start().await;
    let b = s
        .get("/environments/0/containers?start=2&limit=3&sort=name")
        .await
        .expect(200);
    assert_eq!(b["success"], true);
    // docs/arcane-wire.md#list-envelopes-and-paging: `counts` comes before `pagination` in the with-counts envelope.
    let keys: Vec<&String> = b.as_object().unwrap().keys().collect();
    let ci = keys.iter().position(|k| *k == "counts").unwrap();
    let pi = keys.iter().position(|k| *k == "pagination").unwrap();
    assert!(ci < pi);
    // docs/arcane-wire.md#container-list: the internal container is hidden from data and counts by default.
    // Demo env 0 has 7 visible containers: 4 running (web, api, db, grafana), paused cache,
    // exited prometheus and backup; anything not running counts as stopped.
    assert_eq!(
        b["counts"],
        json!({"runningContainers": 4, "stoppedContainers": 3, "totalContainers": 7})
    );
    // docs/arcane-wire.md#list-envelopes-and-paging: currentPage=start/limit+1, itemsPerPage=limit, totalPages=ceil(total/limit).
    let p = &b["pagination"];
    assert_eq!(p["currentPage"], 1); // 2/3+1 = 1 (never clamped to the real page)
    assert_eq!(p["itemsPerPage"], 3);
    assert_eq!(p["totalItems"], 7);
    assert_eq!(p["totalPages"], 3);
    assert_eq!(p["grandTotalItems"], 7);
    assert_eq!(b["data"].as_array().unwrap().len(), 3);
    // docs/arcane-wire.md (lists and sorting): sort=name sorts by name, ascending.
    let names: Vec<String> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["names"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["cache-1", "db-1", "grafana-1"]);
    // docs/arcane-wire.md#container-list: names have no leading slash.
    assert!(!names[0].starts_with('/'));
}

#[tokio::test]
async fn pagination_edge_cases() {
    let s = start().await;
    // docs/arcane-wire.md#list-envelopes-and-paging: limit -1 means all: one page, itemsPerPage = totalItems.
    let b = s.get("/environments/0/containers?limit=-1").await.json();
    assert_eq!(
        b["pagination"],
        json!({"totalPages": 1, "totalItems": 7, "currentPage": 1, "itemsPerPage": 7, "grandTotalItems": 7})
    );
    // docs/arcane-wire.md#list-envelopes-and-paging: a limit below -1 becomes 20.
    let b = s.get("/environments/0/containers?limit=-5").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 20);
    // docs/arcane-wire.md#list-envelopes-and-paging: containers and networks return everything for limit 0.
    let b = s.get("/environments/0/networks?limit=0").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 6);
    assert_eq!(b["data"].as_array().unwrap().len(), 6);
    // docs/arcane-wire.md#list-envelopes-and-paging: images and volumes treat limit 0 as 20.
    let b = s.get("/environments/0/images?limit=0").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 20);
    let b = s.get("/environments/0/volumes?limit=0").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 20);
    // docs/arcane-wire.md#list-envelopes-and-paging: there is no max limit on Docker-backed lists.
    let b = s.get("/environments/0/containers?limit=500").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 500);
    // docs/arcane-wire.md#list-envelopes-and-paging: totalPages is at least 1, even with no items; start beyond the end is allowed.
    let b = s
        .get("/environments/0/containers?search=zzz-nothing")
        .await
        .json();
    assert_eq!(b["pagination"]["totalPages"], 1);
    assert_eq!(b["pagination"]["totalItems"], 0);
    assert_eq!(b["data"], json!([]));
    let b = s
        .get("/environments/0/containers?start=40&limit=10")
        .await
        .json();
    assert_eq!(b["pagination"]["currentPage"], 5);
    assert_eq!(b["data"], json!([]));
    // docs/arcane-wire.md#list-envelopes-and-paging: DB-backed lists clamp limit>100 to 100 and ≤0 to 20; grandTotalItems 0.
    let b = s.get("/environments?limit=1000").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 100);
    assert_eq!(b["pagination"]["grandTotalItems"], 0);
    let b = s.get("/environments?limit=0").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 20);
    // docs/arcane-wire.md#list-envelopes-and-paging: the project list reports its grand total
    // only with a status filter (applied after the database's search); otherwise 0.
    let b = s.get("/environments/0/projects").await.json();
    assert_eq!(b["pagination"]["grandTotalItems"], 0);
    let b = s
        .get("/environments/0/projects?status=no-such-status")
        .await
        .json();
    assert_eq!(b["pagination"]["totalItems"], 0);
    assert!(
        b["pagination"]["grandTotalItems"].as_u64().unwrap() > 0,
        "{b}"
    );
    // docs/arcane-wire.md#list-envelopes-and-paging: projects clamp the same way.
    let b = s.get("/environments/0/projects?limit=-1").await.json();
    assert_eq!(b["pagination"]["itemsPerPage"], 20);
    // docs/arcane-wire.md#errors: a non-integer limit is a 422 `invalid integer` at query.limit.
    let b = s
        .get("/environments/0/containers?limit=abc")
        .await
        .expect(422);
    assert_eq!(b["detail"], "validation failed");
    assert_eq!(b["errors"][0]["message"], "invalid integer");
    assert_eq!(b["errors"][0]["location"], "query.limit");
}

#[tokio::test]
async fn search_sort_order_and_filters() {
    let s = start().await;
    // docs/arcane-wire.md#list-envelopes-and-paging: search is a case-insensitive substring; totalItems after, grandTotalItems before.
    let b = s.get("/environments/0/containers?search=WEB").await.json();
    let names: Vec<&str> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["names"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["web-1"]);
    assert_eq!(b["pagination"]["totalItems"], 1);
    assert_eq!(b["pagination"]["grandTotalItems"], 7);
    // docs/arcane-wire.md#container-list: counts are computed before search and filters.
    assert_eq!(b["counts"]["totalContainers"], 7);
    // docs/arcane-wire.md#list-envelopes-and-paging: only the exact value `desc` reverses.
    let b = s
        .get("/environments/0/containers?limit=-1&sort=name&order=desc")
        .await
        .json();
    assert_eq!(b["data"][0]["names"][0], "web-1");
    let b = s
        .get("/environments/0/containers?limit=-1&sort=name&order=DESC")
        .await
        .json();
    assert_eq!(b["data"][0]["names"][0], "api-1");
    // docs/arcane-wire.md, 2.8.x: an unknown sort leaves Docker's order (the state's, for containers).
    let b = s
        .get("/environments/0/containers?limit=-1&sort=bogus")
        .await
        .json();
    assert_eq!(b["data"][0]["names"][0], "web-1");
    // main: an unknown sort falls back to the first key (name).
    s.set_version("main").await;
    let b = s
        .get("/environments/0/containers?limit=-1&sort=bogus")
        .await
        .json();
    assert_eq!(b["data"][0]["names"][0], "api-1");
    s.set_version("2.8").await;
    let b = s
        .get("/environments/0/containers?limit=-1&sort=state")
        .await
        .json();
    assert_eq!(b["data"][0]["state"], "exited");
    // docs/arcane-wire.md#container-list: includeInternal shows the internal container in data and counts.
    let b = s
        .get("/environments/0/containers?includeInternal=true&limit=-1")
        .await
        .json();
    assert_eq!(b["counts"]["totalContainers"], 8);
    assert!(
        b["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["names"][0] == "arcane-edge-proxy")
    );
    // Standalone filter.
    let b = s
        .get("/environments/0/containers?standalone=true")
        .await
        .json();
    let names: Vec<&str> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["names"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["backup-1"]);
    // docs/arcane-wire.md#list-envelopes-and-paging: comma-separated filter values are OR'd.
    let b = s
        .get("/environments/0/containers?standalone=true,false")
        .await
        .json();
    assert_eq!(b["pagination"]["totalItems"], 7);
    // docs/arcane-wire.md#list-envelopes-and-paging: `groups` appears only with groupBy=project, standalone ones in "No Project".
    assert!(b.get("groups").is_none());
    let b = s
        .get("/environments/0/containers?groupBy=project&limit=-1")
        .await
        .json();
    let groups: Vec<&str> = b["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["groupName"].as_str().unwrap())
        .collect();
    assert!(groups.contains(&"webshop") && groups.contains(&"No Project"));
    // docs/arcane-wire.md#container-list: unpublished ports carry ip "invalid IP".
    let b = s.get("/environments/0/containers?search=db-1").await.json();
    assert_eq!(b["data"][0]["ports"][0]["ip"], "invalid IP");
    // Images sort by repo, byte-wise (`<` sorts before letters).
    let b = s
        .get("/environments/0/images?limit=-1&sort=repo")
        .await
        .json();
    assert_eq!(b["data"][0]["repo"], "<none>");
    assert_eq!(b["data"][1]["repo"], "alpine");
    let b = s
        .get("/environments/0/images?inUse=false&limit=-1")
        .await
        .json();
    assert!(
        b["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["inUse"] == false)
    );
}

#[tokio::test]
async fn container_lifecycle_changes_state() {
    let s = start().await;
    let b = s.get("/environments/0/containers/web-1").await.json();
    assert_eq!(b["data"]["state"]["status"], "running");
    let id = b["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 64);
    // Addressed by ID, name or ID prefix.
    s.get(&format!("/environments/0/containers/{}", &id[..12]))
        .await
        .expect(200);
    let b = s
        .post("/environments/0/containers/web-1/stop")
        .json(json!(null))
        .await
        .expect(200);
    assert!(b["data"]["message"].is_string());
    let b = s
        .get(&format!("/environments/0/containers/{id}"))
        .await
        .json();
    assert_eq!(b["data"]["state"]["status"], "exited");
    assert_eq!(b["data"]["state"]["running"], false);
    let b = s.get("/environments/0/containers/counts").await.json();
    assert_eq!(b["data"]["runningContainers"], 3);
    s.post("/environments/0/containers/web-1/start")
        .json(json!(null))
        .await;
    s.post("/environments/0/containers/web-1/pause")
        .json(json!(null))
        .await;
    let b = s.get("/environments/0/containers/web-1").await.json();
    assert_eq!(b["data"]["state"]["status"], "paused");
    s.post("/environments/0/containers/web-1/unpause")
        .json(json!(null))
        .await;
    s.post("/environments/0/containers/web-1/kill")
        .json(json!(null))
        .await;
    let b = s.get("/environments/0/containers/web-1").await.json();
    assert_eq!(b["data"]["state"]["status"], "exited");
    s.post("/environments/0/containers/web-1/restart")
        .json(json!(null))
        .await;
    let b = s.get("/environments/0/containers/web-1").await.json();
    assert_eq!(b["data"]["state"]["status"], "running");
    // Unpausing a running container is Docker's error, as a 500.
    let b = s
        .post("/environments/0/containers/web-1/unpause")
        .json(json!(null))
        .await
        .expect(500);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .starts_with("Failed to unpause container: Error response from daemon:")
    );
    // Delete: running needs force.
    s.delete("/environments/0/containers/web-1")
        .await
        .expect(500);
    s.delete("/environments/0/containers/web-1?force=true")
        .await
        .expect(200);
    s.get("/environments/0/containers/web-1").await.expect(404);
    // Create.
    let b = s
        .post("/environments/0/containers")
        .json(json!({"name": "new-1", "image": "alpine:3.20", "env": ["A=1"]}))
        .await
        .expect(200);
    assert_eq!(b["data"]["name"], "new-1");
    let b = s.get("/environments/0/containers/new-1").await.json();
    assert_eq!(b["data"]["config"]["env"], json!(["A=1"]));
    // The state hook shows the change; reset restores the seed.
    let state = s.hooks.state().await.unwrap();
    assert!(
        state["containers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "new-1")
    );
    s.hooks.reset().await.unwrap();
    s.get("/environments/0/containers/web-1").await.expect(200);
    s.get("/environments/0/containers/new-1").await.expect(404);
}

#[tokio::test]
async fn arcane_error_wording() {
    let s = start().await;
    // docs/arcane-wire.md#errors: GET container unknown → 404 with the chained Docker text.
    let b = s.get("/environments/0/containers/ghost").await.expect(404);
    assert_eq!(b["title"], "Not Found");
    assert_eq!(
        b["detail"],
        "Failed to retrieve container: container not found: Error response from daemon: No such container: ghost"
    );
    // docs/arcane-wire.md#errors: actions on an unknown container are a 500.
    for action in ["start", "stop", "restart", "kill", "pause", "unpause"] {
        let b = s
            .post(&format!("/environments/0/containers/ghost/{action}"))
            .json(json!(null))
            .await
            .expect(500);
        assert_eq!(
            b["detail"],
            format!(
                "Failed to {action} container: Error response from daemon: No such container: ghost"
            )
        );
    }
    s.delete("/environments/0/containers/ghost")
        .await
        .expect(500);
    // docs/arcane-wire.md#errors: image, project, environment, volume, network not-found texts.
    let b = s.get("/environments/0/images/ghost").await.expect(404);
    assert_eq!(
        b["detail"].as_str().unwrap(),
        "Image not found: inspect not found: Error response from daemon: No such image: ghost"
    );
    let b = s.get("/environments/0/projects/ghost").await.expect(404);
    assert_eq!(
        b["detail"].as_str().unwrap(),
        "Failed to get project details: project not found"
    );
    let b = s.get("/environments/ghost").await.expect(404);
    assert_eq!(b["detail"].as_str().unwrap(), "Environment not found");
    let b = s.get("/environments/0/volumes/ghost").await.expect(404);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .starts_with("Volume not found: ")
    );
    let b = s.get("/environments/0/networks/ghost").await.expect(404);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .starts_with("Network not found: ")
    );
    // docs/arcane-wire.md#errors: an unknown route is plain JSON 404 `API endpoint not found: <path>`.
    let r = s.get("/no/such/route").await;
    let b = r.expect(404);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(
        b,
        json!({"success": false, "error": "API endpoint not found: /api/no/such/route"})
    );
    // docs/arcane-wire.md#errors: remote environment errors are plain JSON {"success":false,"data":{"error"}}.
    let r = s.get("/environments/nope/containers").await;
    let b = r.expect(404);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(
        b,
        json!({"success": false, "data": {"error": "Environment not found"}})
    );
}

#[tokio::test]
async fn request_validation() {
    let s = start().await;
    // docs/arcane-wire.md#errors: missing required body → 400 `request body is required`.
    let b = s.post("/environments/0/images/pull").await.expect(400);
    assert_eq!(b["detail"], "request body is required");
    // docs/arcane-wire.md#errors: bad JSON → 400 `validation failed`.
    let b = s
        .post("/environments/0/images/pull")
        .header("content-type", "application/json")
        .body("{nope")
        .await
        .expect(400);
    assert_eq!(b["detail"], "validation failed");
    // docs/arcane-wire.md#errors: 422 for an unexpected property and for a missing required one.
    let b = s
        .post("/environments/0/images/pull")
        .json(json!({"x": 1}))
        .await
        .expect(422);
    assert_eq!(b["detail"], "validation failed");
    let errs = b["errors"].as_array().unwrap();
    assert!(errs.iter().any(|e| e["message"]
        == "expected required property imageName to be present"
        && e["location"] == "body"));
    assert!(
        errs.iter()
            .any(|e| e["message"] == "unexpected property" && e["location"] == "body.x")
    );
}

#[tokio::test]
async fn remote_environment_works_and_reports_agent_state() {
    let s = start().await;
    let b = s
        .get("/environments/env-2/containers?sort=name")
        .await
        .expect(200);
    let names: Vec<&str> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["names"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["cron-1", "worker-1"]);
    let b = s.get("/environments").await.json();
    assert_eq!(b["pagination"]["totalItems"], 2);
    // Disconnected agent → the 502 of docs/arcane-wire.md#errors `Edge agent is not connected`; disabled → 400.
    let mut state = s.hooks.state().await.unwrap();
    state["environments"][1]["agentConnected"] = json!(false);
    s.hooks.set_state(&state).await.unwrap();
    let b = s.get("/environments/env-2/containers").await.expect(502);
    assert_eq!(
        b,
        json!({"success": false, "data": {"error": "Edge agent is not connected"}})
    );
    // Management endpoints are served by the manager: test reports offline.
    let b = s
        .post("/environments/env-2/test")
        .json(json!({}))
        .await
        .expect(200);
    assert_eq!(b["data"]["status"], "offline");
    state["environments"][1]["enabled"] = json!(false);
    s.hooks.set_state(&state).await.unwrap();
    let b = s.get("/environments/env-2/images").await.expect(400);
    assert_eq!(b["data"]["error"], "Environment is disabled");
}

/// Inspect answers carry what Docker reports and Arcane 2.8 passes on: a network's members both
/// as `containers` (keyed by container ID, Docker's field names) and as `containersList`, each
/// with its own address and endpoint; an image's storage directories, layers and descriptor.
#[tokio::test]
async fn inspect_answers_carry_what_docker_reports() {
    let s = start().await;
    let b = s
        .get("/environments/0/networks/webshop_default")
        .await
        .json();
    let net = &b["data"];
    let list = net["containersList"].as_array().unwrap();
    let map = net["containers"].as_object().unwrap();
    assert!(list.len() >= 2, "{net}");
    assert_eq!(list.len(), map.len());
    let mut addresses = std::collections::HashSet::new();
    for member in list {
        let id = member["id"].as_str().unwrap();
        let same = &map[id];
        assert_eq!(same["Name"], member["name"]);
        assert_eq!(same["EndpointID"], member["endpointId"]);
        assert_eq!(same["IPv4Address"], member["ipv4Address"]);
        assert_eq!(member["endpointId"].as_str().unwrap().len(), 64);
        assert!(addresses.insert(member["ipv4Address"].as_str().unwrap().to_string()));
    }
    let subnet = net["ipam"]["config"][0]["subnet"].as_str().unwrap();
    let prefix = subnet.trim_end_matches("0.0/16");
    assert!(addresses.iter().all(|a| a.starts_with(prefix)), "{net}");

    let b = s
        .get("/environments/0/images/nginx:1.27-alpine")
        .await
        .json();
    let image = &b["data"];
    assert_eq!(image["graphDriver"]["name"], "overlay2");
    let layers = image["rootFs"]["layers"].as_array().unwrap();
    let lower = image["graphDriver"]["data"]["LowerDir"].as_str().unwrap();
    assert_eq!(lower.split(':').count(), layers.len() - 1);
    assert!(layers.iter().all(|l| l.as_str().unwrap().len() == 71));
    let digest = image["repoDigests"][0]
        .as_str()
        .unwrap()
        .split_once('@')
        .unwrap()
        .1;
    assert_eq!(image["descriptor"]["digest"], digest);
}

#[tokio::test]
async fn images_volumes_networks_swarm() {
    let s = start().await;
    let b = s
        .get("/environments/0/images/nginx:1.27-alpine")
        .await
        .json();
    assert_eq!(b["data"]["repoTags"][0], "nginx:1.27-alpine");
    assert!(
        b["data"]["repoDigests"][0]
            .as_str()
            .unwrap()
            .starts_with("nginx@sha256:")
    );
    // Arcane 2.8.0's image prune modes (backend/internal/image): `none`, unknown modes and
    // `olderThan` without `until` are refused with a 500; `dangling` removes only untagged
    // images.
    for (body, detail) in [
        (
            json!({"mode": "none"}),
            "Failed to prune images: image prune mode none is not allowed",
        ),
        (
            json!({"mode": "everything"}),
            "Failed to prune images: unsupported image prune mode: everything",
        ),
        (
            json!({"mode": "olderThan"}),
            "Failed to prune images: image prune mode olderThan requires until",
        ),
    ] {
        let b = s
            .post("/environments/0/images/prune")
            .json(body)
            .await
            .expect(500);
        assert_eq!(b["detail"].as_str(), Some(detail));
    }
    let b = s
        .post("/environments/0/images/prune")
        .json(json!({"mode": " dangling "}))
        .await
        .expect(200);
    assert_eq!(b["data"]["imagesDeleted"].as_array().unwrap().len(), 1);
    // Nothing dangling is left: nothing removed, 0 bytes.
    let b = s
        .post("/environments/0/images/prune")
        .json(json!({"dangling": true}))
        .await
        .json();
    assert_eq!(b["data"], json!({"imagesDeleted": [], "spaceReclaimed": 0}));
    // Without a mode or `dangling=true` the query's `dangling` is false: every unused image,
    // tagged ones too (a freshly pulled image is used by no container).
    s.post("/environments/0/images/pull")
        .json(json!({"imageName": "redis:7-alpine"}))
        .await
        .expect(200);
    let b = s.get("/environments/0/images/redis:7-alpine").await.json();
    assert_eq!(b["data"]["repoTags"][0], "redis:7-alpine", "{b}");
    let b = s
        .post("/environments/0/images/prune")
        .json(json!({}))
        .await
        .expect(200);
    assert!(
        !b["data"]["imagesDeleted"].as_array().unwrap().is_empty(),
        "{b}"
    );
    // Removing an image in use needs force.
    s.delete("/environments/0/images/postgres:16-alpine")
        .await
        .expect(500);
    s.delete("/environments/0/images/postgres:16-alpine?force=true")
        .await
        .expect(200);
    // Volumes.
    let b = s.get("/environments/0/volumes").await.json();
    assert_eq!(b["counts"], json!({"inuse": 2, "unused": 2, "total": 4}));
    let b = s
        .post("/environments/0/volumes")
        .json(json!({"name": "scratch"}))
        .await
        .expect(200);
    assert_eq!(b["data"]["name"], "scratch");
    let b = s
        .post("/environments/0/volumes/prune")
        .json(json!(null))
        .await
        .expect(200);
    let deleted: Vec<&str> = b["data"]["volumesDeleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Only the anonymous volume: Docker's prune keeps unused named ones (orphaned-cache,
    // scratch) unless told `all`.
    assert_eq!(deleted, vec![ANONYMOUS_VOLUME]);
    s.delete("/environments/0/volumes/webshop_db-data")
        .await
        .expect(500);
    // Networks.
    let b = s
        .post("/environments/0/networks")
        .json(json!({"name": "frontend", "options": {"driver": "bridge"}}))
        .await
        .expect(200);
    let id = b["data"]["id"].as_str().unwrap().to_string();
    let b = s
        .get(&format!("/environments/0/networks/{id}"))
        .await
        .json();
    assert_eq!(b["data"]["name"], "frontend");
    s.delete("/environments/0/networks/frontend")
        .await
        .expect(200);
    s.delete("/environments/0/networks/bridge")
        .await
        .expect(500);
    let b = s
        .post("/environments/0/networks/prune")
        .json(json!(null))
        .await
        .json();
    assert_eq!(b["data"]["networksDeleted"], json!(["unused-net"]));
    // Swarm.
    let b = s.get("/environments/0/swarm/services").await.json();
    assert_eq!(b["data"][0]["name"], "edge-proxy");
    s.post("/environments/0/swarm/services/edge-proxy/scale")
        .json(json!({"replicas": 5}))
        .await
        .expect(200);
    let b = s
        .get("/environments/0/swarm/services/edge-proxy")
        .await
        .json();
    assert_eq!(b["data"]["spec"]["Mode"]["Replicated"]["Replicas"], 5);
    let b = s.get("/environments/0/swarm/services").await.json();
    assert_eq!(b["data"][0]["replicas"], 5);
}

#[tokio::test]
async fn projects_and_compose_byte_sizes() {
    let s = start().await;
    let b = s.get("/environments/0/projects?sort=name").await.json();
    let names: Vec<&str> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["monitoring", "webshop"]);
    for suffix in ["", "/compose", "/runtime", "/updates"] {
        let b = s
            .get(&format!(
                "/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01{suffix}"
            ))
            .await
            .expect(200);
        // docs/arcane-wire.md#compose-byte-sizes: compose byte sizes are quoted decimals, "0" when unset.
        let svc = &b["data"]["services"][0];
        assert_eq!(svc["mem_limit"], "268435456");
        assert_eq!(svc["mem_reservation"], "0");
        assert_eq!(svc["memswap_limit"], "0");
        assert_eq!(svc["mem_swappiness"], "0");
        assert_eq!(svc["shm_size"], "0");
        assert_eq!(
            b["data"]["services"][1]["deploy"]["resources"]["limits"]["memory"],
            "536870912"
        );
        assert_eq!(
            b["data"]["services"][2]["volumes"][1]["tmpfs"]["size"],
            "67108864"
        );
    }
    let b = s
        .get("/environments/0/projects/a1c9e4b2-58d7-4f3a-8b6e-0c2d4f6a8b02")
        .await
        .json();
    assert_eq!(b["data"]["services"][1]["build"]["shm_size"], "0");
    // down / restart / destroy.
    s.post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/down")
        .json(json!(null))
        .await
        .expect(200);
    let b = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await
        .json();
    assert_eq!(b["data"]["status"], "stopped");
    assert_eq!(b["data"]["runningCount"], 0);
    s.post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/restart")
        .json(json!(null))
        .await
        .expect(200);
    let b = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await
        .json();
    assert_eq!(b["data"]["status"], "running");
    s.delete("/environments/0/projects/a1c9e4b2-58d7-4f3a-8b6e-0c2d4f6a8b02/destroy")
        .json(json!({"removeVolumes": true}))
        .await
        .expect(200);
    s.get("/environments/0/projects/a1c9e4b2-58d7-4f3a-8b6e-0c2d4f6a8b02")
        .await
        .expect(404);
    s.get("/environments/0/containers/grafana-1")
        .await
        .expect(404);
}

/// The lines of a whole JSON-lines answer.
fn read_lines(r: &Reply) -> Vec<Value> {
    r.text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn image_pull_stream_follows_wire() {
    let s = start().await;
    let r = s
        .post("/environments/0/images/pull")
        .json(json!({"imageName": "nginx", "tag": "1.28"}))
        .await;
    assert_eq!(r.status(), 200);
    // docs/arcane-wire.md#streams: stream headers.
    assert_eq!(r.header("content-type"), "application/x-json-stream");
    assert_eq!(
        r.header("cache-control"),
        "no-store, no-cache, must-revalidate"
    );
    assert_eq!(r.header("x-accel-buffering"), "no");
    let lines = read_lines(&r);
    // docs/arcane-wire.md#streams: activity line first, then {"log"} lines, then {"done":true}.
    assert_eq!(lines[0]["type"], "activity");
    assert!(lines[0]["activityId"].is_string());
    assert!(
        lines[1..lines.len() - 1]
            .iter()
            .all(|l| l.as_object().unwrap().len() == 1 && l["log"].is_string())
    );
    assert_eq!(lines.last().unwrap(), &json!({"done": true}));
    // docs/arcane-wire.md#streams: pulls show non-TTY `<id>: <status>` lines, no raw Docker objects.
    assert!(lines.iter().any(|l| {
        l["log"]
            .as_str()
            .is_some_and(|t| t.ends_with(": Pull complete"))
    }));
    assert!(
        lines
            .iter()
            .all(|l| l.get("status").is_none() && l.get("progressDetail").is_none())
    );
    // The pulled image is now listed.
    let b = s.get("/environments/0/images/nginx:1.28").await.json();
    assert_eq!(b["data"]["repoTags"][0], "nginx:1.28");
}

#[tokio::test]
async fn project_up_stream_changes_state() {
    let s = start().await;
    s.post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/down")
        .json(json!(null))
        .await;
    let r = s
        .post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up")
        .json(json!({}))
        .await;
    assert_eq!(r.header("content-type"), "application/x-json-stream");
    let lines = read_lines(&r);
    assert_eq!(lines[0]["type"], "activity");
    assert!(lines.iter().any(|l| {
        l["log"]
            .as_str()
            .is_some_and(|t| t.contains("Container web-1  Started"))
    }));
    assert_eq!(lines.last().unwrap(), &json!({"done": true}));
    let b = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await
        .json();
    assert_eq!(b["data"]["status"], "running");
    // Redeploy, pull and build streams.
    for action in ["redeploy", "pull", "build"] {
        let r = s
            .post(&format!(
                "/environments/0/projects/a1c9e4b2-58d7-4f3a-8b6e-0c2d4f6a8b02/{action}"
            ))
            .await;
        assert_eq!(r.status(), 200, "{action}");
        let lines = read_lines(&r);
        assert_eq!(lines.last().unwrap(), &json!({"done": true}), "{action}");
    }
    // docs/arcane-wire.md#streams: failures before the stream starts are problem+json.
    let r = s.post("/environments/0/projects/ghost/up").await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.header("content-type"), "application/problem+json");
}

#[tokio::test]
async fn cancelled_stream_is_visible() {
    let s = start().await;
    let b = s
        .hooks
        .set_config(&json!({"streamPaceMs": 100}))
        .await
        .unwrap();
    assert_eq!(b["streamPaceMs"].as_u64(), Some(100));
    let r = s
        .post("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up")
        .json(json!({}))
        .send()
        .await;
    let mut body = r.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("activity"));
    drop(body);
    // The server notices the disconnect on its next write(s).
    let mut aborted = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let streams = Value::from(s.hooks.streams().await.unwrap());
        if streams[0]["aborted"] == true {
            assert_eq!(streams[0]["completed"], false);
            assert_eq!(
                streams[0]["path"],
                "/api/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up"
            );
            aborted = true;
            break;
        }
    }
    assert!(aborted, "the stream was not reported aborted");
    let log = s.hooks.requests().await.unwrap();
    let e = log
        .iter()
        .find(|e| {
            e["path"] == "/api/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/up"
        })
        .unwrap();
    assert_eq!(e["aborted"], true);
    // The state change of an aborted `up` did not happen (webshop stays partially running).
    let b = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await
        .json();
    assert_eq!(b["data"]["status"], "partially running");
}

#[tokio::test]
async fn downloads_follow_wire() {
    let s = start().await;
    // docs/arcane-wire.md#downloads: image export is a binary tar with a quoted, sanitized filename.
    let r = s
        .get("/environments/0/images/ghcr.io%2Fgetarcaneapp%2Fdemo-api:2.3.1/export")
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.header("content-type"), "application/x-tar");
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"ghcr.io_getarcaneapp_demo-api_2.3.1.tar\""
    );
    let tar = r.bytes();
    assert_eq!(tar.len() % 512, 0);
    assert_eq!(&tar[257..262], b"ustar");
    // docs/arcane-wire.md#downloads: the edge mTLS CA is a PEM text.
    let r = s.get("/edge-mtls/ca").await;
    assert_eq!(r.header("content-type"), "application/x-pem-file");
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"ca.crt\""
    );
    assert!(r.text().starts_with("-----BEGIN CERTIFICATE-----"));
    // docs/arcane-wire.md#downloads: volume backups: gzip, unquoted <backupId>.tar.gz; an ID
    // that names no backup is Docker's missing-file error, a 500.
    let created = s
        .post("/environments/0/volumes/webshop_db-data/backups")
        .await
        .json();
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let r = s
        .get(&format!("/environments/0/volumes/backups/{id}/download"))
        .await;
    assert_eq!(r.header("content-type"), "application/x-gzip");
    assert_eq!(
        r.header("content-disposition"),
        format!("attachment; filename={id}.tar.gz")
    );
    assert_eq!(&r.bytes()[..2], &[0x1f, 0x8b]);
    let b = s
        .get("/environments/0/volumes/backups/bk-1/download")
        .await
        .expect(500);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .starts_with("failed to download: Error response from daemon: Could not find the file /volume/bk-1.tar.gz"),
        "{b}"
    );
    // docs/arcane-wire.md#downloads: mTLS bundle and files.
    let r = s.get("/environments/env-2/deployment/mtls/bundle").await;
    assert_eq!(r.header("content-type"), "application/zip");
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"staging-agent-env-2-mtls.zip\""
    );
    let r = s.get("/environments/env-2/deployment/mtls/agent.crt").await;
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"staging-agent-env-2.pem\""
    );
    let r = s.get("/environments/env-2/deployment/mtls/agent.key").await;
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"staging-agent-env-2.key\""
    );
    // docs/arcane-wire.md#downloads: workspace downloads are octet-stream with an unquoted basename.
    let r = s.get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/workspace/file/download?relativePath=conf/nginx.conf").await;
    assert_eq!(r.header("content-type"), "application/octet-stream");
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=nginx.conf"
    );
}

#[tokio::test]
async fn request_log_records_everything_but_secrets() {
    let s = start().await;
    s.get("/health").anonymous().await;
    s.post("/environments/0/containers/web-1/restart?x=1&y=%20")
        .header("Authorization", "Bearer also-secret")
        .await;
    s.post("/environments/0/images/pull")
        .json(json!({"imageName": "redis"}))
        .await;
    let log = s.hooks.requests().await.unwrap();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0]["path"], "/api/health");
    assert_eq!(log[1]["method"], "POST");
    assert_eq!(
        log[1]["path"],
        "/api/environments/0/containers/web-1/restart"
    );
    assert_eq!(log[1]["query"], "x=1&y=%20");
    assert_eq!(log[1]["body"], Value::Null);
    assert_eq!(log[2]["body"], json!({"imageName": "redis"}));
    let text = serde_json::to_string(&log).unwrap();
    assert!(!text.contains(arcane_sim::DEFAULT_API_KEY) && !text.contains("also-secret"));
    s.hooks.reset().await.unwrap();
    assert!(s.hooks.requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn hostile_values_round_trip_byte_for_byte() {
    let s = start().await;
    let hostile = [
        "\u{1b}[31mred\u{1b}[0m\u{1b}]0;title\u{7}",
        "abc\u{202e}cba\u{2066}x\u{2069}",
        "zero\u{200b}width\u{200d}\u{feff}",
        "**bold** _it_ [link](http://evil) | pipe `code` # head",
        "<script>alert(1)</script><!-- c -->",
        "line1\r\nline2\rline3\u{2028}\u{2029}\u{0}\u{85}",
    ];
    let mut state = s.hooks.state().await.unwrap();
    for (i, h) in hostile.iter().enumerate() {
        state["containers"][i]["labels"]["evil"] = json!(h);
        state["containers"][i]["status"] = json!(h);
    }
    state["projects"][0]["name"] = json!(hostile[3]);
    state["volumes"][2]["name"] = json!(hostile[4]);
    s.hooks.set_state(&state).await.unwrap();
    let b = s
        .get("/environments/0/containers?limit=-1&includeInternal=true")
        .await
        .json();
    let data = b["data"].as_array().unwrap();
    for (i, h) in hostile.iter().enumerate() {
        let name = state["containers"][i]["name"].as_str().unwrap();
        let c = data.iter().find(|c| c["names"][0] == name).unwrap();
        assert_eq!(
            c["labels"]["evil"].as_str().unwrap().as_bytes(),
            h.as_bytes()
        );
        assert_eq!(c["status"].as_str().unwrap().as_bytes(), h.as_bytes());
    }
    let b = s
        .get(&format!(
            "/environments/0/projects/{}",
            state["projects"][0]["id"].as_str().unwrap()
        ))
        .await
        .json();
    assert_eq!(b["data"]["name"].as_str().unwrap(), hostile[3]);
    let b = s.get("/environments/0/volumes?limit=-1").await.json();
    assert!(
        b["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"].as_str() == Some(hostile[4]))
    );
}

#[tokio::test]
async fn bad_hook_input_is_a_clear_error() {
    let s = start().await;
    let e = s
        .hooks
        .set_state(&json!({"containers": [{"name": "x"}]}))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert!(e.message().contains("missing field"), "{e}");
    let e = s
        .hooks
        .add_faults(&json!({"path": "(", "kind": "drop"}))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert!(e.message().contains("regex"), "{e}");
    let e = s
        .hooks
        .add_faults(&json!({"path": "x", "kind": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert!(e.message().contains("unknown variant"), "{e}");
    let e = s
        .hooks
        .set_config(&json!({"streamPaceMs": "fast"}))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
}

#[tokio::test]
async fn huma_body_details() {
    let s = start().await;
    let r = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await;
    // docs/arcane-wire.md#json-encoding: huma puts `$schema` first and sends a matching describedBy Link header.
    let link = r.header("link").to_string();
    assert!(
        link.ends_with("/api/schemas/BaseApiResponseProjectDetails.json>; rel=\"describedBy\""),
        "{link}"
    );
    let text = r.text();
    assert!(text.starts_with("{\"$schema\":\"http://"), "{text}");
    // docs/arcane-wire.md#json-encoding: nil slices become [] and `false` is emitted.
    let mut state = s.hooks.state().await.unwrap();
    state["projects"][0]["urls"] = Value::Null;
    s.hooks.set_state(&state).await.unwrap();
    let b = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01")
        .await
        .json();
    assert_eq!(b["data"]["urls"], json!([]));
    assert_eq!(b["data"]["isArchived"], false);
}

// ---------------------------------------------------------------------------------------
// Arcane 2.8.x's known wire bugs (docs/arcane-wire.md), reproduced by default; `main` behind the switch.
// Measured facts are cross-checked against marcoaperez/arcane-mcp-server's notes on a live
// Arcane 2.8.0 (the file is named at each assertion).

fn nginx_id() -> String {
    arcane_sim::state::demo_image_id("nginx:1.27-alpine")
}

#[tokio::test]
async fn path_parameters_are_not_decoded_on_2_8() {
    let s = start().await;
    let id = nginx_id();
    let escaped = id.replace(':', "%3A");
    // docs/arcane-wire.md (path parameters); measured in marcoaperez/arcane-mcp-server docs/balances/2026-08-19-f4.md
    // (§5.2): an escaped `sha256%3A…` reaches Docker still encoded.
    let b = s
        .get(&format!("/environments/0/images/{escaped}"))
        .await
        .expect(404);
    assert_eq!(
        b["detail"],
        format!(
            "Image not found: inspect not found: Error response from daemon: No such image: {escaped}"
        )
    );
    let b = s
        .delete(&format!("/environments/0/images/{escaped}"))
        .await
        .expect(500);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .contains("invalid reference format")
    );
    // Same file, same table: the update check of an encoded ID is a 500.
    s.get(&format!("/environments/0/image-updates/check/{escaped}"))
        .await
        .expect(500);
    // Sent raw, `:` works: by ID and by name:tag.
    let b = s
        .get(&format!("/environments/0/images/{id}"))
        .await
        .expect(200);
    assert_eq!(b["data"]["id"].as_str(), Some(id.as_str()));
    s.get("/environments/0/images/nginx:1.27-alpine")
        .await
        .expect(200);
    // A reference with `/` cannot reach the route: `%2F` stays literal…
    let b = s
        .get("/environments/0/images/ghcr.io%2Fgetarcaneapp%2Fdemo-api:2.3.1")
        .await
        .expect(404);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .ends_with("ghcr.io%2Fgetarcaneapp%2Fdemo-api:2.3.1")
    );
    // …and a raw `/` splits the segment (no such route).
    let b = s
        .get("/environments/0/images/ghcr.io/getarcaneapp/demo-api:2.3.1")
        .await
        .expect(404);
    assert!(
        b["error"]
            .as_str()
            .unwrap()
            .starts_with("API endpoint not found")
    );
    // Export decodes its parameter itself.
    s.get("/environments/0/images/ghcr.io%2Fgetarcaneapp%2Fdemo-api%3A2.3.1/export")
        .await
        .expect(200);
    // One non-default escape anywhere makes every parameter raw (`-` needs no escaping).
    let b = s
        .get("/environments/0/containers/web%2D1")
        .await
        .expect(404);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .ends_with("No such container: web%2D1")
    );
    // An escape Go would write itself (space) is decoded.
    let b = s
        .get("/environments/0/containers/no%20such")
        .await
        .expect(404);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .ends_with("No such container: no such")
    );
    // Remote environments: the manager decodes the path before proxying it.
    let worker = arcane_sim::state::demo_image_id("ghcr.io/acme/worker:1.4.0");
    s.get(&format!(
        "/environments/env-2/images/{}",
        worker.replace(':', "%3A")
    ))
    .await
    .expect(200);
    s.get("/environments/env-2/images/ghcr.io%2Facme%2Fworker%3A1.4.0")
        .await
        .expect(404);
    // main decodes every path parameter.
    s.set_version("main").await;
    s.get(&format!("/environments/0/images/{escaped}"))
        .await
        .expect(200);
    s.get("/environments/0/images/ghcr.io%2Fgetarcaneapp%2Fdemo-api%3A2.3.1")
        .await
        .expect(200);
    s.get("/environments/0/containers/web%2D1")
        .await
        .expect(200);
}

#[tokio::test]
async fn health_is_an_empty_500_while_docker_is_up() {
    let s = start().await;
    // docs/arcane-wire.md (health; arcane#3638, both releases); measured 5/5 in marcoaperez/arcane-mcp-server
    // docs/balances/2026-08-16-f2.md.
    for version in ["2.8", "main"] {
        s.set_version(version).await;
        let r = s.head("/environments/0/system/health").await;
        assert_eq!(r.status(), 500, "{version}");
        assert!(r.bytes().is_empty());
    }
    s.get("/environments/0/system/docker/info")
        .await
        .expect(200);
}

#[tokio::test]
async fn vulnerability_scans_are_per_image() {
    let s = start().await;
    let alpine = arcane_sim::state::demo_image_id("alpine:3.20");
    let nginx = nginx_id();
    // Never scanned: result and summary 404 (marcoaperez/arcane-mcp-server
    // docs/balances/2026-08-19-f4.md §5.3: the same 404 for an unknown image).
    for id in [
        alpine.as_str(),
        "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    ] {
        for suffix in ["", "/summary"] {
            let b = s
                .get(&format!(
                    "/environments/0/images/{id}/vulnerabilities{suffix}"
                ))
                .await
                .expect(404);
            assert_eq!(b["detail"], "Vulnerability scan not found");
        }
    }
    // 2.8.x: the list of a never-scanned image is an empty page, like a clean one.
    let b = s
        .get(&format!(
            "/environments/0/images/{alpine}/vulnerabilities/list"
        ))
        .await
        .expect(200);
    assert_eq!(b["data"], json!([]));
    assert_eq!(
        b["pagination"],
        json!({"totalPages": 1, "totalItems": 0, "currentPage": 1, "itemsPerPage": 20, "grandTotalItems": 0})
    );
    // Batch summaries omit images without a scan (vulnerabilidades.e2e.ts, "el batch de
    // summaries omite lo no escaneado").
    let b = s
        .post("/environments/0/images/vulnerabilities/summaries")
        .json(json!({"imageIds": [nginx, alpine]}))
        .await
        .expect(200);
    let map = b["data"]["summaries"].as_object().unwrap();
    assert_eq!(map.keys().collect::<Vec<_>>(), vec![&nginx]);
    assert_eq!(map[&nginx]["status"], "completed");
    // The scanned image: sorted by a real key, byte-wise.
    let b = s
        .get(&format!(
            "/environments/0/images/{nginx}/vulnerabilities/list?sort=pkgName"
        ))
        .await
        .json();
    let pkgs: Vec<&str> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pkgName"].as_str().unwrap())
        .collect();
    assert_eq!(pkgs, vec!["busybox", "libexpat", "openssl"]);
    // Ignoring a CVE does not change the counts (measured: marcoaperez/arcane-mcp-server
    // docs/balances/2026-08-19-f4.md §5.3, "los contadores no cambian").
    s.post("/environments/0/vulnerabilities/ignore")
        .json(json!({"imageId": nginx, "vulnerabilityId": "CVE-2024-6119", "pkgName": "openssl"}))
        .await
        .expect(200);
    let b = s
        .get(&format!(
            "/environments/0/images/{nginx}/vulnerabilities/summary"
        ))
        .await
        .json();
    assert_eq!(b["data"]["summary"]["total"], 3);
    assert_eq!(b["data"]["summary"]["high"], 1);
    // A scan answers at once with `scanning` and an activity (vulnerabilidades.e2e.ts, "el acuse
    // del scan es asíncrono y trae activityId").
    let b = s
        .post(&format!(
            "/environments/0/images/{alpine}/vulnerabilities/scan"
        ))
        .json(json!(null))
        .await
        .expect(200);
    assert_eq!(b["data"]["status"], "scanning");
    assert!(!b["data"]["activityId"].as_str().unwrap().is_empty());
    let b = s
        .get(&format!(
            "/environments/0/images/{alpine}/vulnerabilities/summary"
        ))
        .await
        .expect(200);
    assert_eq!(b["data"]["summary"]["total"], 0);
    // main: the list of a never-scanned image is a 404.
    s.hooks.reset().await.unwrap();
    s.set_version("main").await;
    s.get(&format!(
        "/environments/0/images/{alpine}/vulnerabilities/list"
    ))
    .await
    .expect(404);
}

/// Walks a list page by page; returns every name seen, in order.
async fn walk(s: &Sim, list: &str, query: &str) -> (Vec<String>, u64) {
    let mut names = Vec::new();
    let mut start = 0;
    loop {
        let b = s
            .get(&format!("{list}?start={start}&limit=2{query}"))
            .await
            .json();
        let total = b["pagination"]["totalItems"].as_u64().unwrap();
        for item in b["data"].as_array().unwrap() {
            names.push(item["name"].as_str().unwrap().to_string());
        }
        start += 2;
        if start as u64 >= total {
            return (names, total);
        }
    }
}

#[tokio::test]
async fn page_walks_need_a_real_sort_key_on_2_8() {
    let s = start().await;
    for list in ["/environments/0/volumes", "/environments/0/networks"] {
        // With a real key every item comes exactly once.
        let (names, total) = walk(&s, list, "&sort=name").await;
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        sorted.dedup();
        assert_eq!(sorted.len() as u64, total, "{list}");
        // Without one (or with `id`, which no Docker list binds) Docker's order changes
        // between requests: walks repeat and skip items while the totals stay right
        // (marcoaperez/arcane-mcp-server src/__e2e__/paginacion.e2e.ts; arcane#3645).
        let mut broken = false;
        for _ in 0..4 {
            let (names, total) = walk(&s, list, "&sort=id").await;
            assert_eq!(names.len() as u64, total);
            let mut u = names.clone();
            u.sort();
            u.dedup();
            broken |= u.len() as u64 != total;
        }
        assert!(
            broken,
            "{list}: 2.8.x page walks without a key must be unreliable"
        );
    }
    // main: the first key is the default, so walks are stable.
    s.set_version("main").await;
    let (names, total) = walk(&s, "/environments/0/volumes", "").await;
    let mut u = names.clone();
    u.dedup();
    assert_eq!(u.len() as u64, total);
}

#[tokio::test]
async fn sorting_is_byte_wise_and_by_real_keys_only() {
    let s = start().await;
    let mut state = s.hooks.state().await.unwrap();
    state["volumes"][0]["name"] = json!("Zeta");
    s.hooks.set_state(&state).await.unwrap();
    // Go's strings.Compare: upper case sorts before lower case (and digits before both: the
    // anonymous volume's hex name comes first).
    let b = s
        .get("/environments/0/volumes?sort=name&limit=-1")
        .await
        .json();
    assert!(
        b["data"][0]["name"].as_str().unwrap().starts_with("361a9b"),
        "{b}"
    );
    assert_eq!(b["data"][1]["name"], "Zeta");
    // Containers: an unknown key leaves Docker's order; images sort by `repo`, not `id`.
    let a = s
        .get("/environments/0/images?sort=id&limit=-1")
        .await
        .json();
    let b = s.get("/environments/0/images?limit=-1").await.json();
    assert_eq!(a["data"], b["data"]);
    let c = s
        .get("/environments/0/images?sort=repo&limit=-1")
        .await
        .json();
    assert_ne!(b["data"], c["data"]);
}

#[tokio::test]
async fn smaller_2_8_differences() {
    let s = start().await;
    // Projects are found by database ID only.
    let b = s.get("/environments/0/projects/webshop").await.expect(404);
    assert_eq!(
        b["detail"],
        "Failed to get project details: project not found"
    );
    // hasBuildDirective: always false on 2.8.x (arcane#3685; marcoaperez/arcane-mcp-server
    // docs/auditorias/2026-08-19-has-build-directive-upstream.md), true on main for `build:`.
    let monitoring = "/environments/0/projects/a1c9e4b2-58d7-4f3a-8b6e-0c2d4f6a8b02";
    let b = s.get(monitoring).await.json();
    assert_eq!(b["data"]["hasBuildDirective"], false);
    // Swarm off on env-2: every swarm route is a 409.
    let b = s
        .get("/environments/env-2/swarm/services")
        .await
        .expect(409);
    assert_eq!(b["detail"], "Swarm mode is not enabled");
    s.get("/environments/0/swarm/services").await.expect(200);
    // Non-edge environments carry neither `connected` nor `apiKey`.
    let b = s.get("/environments/env-2").await.json();
    assert!(b["data"].get("connected").is_none() && b["data"].get("apiKey").is_none());
    // Cancelling a finished activity: 409 (marcoaperez/arcane-mcp-server
    // src/__e2e__/observabilidad.e2e.ts, "activities.cancel sobre una activity terminada").
    let text = s
        .post("/environments/0/images/pull")
        .json(json!({"imageName": "redis:7"}))
        .await
        .text();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let activity = first["activityId"].as_str().unwrap();
    let b = s
        .post(&format!("/environments/0/activities/{activity}/cancel"))
        .json(json!(null))
        .await
        .expect(409);
    assert_eq!(b["detail"], "activity is not running");
    // Build workspace (marcoaperez/arcane-mcp-server src/__e2e__/builds.e2e.ts): mkdir and
    // delete are 204 with no body, traversal is refused.
    let r = s.post("/environments/0/builds/browse/mkdir?path=ctx").await;
    assert_eq!(r.status(), 204);
    assert!(r.bytes().is_empty());
    let b = s.get("/environments/0/builds/browse").await.json();
    let entry = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "ctx")
        .cloned()
        .unwrap();
    assert_eq!(entry["isDirectory"], true);
    // Arcane 2.8.0's entries carry relativePath (the entry's path) and editable false.
    assert_eq!(entry["relativePath"], entry["path"]);
    assert_eq!(entry["editable"], false);
    let b = s
        .get("/environments/0/builds/browse?path=../..")
        .await
        .expect(400);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .contains("path traversal not allowed")
    );
    s.delete("/environments/0/builds/browse?path=ctx")
        .await
        .expect(204);
    // Update check of a ref not pulled: 2.8.0 fails, later releases say `not_pulled`
    // (arcane#3631).
    let b = s
        .get("/environments/0/image-updates/check/busybox:9")
        .await
        .expect(500);
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .contains("No such image: busybox:9")
    );
    // The by-refs and batch maps leave out references not pulled locally.
    let b = s
        .get("/environments/0/image-updates/by-refs?imageRefs=nginx:1.27-alpine,busybox:9")
        .await
        .json();
    let keys: Vec<&String> = b["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["nginx:1.27-alpine"]);
    let b = s
        .post("/environments/0/image-updates/check-batch")
        .json(json!({"imageRefs": ["busybox:9", "alpine:3.20"]}))
        .await
        .json();
    let keys: Vec<&String> = b["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["alpine:3.20"]);
    s.set_version("main").await;
    let b = s
        .get("/environments/0/image-updates/check/busybox:9")
        .await
        .expect(200);
    assert_eq!(b["data"]["updateType"].as_str(), Some("not_pulled"));
    let b = s.get(monitoring).await.json();
    assert_eq!(b["data"]["hasBuildDirective"], true);
}

/// Database-backed resources are collections: create stores (ID, timestamps), list/get return
/// it without its credential, update merges, delete removes; reset forgets them.
#[tokio::test]
async fn registries_are_a_stateful_collection() {
    let s = start().await;
    let body = json!({"url": "registry.acme.test", "username": "ci", "token": "tok-secret-1",
                      "description": "ACME", "insecure": false, "enabled": true,
                      "registryType": "generic", "repositoryNames": [], "awsAccessKeyId": "",
                      "awsSecretAccessKey": "", "awsRegion": ""});
    let r = s.post("/container-registries").json(body).await;
    assert!((200..300).contains(&r.status()), "{}", r.text());
    let created = r.json();
    let id = created["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(created["data"]["url"], "registry.acme.test");
    assert!(created["data"]["createdAt"].is_string());
    assert!(!created.to_string().contains("tok-secret-1"), "{created}");

    let list = s.get("/container-registries").await.json();
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["pagination"]["totalItems"], 1);
    assert!(!list.to_string().contains("tok-secret-1"));

    let r = s
        .put(&format!("/container-registries/{id}"))
        .json(
            json!({"url": "registry.acme.test", "username": "ci", "token": "tok-secret-1",
                      "description": "ACME mirror", "insecure": false, "enabled": true,
                      "registryType": "generic", "repositoryNames": [], "awsAccessKeyId": "",
                      "awsSecretAccessKey": "", "awsRegion": ""}),
        )
        .await;
    assert!((200..300).contains(&r.status()), "{}", r.text());
    let got = s.get(&format!("/container-registries/{id}")).await.json();
    assert_eq!(got["data"]["description"], "ACME mirror");
    assert_eq!(got["data"]["username"], "ci");

    let state = s.hooks.state().await.unwrap();
    assert_eq!(
        state["collections"]["items"]["/container-registries"][0]["token"], "tok-secret-1",
        "the credential is stored, only never answered"
    );

    let r = s.delete(&format!("/container-registries/{id}")).await;
    assert!((200..300).contains(&r.status()), "{}", r.text());
    s.get(&format!("/container-registries/{id}"))
        .await
        .expect(404);
    let list = s.get("/container-registries").await.json();
    assert_eq!(list["data"], json!([]));
}

/// A volume backup is made in its volume's collection and deleted by its ID alone
/// (`…/volumes/backups/{backupId}`): the volume's list no longer shows it, its archive is gone,
/// and a second delete is a 404.
#[tokio::test]
async fn a_volume_backup_is_deleted_by_its_id() {
    let s = start().await;
    let list = "/environments/0/volumes/webshop_db-data/backups";
    let created = s.post(list).await.json();
    let id = created["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        s.get(list).await.json()["data"].as_array().unwrap().len(),
        1
    );
    let r = s
        .delete(&format!("/environments/0/volumes/backups/{id}"))
        .await;
    assert!((200..300).contains(&r.status()), "{}", r.text());
    assert_eq!(s.get(list).await.json()["data"], json!([]));
    s.get(&format!("/environments/0/volumes/backups/{id}/download"))
        .await
        .expect(500);
    s.delete(&format!("/environments/0/volumes/backups/{id}"))
        .await
        .expect(404);
}

/// A project created from compose text gets its services' containers on `up`, labelled with
/// the compose project; the counts follow.
#[tokio::test]
async fn project_create_then_up_starts_its_services() {
    let s = start().await;
    let project = json!({"name": "shop", "composeContent":
        "services:\n  web:\n    image: nginx:1.27-alpine\n    ports: [\"8081:80\"]\n  jobs:\n    image: alpine:3.20\n"});
    let r = s
        .post("/environments/0/projects")
        .json(json!({"project": project.to_string()}))
        .await;
    assert!((200..300).contains(&r.status()), "{}", r.text());
    let created = r.json();
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let counts = s.get("/environments/0/projects/counts").await.json();
    assert_eq!(counts["data"]["totalProjects"], 3, "{counts}");
    let r = s.post(&format!("/environments/0/projects/{id}/up")).await;
    assert!(r.text().ends_with("{\"done\":true}\n"));
    let state = s.hooks.state().await.unwrap();
    let mine: Vec<&Value> = state["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["labels"]["com.docker.compose.project"] == "shop")
        .collect();
    assert_eq!(mine.len(), 2);
    assert!(mine.iter().all(|c| c["state"] == "running"));
    let info = s.get("/environments/0/system/docker/info").await.json();
    let dash = s.get("/environments/0/dashboard").await.json();
    let total = state["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["environmentId"] == "0")
        .count();
    assert_eq!(info["Containers"], total, "{info}");
    assert_eq!(info["Name"], "local");
    assert!(dash.to_string().contains("shop-web-1"), "{dash}");
    assert_eq!(
        dash["data"]["imageUsageCounts"]["totalImages"],
        state["images"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["environmentId"] == "0")
            .count()
    );
    let ports = s.get("/environments/0/ports").await.json();
    assert!(
        ports["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["containerName"] == "shop-web-1" && p["hostPort"] == 8081),
        "{ports}"
    );
}

/// Found by scripts/schemathesis.sh: a `limit` near the int64 maximum overflowed the page
/// arithmetic (a panic and a dropped connection). Arcane's Go arithmetic wraps instead: one page.
#[tokio::test]
async fn a_huge_limit_is_one_page_not_an_overflow() {
    let s = start().await;
    for list in ["containers", "images", "networks", "volumes"] {
        let b = s
            .get(&format!(
                "/environments/0/{list}?start=3&limit=9223372036854775807"
            ))
            .await
            .expect(200);
        assert_eq!(b["pagination"]["totalPages"], 1, "{list}: {b}");
        assert_eq!(b["pagination"]["currentPage"], 1, "{list}: {b}");
        assert_eq!(
            b["pagination"]["itemsPerPage"],
            i64::MAX,
            "{list}: {}",
            b["pagination"]
        );
    }
    let b = s
        .get("/environments?limit=9223372036854775807")
        .await
        .expect(200);
    assert_eq!(b["pagination"]["itemsPerPage"], 100, "{b}");
}

/// Found by scripts/schemathesis.sh: `null` for an optional field of a create or update was
/// stored and answered as `null` where the answer's schema has a boolean or a string. Arcane's
/// request types take such fields as Go pointers: `null` is "not given" (a registry's
/// `enabled` defaults to true, `insecure` to false; an update leaves the field alone).
#[tokio::test]
async fn null_fields_of_a_collection_write_are_not_given() {
    let s = start().await;
    let registry = |enabled: Value, insecure: Value| {
        json!({"url": "registry.example", "username": "u", "token": "t",
               "description": null, "insecure": insecure, "enabled": enabled,
               "registryType": "generic", "repositoryNames": null,
               "awsAccessKeyId": "", "awsSecretAccessKey": "", "awsRegion": ""})
    };
    let created = s
        .post("/container-registries")
        .json(registry(Value::Null, Value::Null))
        .await
        .expect(200);
    let reg = &created["data"];
    assert_eq!(reg["enabled"], true, "{reg}");
    assert_eq!(reg["insecure"], false, "{reg}");
    assert!(reg.get("description").is_none(), "{reg}");
    assert_eq!(reg["repositoryNames"], json!([]), "{reg}");
    let id = reg["id"].as_str().unwrap();
    let updated = s
        .put(&format!("/container-registries/{id}"))
        .json(registry(json!(false), Value::Null))
        .await
        .expect(200);
    assert_eq!(updated["data"]["enabled"], false);
    assert_eq!(updated["data"]["insecure"], false);
    let updated = s
        .put(&format!("/container-registries/{id}"))
        .json(registry(Value::Null, json!(true)))
        .await
        .expect(200);
    assert_eq!(updated["data"]["enabled"], false, "null leaves it alone");
    assert_eq!(updated["data"]["insecure"], true);
}

/// Found by scripts/schemathesis.sh: a download named after a path with control characters
/// was an empty 500 without Content-Type (the header value was refused). Go sends the name
/// (CR and LF as spaces); the simulator sends it with every control character as a space.
#[tokio::test]
async fn a_download_name_with_control_characters_is_still_a_download() {
    let s = start().await;
    for path in [
        "/environments/0/builds/browse/download?path=a%0Cb%05.txt",
        "/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/workspace/file/download?relativePath=x%10y%0D%0Az",
    ] {
        let r = s.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.header("content-type"), "application/octet-stream");
        let d = r.header("content-disposition");
        assert!(d.starts_with("attachment; filename="), "{d}");
        assert!(!d.chars().any(|c| c.is_control()), "{d:?}");
    }
}
