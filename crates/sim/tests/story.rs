//! The demo world's story, as Arcane 2.8.0 and Docker report it: a paused container that will
//! not start, healthchecks in the list's status and the inspect's state, Arcane's event log
//! (with what container actions add to it), volume sizes that name the listed volumes, and
//! prunes that keep named volumes unless told `all`.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// The demo's unused anonymous volume (Docker names those itself: 64 hex digits).
pub const ANONYMOUS_VOLUME: &str =
    "361a9b2f8ac37d9a735d79b470529a5c60f1ae18bbdff265222f5b4a5fe3e26c";

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

#[tokio::test]
async fn a_paused_container_refuses_start_with_dockers_words() {
    let s = start().await;
    // Docker's 409 `cannot start a paused container, try unpause instead`, which Arcane 2.8.0
    // answers as its 500 with its prefix.
    let b = s
        .post("/environments/0/containers/cache-1/start")
        .await
        .expect(500);
    assert_eq!(
        b["detail"],
        "Failed to start container: Error response from daemon: cannot start a paused container, try unpause instead"
    );
    let c = s.get("/environments/0/containers/cache-1").await.json();
    assert_eq!(c["data"]["state"]["status"], "paused", "still paused: {c}");
    // Nor is it removed without force.
    let b = s
        .delete("/environments/0/containers/cache-1")
        .await
        .expect(500);
    assert_eq!(
        b["detail"],
        "Failed to delete container: Error response from daemon: cannot remove container \"/cache-1\": container is paused and must be unpaused first"
    );
    s.post("/environments/0/containers/cache-1/unpause")
        .await
        .expect(200);
    let c = s.get("/environments/0/containers/cache-1").await.json();
    assert_eq!(c["data"]["state"]["status"], "running");
}

#[tokio::test]
async fn volume_prune_keeps_named_volumes_and_only_all_removes_them() {
    let s = start().await;
    // POST …/volumes/prune: Arcane 2.8.0 prunes without `all`, so Docker removes only the
    // unused anonymous volume; the unused named `orphaned-cache` stays.
    let b = s
        .post("/environments/0/volumes/prune")
        .json(json!(null))
        .await
        .expect(200);
    assert_eq!(b["data"]["volumesDeleted"], json!([ANONYMOUS_VOLUME]));
    assert_eq!(b["data"]["spaceReclaimed"], 268_435_456);
    let left = s.get("/environments/0/volumes?limit=-1").await.json();
    assert!(names(&left["data"]).contains(&"orphaned-cache".to_string()));
    // The system prune honours its volumes mode: `anonymous` (or any but `none`/`all`) as
    // above, `all` the named ones too, never a volume a container mounts.
    s.hooks.reset().await.unwrap();
    let b = s
        .post("/environments/0/system/prune")
        .json(json!({"volumes": {"mode": "anonymous"}}))
        .await
        .expect(200);
    assert_eq!(b["data"]["volumesDeleted"], json!([ANONYMOUS_VOLUME]));
    let b = s
        .post("/environments/0/system/prune")
        .json(json!({"volumes": {"mode": "none"}}))
        .await
        .expect(200);
    assert_eq!(b["data"]["volumesDeleted"], json!([]));
    let b = s
        .post("/environments/0/system/prune")
        .json(json!({"volumes": {"mode": "all"}}))
        .await
        .expect(200);
    assert_eq!(b["data"]["volumesDeleted"], json!(["orphaned-cache"]));
    assert_eq!(b["data"]["volumeSpaceReclaimed"], 10_485_760);
    let left = s.get("/environments/0/volumes?limit=-1").await.json();
    assert_eq!(
        names(&left["data"]),
        vec!["monitoring_grafana-data", "webshop_db-data"]
    );
}

#[tokio::test]
async fn volume_sizes_name_the_volumes_the_list_has() {
    let s = start().await;
    let sizes = s.get("/environments/0/volumes/sizes").await.expect(200);
    let list = s.get("/environments/0/volumes?limit=-1").await.json();
    assert_eq!(names(&sizes["data"]), names(&list["data"]));
    for v in list["data"].as_array().unwrap() {
        let size = sizes["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|z| z["name"] == v["name"])
            .unwrap();
        assert_eq!(size["size"], v["size"], "{v}");
        let users = v["containers"].as_array().unwrap().len();
        assert_eq!(size["refCount"], json!(users), "{v}");
    }
    // Another environment's sizes are its own volumes.
    let sizes = s.get("/environments/env-2/volumes/sizes").await.expect(200);
    assert_eq!(names(&sizes["data"]), vec!["jobs_worker-data"]);
}

#[tokio::test]
async fn healthchecks_show_as_docker_reports_them() {
    let s = start().await;
    let list = s.get("/environments/0/containers?search=db-1").await.json();
    assert_eq!(list["data"][0]["status"], "Up 5 hours (healthy)");
    let c = s.get("/environments/0/containers/db-1").await.json();
    let health = &c["data"]["state"]["health"];
    assert_eq!(health["status"], "healthy", "{c}");
    assert_eq!(health["failingStreak"], 0);
    let probe = &health["log"][4];
    assert_eq!(probe["exitCode"], 0);
    assert_eq!(
        probe["output"],
        "/var/run/postgresql:5432 - accepting connections\n"
    );
    assert_eq!(
        c["data"]["config"]["healthcheck"]["test"],
        json!(["CMD-SHELL", "pg_isready -U shop -d shop"])
    );
    // A container without a healthcheck has neither.
    let c = s.get("/environments/0/containers/web-1").await.json();
    assert!(c["data"]["state"].get("health").is_none(), "{c}");
    assert!(c["data"]["config"].get("healthcheck").is_none(), "{c}");
    // The project's runtime reports the service's health, and only where there is one.
    let p = s
        .get("/environments/0/projects/7d3f5a9e-2c41-4b8e-9f10-3a6c8e2d1b01/runtime")
        .await
        .json();
    let svc = |n: &str| {
        p["data"]["runtimeServices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(svc("db")["health"], "healthy");
    assert!(svc("web").get("health").is_none());
    // A restart begins the healthcheck again, as Docker does.
    s.post("/environments/0/containers/db-1/restart")
        .await
        .expect(200);
    let list = s.get("/environments/0/containers?search=db-1").await.json();
    assert_eq!(
        list["data"][0]["status"],
        "Up Less than a second (health: starting)"
    );
}

#[tokio::test]
async fn backup_1s_failure_is_told_by_its_logs_db_1s_logs_and_the_event_log() {
    let s = start().await;
    let st = s.hooks.state().await.unwrap();
    let c = |n: &str| {
        st["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap()
            .clone()
    };
    let (backup, db) = (c("backup-1"), c("db-1"));
    let backup_logs = format!("{}{}", backup["logs"], backup["stderr"]);
    assert!(
        backup_logs.contains("db-1")
            && backup_logs.contains("the database system is shutting down"),
        "backup-1 names what it could not reach and why: {backup_logs}"
    );
    assert!(
        db["stderr"]
            .to_string()
            .contains("received fast shutdown request"),
        "db-1's own log tells of the restart"
    );
    let get = s.get("/environments/0/containers/backup-1").await.json();
    assert_eq!(get["data"]["state"]["exitCode"], 1);
    assert_eq!(get["data"]["state"]["finishedAt"], backup["finishedAt"]);
    // Arcane's event log: db-1 restarted just before backup-1 was started.
    let ev = s.get("/events?type=container").await.expect(200);
    let events = ev["data"].as_array().unwrap();
    let restart = events
        .iter()
        .find(|e| e["type"] == "container.restart")
        .unwrap();
    assert_eq!(restart["resourceId"], db["id"]);
    let started = events
        .iter()
        .find(|e| e["type"] == "container.start")
        .unwrap();
    assert_eq!(started["resourceId"], backup["id"]);
    assert!(restart["timestamp"].as_str() < started["timestamp"].as_str());
    assert!(
        started["timestamp"].as_str() < get["data"]["state"]["finishedAt"].as_str(),
        "backup-1 failed after it was started"
    );
}

#[tokio::test]
async fn container_actions_are_logged_as_arcane_logs_them() {
    let s = start().await;
    let before = s.get("/events/stats").await.expect(200)["data"].clone();
    s.post("/environments/0/containers/backup-1/restart")
        .await
        .expect(200);
    s.post("/environments/0/containers/cache-1/start")
        .await
        .expect(500);
    let ev = s
        .get("/events/environment/0?sort=timestamp&order=desc&limit=3")
        .await
        .expect(200);
    let e = &ev["data"];
    // Newest first: the refused start's error, the start itself, then the restart.
    assert_eq!(e[0]["type"], "container.error");
    assert_eq!(e[0]["severity"], "error");
    assert_eq!(
        e[0]["metadata"]["error"],
        "Error response from daemon: cannot start a paused container, try unpause instead"
    );
    assert_eq!(e[1]["type"], "container.start");
    assert_eq!(e[1]["resourceId"], "cache-1");
    // Arcane 2.8.0 passes the literal `name` as every container event's resource name.
    assert_eq!(e[1]["title"], "Container started: name");
    assert_eq!(e[2]["type"], "container.restart");
    assert_eq!(e[2]["resourceId"], "backup-1");
    assert_eq!(e[2]["username"], "arcane");
    let after = s.get("/events/stats").await.expect(200)["data"].clone();
    assert_eq!(after["total"], before["total"].as_i64().unwrap() + 3);
    assert_eq!(after["error"], before["error"].as_i64().unwrap() + 1);
    // Delete one; an unknown one is Arcane's 500.
    let id = e[0]["id"].as_str().unwrap();
    s.delete(&format!("/events/{id}")).await.expect(200);
    let b = s.delete(&format!("/events/{id}")).await.expect(500);
    assert_eq!(b["detail"], "Failed to delete event: event not found");
}
