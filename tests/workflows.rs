//! Operator jobs end to end: each test is one job an operator brings to an assistant, told as
//! the calls a model makes. On the dynamic surface every action is first found with
//! `arcane_find_action` in plain words (no IDs known in advance); IDs come from earlier
//! results. Each job runs on all three surfaces (one simulator and one server per surface) and
//! asserts on the simulator's state afterwards.
//!
//! The jobs that deploy and update run again on every surface with a client of each form of MCP
//! tasks (docs/tasks.md): with the 2026-07-28 extension each long-running action is answered
//! with a task, polled to its end; with the 2025-11-25 form every call of a tool that takes a
//! task asks for one and reads it with `tasks/result`. Either way the dynamic surface's
//! transcript is the same golden file, byte for byte.
//!
//! The dynamic surface's transcript of each job is kept in `tests/golden/jobs/`, and
//! `docs/jobs.md` is generated from those files; `UPDATE_GOLDEN=1 cargo test --test integration workflows::`
//! rewrites both in one run.

use crate::{golden_support, server_support};

use std::path::PathBuf;

use serde_json::{Value, json};
use server_support::*;

/// The three surfaces, and the individual surface once more in the flat client profile
/// (`--client-profile flat`), where objects and arrays of objects are passed as JSON text.
const SURFACES: [&str; 4] = ["dynamic", "meta", "individual", FLAT];
const FLAT: &str = "individual-flat";

/// A parameter as a flat tool declares it: an object, or an array holding objects, as JSON text.
fn flat_value(v: Value) -> Value {
    let nested = match &v {
        Value::Object(_) => true,
        Value::Array(items) => items.iter().any(Value::is_object),
        _ => false,
    };
    if nested {
        Value::String(v.to_string())
    } else {
        v
    }
}

/// A surface's name with this suffix runs the job with a client that speaks MCP tasks.
const AS_TASKS: &str = "+tasks";
/// A surface's name with this suffix runs the job with a client of the 2025-11-25 form of
/// tasks: every call of a tool that takes a task (`execution.taskSupport`) is task-augmented.
const AS_CORE_TASKS: &str = "+coretasks";

/// The client of a job: one that declares the tasks extension, or one that declares nothing.
#[derive(Clone, Copy)]
struct Speaker {
    tasks: bool,
}

impl rmcp::ClientHandler for Speaker {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        if self.tasks {
            info.capabilities = rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build();
        }
        info
    }
}

/// One job on one surface: the simulator, the server, and the transcript of what was called
/// and read.
struct Story {
    surface: &'static str,
    /// Whether the client speaks tasks.
    tasks: bool,
    /// Whether it speaks them in the 2025-11-25 form.
    core: bool,
    sim: Sim,
    client: rmcp::service::RunningService<rmcp::RoleClient, Speaker>,
    catalog: arcane_catalog::Catalog,
    transcript: String,
    /// Values of this run written otherwise in the transcript (real, shown): see [`Story::stand_in`].
    stand_ins: Vec<(String, String)>,
}

impl Story {
    async fn begin(surface: &'static str) -> Story {
        Story::begin_with(surface, &[]).await
    }

    /// [`Story::begin`], the server started with `extra` arguments too.
    async fn begin_with(surface: &'static str, extra: &[&str]) -> Story {
        let (surface, tasks, core) = match (
            surface.strip_suffix(AS_TASKS),
            surface.strip_suffix(AS_CORE_TASKS),
        ) {
            (Some(s), _) => (s, true, false),
            (_, Some(s)) => (s, true, true),
            _ => (surface, false, false),
        };
        let sim = Sim::start().await;
        let mut args: Vec<&str> = if surface == FLAT {
            vec!["--tool-surface", "individual", "--client-profile", "flat"]
        } else {
            vec!["--tool-surface", surface]
        };
        args.extend_from_slice(extra);
        let speaker = Speaker {
            tasks: tasks && !core,
        };
        let client = spawn_with(speaker, &sim.base(), sim.sim.api_key(), &args).await;
        Story {
            surface,
            tasks,
            core,
            sim,
            client,
            catalog: server_support::catalog(),
            transcript: String::new(),
            stand_ins: Vec::new(),
        }
    }

    /// Writes `real` as `shown` in the kept transcript: a value the server takes from the wall
    /// clock (a history entry's ID and time) differs on each run, and the transcript must not.
    fn stand_in(&mut self, real: &str, shown: &str) {
        self.stand_ins.push((real.to_string(), shown.to_string()));
    }

    /// A call as a client that speaks tasks makes it: a long-running action is answered with a
    /// task, polled until it ends; its result is what the client reads. Anything else is
    /// answered at once.
    async fn call_as_task(
        &self,
        id: &str,
        tool: &str,
        args: &Value,
    ) -> rmcp::model::CallToolResult {
        use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskPayload};
        let long = self
            .catalog
            .resolve(id)
            .is_some_and(|a| a.request.long_running);
        let request = CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let response = crate::fixtures::guarded(self.client.call_tool_once(request))
            .await
            .expect("tools/call answers");
        let task = match response {
            CallToolResponse::Task(t) => {
                assert!(long, "{id} on {} is no task", self.surface);
                t.task.task_id
            }
            CallToolResponse::Complete(r) => {
                assert!(!long, "{id} on {} runs as a task", self.surface);
                return r;
            }
            other => panic!("{id}: {other:?}"),
        };
        let done = crate::fixtures::guarded(async {
            loop {
                let t = self
                    .client
                    .get_task(GetTaskParams::new(&task))
                    .await
                    .expect("tasks/get answers")
                    .task;
                if t.status().is_terminal() {
                    return t;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await;
        let result = match done.payload {
            TaskPayload::Completed { result } => Value::Object(result),
            // A failed call's error carries its whole result.
            TaskPayload::Failed { error } => error["data"].clone(),
            other => panic!("{id} ended {other:?}"),
        };
        serde_json::from_value(result).expect("a CallToolResult")
    }

    /// A call as a 2025-11-25 client makes it: with a `task` field when the tool takes one
    /// (any action of an execute tool), answered with a task at once; `tasks/result` waits for
    /// its result, which is what the client reads. Other tools are called plainly.
    async fn call_as_core_task(
        &self,
        id: &str,
        tool: &str,
        args: &Value,
    ) -> rmcp::model::CallToolResult {
        use rmcp::model::{ClientRequest, CustomRequest};
        let takes = match self.surface {
            "dynamic" => tool == "arcane_execute_action",
            "meta" => true,
            _ => self
                .catalog
                .resolve(id)
                .is_some_and(|a| a.request.long_running),
        };
        if !takes {
            return call(&self.client, tool, args.clone()).await;
        }
        let send = |method: &str, params: Value| {
            let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
            async move {
                let answer = crate::fixtures::guarded(self.client.send_request(request))
                    .await
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                serde_json::to_value(answer).unwrap()
            }
        };
        let created = send(
            "tools/call",
            json!({"name": tool, "arguments": args, "task": {"ttl": 60000}}),
        )
        .await;
        let task = created["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} on {}: a task, got {created}", self.surface))
            .to_string();
        assert_eq!(created["task"]["status"], "working", "{created}");
        let mut result = send("tasks/result", json!({"taskId": task})).await;
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
            "{result}"
        );
        result.as_object_mut().unwrap().remove("_meta");
        serde_json::from_value(result).expect("a CallToolResult")
    }

    fn record(&mut self, tool: &str, args: &Value, text: &str) {
        if self.surface != "dynamic" {
            return;
        }
        const MAX_LINES: usize = 30;
        let mut shown: Vec<&str> = text.lines().take(MAX_LINES).collect();
        let more = text.lines().count().saturating_sub(MAX_LINES);
        let tail = format!("… ({more} more lines)");
        if more > 0 {
            shown.push(&tail);
        }
        self.transcript.push_str(&format!(
            "**`{tool}`** `{}`\n\n```text\n{}\n```\n\n",
            args,
            shown.join("\n").replace("```", "'''")
        ));
    }

    /// Looks the action up in plain words (dynamic surface) and checks the search names it.
    async fn find(&mut self, words: &str, id: &str) {
        if self.surface != "dynamic" {
            return;
        }
        let args = json!({"query": words, "limit": 5});
        let r = call(&self.client, "arcane_find_action", args.clone()).await;
        // The search answers at once, for a client that speaks tasks too.
        let t = text(&r);
        assert!(
            t.contains(id),
            "searching {words:?} finds {id} among the first five:\n{t}"
        );
        self.record("arcane_find_action", &args, &t);
    }

    async fn call(
        &mut self,
        id: &str,
        params: Value,
        confirm: bool,
    ) -> rmcp::model::CallToolResult {
        let (tool, args) = if self.surface == FLAT {
            let (tool, args) = shape("individual", id, params, confirm);
            let flat = args
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), flat_value(v.clone())))
                .collect();
            (tool, Value::Object(flat))
        } else {
            shape(self.surface, id, params, confirm)
        };
        let r = if self.core {
            self.call_as_core_task(id, &tool, &args).await
        } else if self.tasks {
            self.call_as_task(id, &tool, &args).await
        } else {
            call(&self.client, &tool, args.clone()).await
        };
        let t = text(&r);
        self.record(&tool, &args, &t);
        r
    }

    /// Runs an action that must succeed; returns (structuredContent, text). The model passes
    /// `"confirm": true` where the tool says the action is asked (its impact class), as the
    /// tool definitions tell it to.
    async fn run(&mut self, id: &str, params: Value) -> (Value, String) {
        static CATALOG: std::sync::OnceLock<arcane_catalog::Catalog> = std::sync::OnceLock::new();
        let asked = CATALOG
            .get_or_init(server_support::catalog)
            .get(id)
            .is_some_and(|a| a.needs_confirmation());
        let r = self.call(id, params, asked).await;
        let t = text(&r);
        assert!(!is_error(&r), "{id} on {}: {t}", self.surface);
        (r.structured_content.clone().unwrap_or(Value::Null), t)
    }

    /// Runs a destructive action with the confirmation it needs.
    async fn run_confirmed(&mut self, id: &str, params: Value) -> (Value, String) {
        let r = self.call(id, params, true).await;
        let t = text(&r);
        assert!(!is_error(&r), "{id} on {}: {t}", self.surface);
        (r.structured_content.clone().unwrap_or(Value::Null), t)
    }

    /// The model's answer to the person. Each fact it rests on is a phrase of what the tools
    /// answered in this job, so the answer says nothing the model did not read.
    fn answer(&mut self, text: &str, read: &[&str]) {
        // Only the dynamic surface keeps a transcript; the others checked the same answers.
        if self.surface != "dynamic" {
            return;
        }
        for fact in read {
            assert!(
                self.transcript.contains(fact),
                "the answer rests on {fact:?}, which no answer of this job said:\n{}",
                self.transcript
            );
        }
        self.transcript
            .push_str(&format!("**Answer**\n\n> {text}\n\n"));
    }

    async fn end(mut self, job: &str) {
        for (real, shown) in &self.stand_ins {
            self.transcript = self.transcript.replace(real, shown);
        }
        if self.surface == "dynamic" {
            if self.tasks {
                // As tasks, the model reads the very texts of the plain calls.
                let name = format!("jobs/{job}.md");
                let kept = std::fs::read_to_string(golden_dir().join(format!("{job}.md")))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(self.transcript, kept, "{name} as tasks");
            } else {
                golden(job, &self.transcript);
            }
        }
        self.client.cancel().await.ok();
        self.sim.sim.shutdown().await;
    }
}

fn golden_dir() -> PathBuf {
    golden_support::dir().join("jobs")
}

fn updating() -> bool {
    golden_support::updating()
}

/// Compares a job's transcript with its golden file (or writes it with UPDATE_GOLDEN=1).
fn golden(job: &str, transcript: &str) {
    let name = format!("jobs/{job}.md");
    if updating() {
        let _one_at_a_time = REWRITE.lock().unwrap_or_else(|e| e.into_inner());
        golden_support::assert(&name, transcript);
        std::fs::write(docs_path(), assemble_docs().0).unwrap();
        return;
    }
    golden_support::assert(&name, transcript);
}

/// The `id` of a created item, wherever the answer keeps it.
fn id_of(v: &Value) -> String {
    v.get("id")
        .or_else(|| v.pointer("/item/id"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("an id in {v}"))
        .to_string()
}

/// A container's name: Docker lists them as `names`.
fn name_of(c: &Value) -> String {
    c.pointer("/names/0")
        .or_else(|| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

async fn collection(sim: &Sim, key: &str) -> Vec<Value> {
    sim.state().await["collections"]["items"][key]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// The jobs.

/// 1. Deploy a new app from a compose text and an `.env`.
async fn deploy_from_compose(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("create a new compose project", "project.create")
        .await;
    let compose = "services:\n  web:\n    image: nginx:1.27-alpine\n    ports:\n      - \"8081:80\"\n  worker:\n    image: ghcr.io/acme/worker:1.4.0\n";
    // Plain parameters: the executor encodes Arcane's JSON-text `project` part.
    // A new project runs what its compose text says on the next deploy: confirmed
    // (`confirm: always`).
    let (v, _) = s
        .run_confirmed(
            "project.create",
            json!({"name": "shop", "composeContent": compose, "envContent": "MODE=prod\n"}),
        )
        .await;
    let id = id_of(&v);
    s.find("deploy project up", "project.up").await;
    s.run("project.up", json!({"projectId": id})).await;
    s.find("list containers", "container.list").await;
    let (v, _) = s.run("container.list", json!({"search": "shop"})).await;
    let names: Vec<String> = items(&v).iter().map(name_of).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    s.find("container logs", "container.logs").await;
    let (_, t) = s
        .run(
            "container.logs",
            json!({"containerId": "shop-web-1", "tail": 10, "timeoutSeconds": 1}),
        )
        .await;
    assert!(t.contains("web started"), "{t}");
    let st = s.sim.state().await;
    let p = st["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "shop")
        .expect("the project is stored")
        .clone();
    assert_eq!(p["envContent"], "MODE=prod\n");
    assert_eq!(p["status"], "running");
    let running = st["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["labels"]["com.docker.compose.project"] == "shop" && c["state"] == "running")
        .count();
    assert_eq!(running, 2);
    s.end("01-deploy-from-compose").await;
}

/// 2. Find out why a container keeps failing, and restart it.
///
/// The model reads what a person would (the container's logs, its state, Arcane's event log,
/// the dependency the logs name), and its answer says only what those answers showed.
async fn failing_container(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("list containers", "container.list").await;
    let (v, _) = s.run("container.list", json!({"search": "backup"})).await;
    let c = items(&v)
        .into_iter()
        .find(|c| c["state"] == "exited")
        .expect("an exited container");
    let name = name_of(&c);
    s.find("container logs", "container.logs").await;
    let (_, logs) = s
        .run(
            "container.logs",
            json!({"containerId": name, "tail": 20, "timeoutSeconds": 1}),
        )
        .await;
    // The logs name the dependency and what it answered.
    assert!(
        logs.contains("\"db-1\"") && logs.contains("the database system is shutting down"),
        "{logs}"
    );
    s.find("inspect container details", "container.get").await;
    let (v, t) = s.run("container.get", json!({"containerId": name})).await;
    assert!(t.contains("exited"), "{t}");
    assert_eq!(
        v.pointer("/state/exitCode"),
        Some(&json!(1)),
        "the exit code: {v}"
    );
    let failed_at = v["state"]["finishedAt"].as_str().unwrap().to_string();
    // Why was db-1 shutting down? Arcane's log of what was done.
    s.find("list recent events", "event.list").await;
    let (v, _) = s.run("event.list", json!({"type": "container"})).await;
    let events = items(&v);
    let restart = events
        .iter()
        .find(|e| e["type"] == "container.restart")
        .expect("a restart in the event log");
    let started = events
        .iter()
        .find(|e| e["type"] == "container.start" && e["resourceId"] == c["id"])
        .expect("backup-1's start in the event log");
    assert!(restart["timestamp"].as_str() < started["timestamp"].as_str());
    let (v, _) = s.run("container.get", json!({"containerId": "db-1"})).await;
    assert_eq!(
        v["id"], restart["resourceId"],
        "the restarted container is db-1"
    );
    assert_eq!(v.pointer("/state/health/status"), Some(&json!("healthy")));
    assert!(
        v["state"]["startedAt"].as_str().unwrap() > failed_at.as_str(),
        "db-1 came back after backup-1 gave up"
    );
    s.find("restart container", "container.restart").await;
    s.run("container.restart", json!({"containerId": name}))
        .await;
    let c = s.sim.container(&name).await.unwrap();
    assert_eq!(c["state"], "running");
    s.answer(
        "backup-1 exited with code 1 at 10:00:07: it tried four times to dump the shop \
         database from db-1, and each time db-1 answered \"the database system is shutting \
         down\". Arcane's event log says why: db-1 was restarted at 09:59:58, two seconds \
         before backup-1 was started, and it was up again only at 10:00:10 — three seconds \
         after backup-1 gave up. db-1 is healthy now (its pg_isready healthcheck passes), so \
         nothing was wrong with backup-1 itself: I restarted it, and it is running. A backup \
         started while db-1 restarts will fail the same way.",
        &[
            "exitCode=1",
            "finishedAt=2025-06-01T10:00:07",
            "attempt 4 of 4",
            "FATAL:  the database system is shutting down",
            "container.restart",
            "2025-06-01T09:59:58",
            "2025-06-01T10:00:00",
            "startedAt=2025-06-01T10:00:10",
            "status=healthy",
            "pg_isready",
            "Container restarted successfully",
        ],
    );
    s.end("02-failing-container").await;
}

/// 3. Update an app to newer images: check, pull, redeploy, prune the old image.
async fn update_app_images(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("list projects", "project.list").await;
    let (v, _) = s.run("project.list", json!({"search": "webshop"})).await;
    let project = items(&v)
        .into_iter()
        .find(|p| p["name"] == "webshop")
        .expect("webshop");
    let id = id_of(&project);
    s.find("check project image updates", "project.updates")
        .await;
    let (v, _) = s.run("project.updates", json!({"projectId": id})).await;
    assert_eq!(
        v.pointer("/updateInfo/hasUpdate"),
        Some(&json!(true)),
        "{v}"
    );
    s.find("pull project images", "project.pull").await;
    s.run("project.pull", json!({"projectId": id})).await;
    s.find("redeploy project", "project.redeploy").await;
    s.run("project.redeploy", json!({"projectId": id})).await;
    s.find("prune unused images", "image.prune").await;
    s.run_confirmed("image.prune", json!({"dangling": true}))
        .await;
    let st = s.sim.state().await;
    let p = st["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "webshop")
        .unwrap()
        .clone();
    assert_eq!(p["hasUpdate"], false);
    assert_eq!(p["status"], "running");
    assert!(
        !st["images"].to_string().contains("<none>")
            && st["images"]
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["repoTags"].as_array().is_some_and(|t| !t.is_empty())),
        "the dangling image is gone"
    );
    s.end("03-update-app-images").await;
}

/// 4. Free disk space: prune dangling images and unused volumes; the numbers go down.
async fn free_disk_space(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("how much space do images use", "image.counts").await;
    let (before, _) = s.run("image.counts", json!({})).await;
    s.find("prune unused images", "image.prune").await;
    s.run_confirmed("image.prune", json!({"dangling": true}))
        .await;
    s.find("how much space do volumes use", "volume.sizes")
        .await;
    let (sizes, _) = s.run("volume.sizes", json!({})).await;
    let unused: Vec<Value> = items(&sizes)
        .into_iter()
        .filter(|v| v["refCount"] == 0)
        .collect();
    assert_eq!(unused.len(), 2, "an anonymous and a named volume: {sizes}");
    s.find("prune unused volumes", "volume.prune").await;
    let (v, _) = s.run_confirmed("volume.prune", json!({})).await;
    // Docker's prune takes the anonymous one; the named one stays (all=true would take it).
    let anonymous = unused
        .iter()
        .find(|v| v["name"].as_str().is_some_and(|n| n.len() == 64))
        .expect("the anonymous volume");
    assert_eq!(v["volumesDeleted"], json!([anonymous["name"]]), "{v}");
    assert_eq!(v["spaceReclaimed"], anonymous["size"], "{v}");
    s.find("prune build cache", "system.prune").await;
    let (v, _) = s
        .run_confirmed("system.prune", json!({"buildCache": {"mode": "unused"}}))
        .await;
    assert!(v["buildCacheSpaceReclaimed"].as_i64() > Some(0), "{v}");
    let (v, _) = s
        .run_confirmed("system.prune", json!({"buildCache": {"mode": "unused"}}))
        .await;
    assert_eq!(v["spaceReclaimed"], 0, "nothing left to reclaim: {v}");
    let (now, _) = s.run("image.counts", json!({})).await;
    assert!(
        now["totalImages"].as_i64() < before["totalImages"].as_i64(),
        "{now}"
    );
    assert!(
        now["totalImageSize"].as_i64() < before["totalImageSize"].as_i64(),
        "{now}"
    );
    let after = s.sim.state().await.to_string();
    assert!(
        !after.contains(anonymous["name"].as_str().unwrap()),
        "the anonymous volume is gone"
    );
    assert!(
        after.contains("orphaned-cache") && after.contains("webshop_db-data"),
        "named volumes stay"
    );
    s.end("04-free-disk-space").await;
}

/// 5. Scale a swarm service, change its image, roll it back.
async fn swarm_scale_update_rollback(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("list swarm services", "swarm_service.list").await;
    let (v, _) = s.run("swarm_service.list", json!({})).await;
    let svc = items(&v)
        .into_iter()
        .find(|x| x["name"] == "edge-proxy")
        .expect("edge-proxy");
    let id = id_of(&svc);
    s.find("swarm service details", "swarm_service.get").await;
    let (v, _) = s.run("swarm_service.get", json!({"serviceId": id})).await;
    // Docker refuses an update that does not name the version it changes.
    let version = v
        .pointer("/version/index")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    s.find("scale swarm service replicas", "swarm_service.scale")
        .await;
    s.run(
        "swarm_service.scale",
        json!({"serviceId": id, "replicas": 3}),
    )
    .await;
    s.find("update swarm service image", "swarm_service.update")
        .await;
    // A new specification is confirmed (`confirm: always`).
    s.run_confirmed(
        "swarm_service.update",
        json!({"serviceId": id, "version": version,
               "spec": {"Labels": {},
                        "TaskTemplate": {"ForceUpdate": 0,
                                         "ContainerSpec": {"Image": "traefik:v3.2"}}}}),
    )
    .await;
    let svc = |st: Value| {
        st["swarmServices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "edge-proxy")
            .unwrap()
            .clone()
    };
    let now = svc(s.sim.state().await);
    assert_eq!(now["image"], "traefik:v3.2");
    assert_eq!(now["replicas"], 3);
    s.find("rollback swarm service", "swarm_service.rollback")
        .await;
    s.run_confirmed("swarm_service.rollback", json!({"serviceId": id}))
        .await;
    assert_eq!(svc(s.sim.state().await)["image"], "traefik:v3.1");
    s.end("05-swarm-scale-update-rollback").await;
}

/// 6. Back up a volume and restore it.
async fn volume_backup_restore(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("back up a volume", "volume_backup.create").await;
    let (v, _) = s
        .run(
            "volume_backup.create",
            json!({"volumeName": "webshop_db-data"}),
        )
        .await;
    let backup = id_of(&v);
    s.find("list volume backups", "volume_backup.list").await;
    let (v, _) = s
        .run(
            "volume_backup.list",
            json!({"volumeName": "webshop_db-data"}),
        )
        .await;
    assert_eq!(items(&v).len(), 1, "{v}");
    s.find("restore volume backup", "volume_backup.restore")
        .await;
    s.run_confirmed(
        "volume_backup.restore",
        json!({"volumeName": "webshop_db-data", "backupId": backup}),
    )
    .await;
    let st = s.sim.state().await;
    let vol = st["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "webshop_db-data")
        .unwrap()
        .clone();
    assert_eq!(vol["labels"]["arcane.sim/restored-from"], backup.as_str());
    s.end("06-volume-backup-restore").await;
}

/// 7. Add a private registry and pull an image from it; the credential is never shown back.
async fn private_registry(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find(
        "add container registry credentials",
        "container_registry.create",
    )
    .await;
    let token = "ghp-registry-token-93f1";
    let (_, t) = s
        .run(
            "container_registry.create",
            json!({"url": "registry.acme.test", "username": "ci", "token": token,
                   "registryType": "generic", "description": "ACME", "enabled": true,
                   "insecure": false, "repositoryNames": [], "awsAccessKeyId": "",
                   "awsRegion": "", "awsSecretAccessKey": ""}),
        )
        .await;
    assert!(!t.contains(token), "the token is not shown back: {t}");
    let (v, t) = s.run("container_registry.list", json!({})).await;
    assert!(!t.contains(token) && !v.to_string().contains(token));
    assert_eq!(items(&v).len(), 1);
    s.find("pull image", "image.pull").await;
    s.run(
        "image.pull",
        json!({"imageName": "registry.acme.test/shop/api", "tag": "2.0"}),
    )
    .await;
    let st = s.sim.state().await;
    assert!(
        st["images"]
            .to_string()
            .contains("registry.acme.test/shop/api:2.0")
    );
    assert_eq!(collection(&s.sim, "/container-registries").await.len(), 1);
    s.end("07-private-registry").await;
}

/// 8. Connect a git repository, create a GitOps sync, sync it, see the project.
async fn gitops(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("add git repository", "git_repository.create").await;
    let (v, _) = s
        .run(
            "git_repository.create",
            json!({"name": "infra", "url": "https://git.acme.test/infra.git", "authType": "none"}),
        )
        .await;
    let repo = id_of(&v);
    s.find("create gitops sync", "gitops_sync.create").await;
    let (v, _) = s
        .run(
            "gitops_sync.create",
            json!({"name": "infra-sync", "repositoryId": repo, "branch": "main",
                   "composePath": "stacks/web/compose.yaml", "projectName": "infra-web"}),
        )
        .await;
    let sync = id_of(&v);
    s.find("run gitops sync now", "gitops_sync.sync").await;
    s.run("gitops_sync.sync", json!({"syncId": sync})).await;
    s.find("list projects", "project.list").await;
    let (v, _) = s.run("project.list", json!({"search": "infra"})).await;
    assert_eq!(items(&v).len(), 1, "{v}");
    assert_eq!(items(&v)[0]["status"], "running");
    s.end("08-gitops").await;
}

/// 9. Work on a second environment by name; the hint when its agent is down.
async fn second_environment(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("list environments", "environment.list").await;
    let (v, _) = s.run("environment.list", json!({})).await;
    assert!(v.to_string().contains("staging-agent"));
    let (v, _) = s
        .run("container.list", json!({"environmentId": "staging-agent"}))
        .await;
    assert!(v.to_string().contains("worker-1"), "{v}");
    let mut st = s.sim.state().await;
    for e in st["environments"].as_array_mut().unwrap() {
        if e["name"] == "staging-agent" {
            e["agentConnected"] = json!(false);
        }
    }
    s.sim.set_state(st).await;
    let r = s
        .call(
            "container.list",
            json!({"environmentId": "staging-agent"}),
            false,
        )
        .await;
    let t = err(&r);
    assert!(t.to_lowercase().contains("agent"), "{t}");
    s.end("09-second-environment").await;
}

/// 10. Create a scoped API key for CI, list keys, revoke it.
async fn api_key_for_ci(surface: &'static str) {
    let mut s = Story::begin(surface).await;
    s.find("create api key", "api_key.create").await;
    // A new credential is confirmed (`confirm: always`).
    let (v, t) = s
        .run_confirmed(
            "api_key.create",
            json!({"name": "ci", "description": "CI deploys",
                   "permissions": [{"permission": "projects:deploy", "environmentId": "0"}]}),
        )
        .await;
    let id = id_of(&v);
    assert!(t.contains("arc_"), "the new key is shown once: {t}");
    s.find("list api keys", "api_key.list").await;
    let (v, t) = s.run("api_key.list", json!({})).await;
    assert_eq!(items(&v).len(), 1);
    assert!(!t.contains("arc_") || !t.contains(&v.to_string()), "{t}");
    s.find("revoke api key", "api_key.delete").await;
    s.run_confirmed("api_key.delete", json!({"id": id})).await;
    assert!(collection(&s.sim, "/api-keys").await.is_empty());
    s.end("10-api-key-for-ci").await;
}

/// 11. Stop the web container, then take the stop back: it was the wrong one.
///
/// The server keeps its changes (`--history FILE`, in a state directory that does not exist
/// yet, as docs/undo.md's recipe writes it); the model lists them and undoes the stop with the
/// call the history recorded, confirmed as an undo always is.
async fn take_a_change_back(surface: &'static str) {
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join(".local/state/arcane-mcp/history.jsonl");
    let mut s = Story::begin_with(surface, &["--history", file.to_str().unwrap()]).await;
    s.find("stop container", "container.stop").await;
    let (v, _) = s.run("container.list", json!({"search": "web"})).await;
    let web: Vec<Value> = items(&v);
    assert_eq!(web.len(), 1, "{v}");
    let name = name_of(&web[0]);
    assert_eq!(name, "web-1");
    assert_eq!(web[0]["state"], "running", "{v}");
    s.run("container.stop", json!({"containerId": name})).await;
    assert_ne!(s.sim.container(&name).await.unwrap()["state"], "running");
    s.find("undo the last change", "history.undo").await;
    let (v, _) = s.run("history.list", json!({})).await;
    let changes = items(&v);
    assert_eq!(changes.len(), 1, "{v}");
    assert_eq!(changes[0]["action"], "container.stop", "{v}");
    assert_eq!(changes[0]["undo"], "undo runs container.start", "{v}");
    let id = changes[0]["id"].as_str().unwrap().to_string();
    // The ID and time of docs/undo.md's example.
    s.stand_in(&id, "20261207203430-1e835e");
    s.stand_in(changes[0]["time"].as_str().unwrap(), "2026-12-07T20:34:30Z");
    s.run_confirmed("history.undo", json!({"id": id})).await;
    assert_eq!(s.sim.container(&name).await.unwrap()["state"], "running");
    s.answer(
        "web-1 is running again. The server's history had my stop as its only change, \
         undone by starting the container, and the start answered \"Container started \
         successfully\". Which container did you mean to stop?",
        &[
            "| web-1 |",
            "container.stop | containerId: \"web-1\" | undo runs container.start |",
            "1 item(s)\n",
            "Container started successfully",
        ],
    );
    s.end("11-take-a-change-back").await;
}

/// 2, started as a person starts it: picking "Troubleshoot a failing container" from the
/// client's prompt menu, completing its argument from Arcane's names, and handing the
/// message to the model, which runs the actions the message names, in its order.
async fn failing_container_from_its_prompt(surface: &'static str) {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
    let s = Story::begin(surface).await;
    let menu = s.client.list_all_prompts().await.unwrap();
    let picked = menu
        .iter()
        .find(|p| p.title.as_deref() == Some("Troubleshoot a failing container"))
        .expect("the prompt is in the menu");
    // The person types "back" and picks the first completion.
    let done = s
        .client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt(&picked.name),
            ArgumentInfo::new("container", "back"),
        ))
        .await
        .unwrap();
    let name = done
        .completion
        .values
        .first()
        .cloned()
        .expect("a completion");
    assert_eq!(name, "backup-1");
    let args = serde_json::Map::from_iter([("container".to_string(), json!(name))]);
    let got = s
        .client
        .get_prompt(GetPromptRequestParams::new(&picked.name).with_arguments(args))
        .await
        .unwrap();
    let message = got.messages[0].content.as_text().unwrap().text.clone();
    assert!(message.contains("`backup-1`"), "{message}");
    // The actions as this surface spells them, in the order the message names them.
    let cat = server_support::catalog();
    let spelled = |id: &str| {
        let a = cat.get(id).unwrap();
        match surface {
            "dynamic" => format!("`{id}`"),
            "meta" => format!("`{}` (action `{}`)", a.meta_tool_name(), a.name),
            _ => format!("`{}`", a.individual_tool_name()),
        }
    };
    let mut steps: Vec<(usize, &str)> = [
        "container.list",
        "container.get",
        "container.logs",
        "container.stats",
        "container.restart",
    ]
    .into_iter()
    .map(|id| {
        let at = message
            .find(&spelled(id))
            .unwrap_or_else(|| panic!("{surface}: the message names {id}:\n{message}"));
        (at, id)
    })
    .collect();
    steps.sort();
    let order: Vec<&str> = steps.iter().map(|(_, id)| *id).collect();
    assert_eq!(
        order,
        [
            "container.list",
            "container.get",
            "container.logs",
            "container.stats",
            "container.restart"
        ],
        "{message}"
    );
    let mut s = s;
    let mut exited = false;
    for id in order {
        match id {
            "container.list" => {
                let (v, _) = s.run(id, json!({"search": name})).await;
                exited = items(&v).iter().any(|c| c["state"] == "exited");
            }
            "container.get" => {
                let (v, _) = s.run(id, json!({"containerId": name})).await;
                assert_eq!(v.pointer("/state/exitCode"), Some(&json!(1)), "{v}");
            }
            "container.logs" => {
                let (_, t) = s
                    .run(
                        id,
                        json!({"containerId": name, "tail": 50, "timeoutSeconds": 1}),
                    )
                    .await;
                // The logs name the cause: the database it could not reach.
                assert!(
                    t.contains("db-1") && t.contains("the database system is shutting down"),
                    "{t}"
                );
            }
            // "If it runs": this one exited.
            "container.stats" => assert!(exited, "the container is found exited"),
            _ => {
                s.run(id, json!({"containerId": name})).await;
            }
        }
    }
    assert_eq!(s.sim.container(&name).await.unwrap()["state"], "running");
    s.client.cancel().await.ok();
    s.sim.sim.shutdown().await;
}

macro_rules! on_every_surface {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            for surface in SURFACES {
                super::$name(surface).await;
            }
        }
    )*};
}

macro_rules! on_every_surface_as_tasks {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            for surface in SURFACES_AS_TASKS {
                super::super::$name(surface).await;
            }
        }
    )*};
}

/// [`SURFACES`], with a client that speaks tasks: the 2026-07-28 extension, and the
/// 2025-11-25 form.
const SURFACES_AS_TASKS: [&str; 8] = [
    "dynamic+tasks",
    "meta+tasks",
    "individual+tasks",
    "individual-flat+tasks",
    "dynamic+coretasks",
    "meta+coretasks",
    "individual+coretasks",
    "individual-flat+coretasks",
];

mod jobs {
    use super::SURFACES;

    /// The jobs that deploy and update, as tasks.
    mod as_tasks {
        use super::super::SURFACES_AS_TASKS;
        on_every_surface_as_tasks!(
            deploy_from_compose,
            update_app_images,
            swarm_scale_update_rollback,
            gitops,
        );
    }

    on_every_surface!(
        deploy_from_compose,
        failing_container,
        update_app_images,
        free_disk_space,
        swarm_scale_update_rollback,
        volume_backup_restore,
        private_registry,
        gitops,
        second_environment,
        api_key_for_ci,
        take_a_change_back,
        failing_container_from_its_prompt,
    );
}

/// `docs/jobs.md` as the golden transcripts make it (with how many there are): each job's
/// calls, and the model's answer where the job ends with one, linking to the whole transcript
/// (the text the model reads at each step).
fn assemble_docs() -> (String, usize) {
    let mut names: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.sort();
    let mut doc = String::from(
        "# Operator jobs, as a model does them\n\n\
         Generated from `tests/golden/jobs/` by `tests/workflows.rs` \
         (`UPDATE_GOLDEN=1 cargo test --test integration workflows::`): each job's calls on the dynamic \
         surface, and its answer where it ends with one; its transcript has what the model reads. Every job also runs on the meta and individual surfaces, \
         the latter in the flat client profile too; jobs 1, 3, 5 and 8 again with each form of MCP tasks \
         ([tasks.md](tasks.md)), reading the same texts.\n\n",
    );
    for p in &names {
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        let title = stem
            .split_once('-')
            .map(|(n, t)| format!("{n}. {}", t.replace('-', " ")));
        doc.push_str(&format!(
            "## {}\n\n[The transcript](../tests/golden/jobs/{stem}.md).\n\n",
            title.unwrap_or(stem.clone())
        ));
        let (mut fenced, mut answer) = (false, String::new());
        for line in std::fs::read_to_string(p).unwrap().lines() {
            if line.starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            if line.starts_with("**`") {
                doc.push_str(&format!("- {line}\n"));
            } else if line == "**Answer**" || !answer.is_empty() {
                answer.push_str(line);
                answer.push('\n');
            }
        }
        if !answer.is_empty() {
            doc.push('\n');
            doc.push_str(answer.trim_end());
            doc.push('\n');
        }
        doc.push('\n');
    }
    (doc.trim_end().to_string() + "\n", names.len())
}

fn docs_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/jobs.md")
}

/// Serializes the rewrites of UPDATE_GOLDEN=1: each job writes its golden file and then the
/// document, so the last job to finish leaves a document made of every transcript.
static REWRITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `docs/jobs.md` is the golden transcripts, assembled; it cannot drift from the suite.
#[test]
fn docs_jobs_is_generated_from_the_goldens() {
    if updating() {
        return;
    }
    let (doc, n) = assemble_docs();
    assert!(n >= 10, "a golden transcript per job ({n})");
    let have = std::fs::read_to_string(docs_path()).unwrap_or_default();
    assert!(
        have == doc,
        "docs/jobs.md is stale; run UPDATE_GOLDEN=1 cargo test --test integration workflows::"
    );
}
