//! The ten operator jobs of docs/jobs.md, each taken back from the command line as a person
//! does it (docs/undo.md): a server started with `--history FILE`, the job's calls as its
//! transcript makes them (tests/golden/jobs/, IDs read from the answers), then `arcane-mcp undo
//! ID --confirm` for every change, newest first. The simulator's state after is compared with
//! the state before, entity by entity: what still differs is exactly what the catalog says
//! cannot be undone (each refused with its reason, sending nothing) or an undo leaves, named
//! with why; everything else the job changed is back as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};

use crate::process_support::{stderr, stdout};
use crate::server_support::{Client, Sim, call, catalog, command, is_error, text, writes};
use crate::server_undo::with_history;
use arcane_catalog::Undo;

/// The simulator's state as a person compares it: `"section key"` (`"containers 0:web-1"`,
/// `"collections /api-keys"`) → the entity.
type Snapshot = BTreeMap<String, Value>;

/// An entity's key in its section: its environment and name (an image by its first tag, or
/// its ID when it has none).
fn key_of(item: &Value) -> String {
    if let Some(s) = item.as_str() {
        return s.to_string();
    }
    let env = item["environmentId"].as_str().unwrap_or("0");
    let name = ["name", "imageId", "id"]
        .iter()
        .find_map(|k| item[*k].as_str())
        .map(str::to_string);
    let name = item["repoTags"][0]
        .as_str()
        .map(str::to_string)
        .or(name)
        .unwrap_or_else(|| panic!("no name in {item}"));
    format!("{env}:{name}")
}

/// What of an entity a change and its undo are compared on. Left out: a container's status
/// text, which says when it last changed state ("Exited (1) 2 hours ago": an undo is a change
/// of state of its own), and a swarm service's version and previous spec, Docker's bookkeeping
/// of every update (an undo's too).
fn relevant(section: &str, item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(o) = item.as_object_mut() {
        let drop: &[&str] = match section {
            "containers" => &["status"],
            "swarmServices" => &["version", "previousSpec"],
            _ => &[],
        };
        for k in drop {
            o.remove(*k);
        }
    }
    item
}

fn snapshot(state: &Value) -> Snapshot {
    let mut out = Snapshot::new();
    let mut put = |key: String, v: Value| {
        assert!(out.insert(key.clone(), v).is_none(), "{key} twice");
    };
    for (section, v) in state.as_object().expect("the state is an object") {
        match (section.as_str(), v) {
            // Arcane's event log records what was done, undos included: it only grows.
            ("events", _) => {}
            // A collection's items by its path (an emptied one as none); `created` only counts
            // the items ever made, the source of their IDs.
            ("collections", _) => {
                for (path, items) in v["items"].as_object().into_iter().flatten() {
                    if items.as_array().is_some_and(|i| !i.is_empty()) {
                        put(format!("collections {path}"), items.clone());
                    }
                }
                for env in v["buildCachePruned"].as_array().into_iter().flatten() {
                    put(format!("buildCachePruned {}", key_of(env)), json!(true));
                }
            }
            (_, Value::Array(items)) => {
                for item in items {
                    put(
                        format!("{section} {}", key_of(item)),
                        relevant(section, item),
                    );
                }
            }
            _ => put(section.clone(), v.clone()),
        }
    }
    out
}

/// The entities that differ between two snapshots (present in one only, or not equal).
fn differing(a: &Snapshot, b: &Snapshot) -> BTreeSet<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// What `arcane-mcp undo` does with one change of a job.
enum Then {
    /// The inverse the catalog declares runs and succeeds.
    Undone,
    /// The catalog says it cannot be undone: refused with its reason, nothing sent.
    Refused,
    /// The inverse runs, and Arcane refuses it with this text.
    Fails(&'static str),
}

/// One job against a simulator, through a server that keeps its changes.
struct Job {
    sim: Sim,
    key: String,
    _dir: tempfile::TempDir,
    file: PathBuf,
    client: Client,
    before: Snapshot,
}

impl Job {
    async fn begin() -> Job {
        let (sim, key, _dir, file) = with_history().await;
        let before = snapshot(&sim.state().await);
        // docs/undo.md's recipe: `arcane-mcp --history FILE`, serving.
        let client =
            crate::server_support::spawn(&sim.base(), &key, &["--history", file.to_str().unwrap()])
                .await;
        Job {
            sim,
            key,
            _dir,
            file,
            client,
            before,
        }
    }

    fn history_flag(&self) -> [&str; 2] {
        ["--history", self.file.to_str().unwrap()]
    }

    /// A call as the job's transcript makes it on the dynamic surface; its structured answer.
    async fn run(&self, action: &str, params: Value, confirm: bool) -> Value {
        let r = call(
            &self.client,
            "arcane_execute_action",
            json!({"action": action, "params": params, "confirm": confirm}),
        )
        .await;
        assert!(!is_error(&r), "{action}: {}", text(&r));
        r.structured_content.unwrap_or_default()
    }

    /// `arcane-mcp history --history FILE ARGS`, as docs/undo.md writes it (it reads the file
    /// alone).
    async fn history_out(&self, args: &[&str]) -> Output {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_arcane-mcp"));
        c.env_clear()
            .arg("history")
            .args(self.history_flag())
            .args(args);
        let out = c.output().await.unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    }

    /// The changes, newest first.
    async fn history(&self) -> Vec<Value> {
        serde_json::from_slice(&self.history_out(&["--json"]).await.stdout).unwrap()
    }

    /// `arcane-mcp undo ID --confirm`, with the serve settings.
    async fn undo(&self, id: &str) -> Output {
        let mut c = command(&self.sim.base(), &self.key, &self.history_flag());
        c.args(["undo", id, "--confirm"]);
        c.output().await.unwrap()
    }

    /// Undoes every change of the history, newest first, each as `changes` says (by action,
    /// newest first); then the state differs from the state before in exactly `left`, which
    /// the job changed besides `undone` and which stays as the job left it.
    async fn end(self, changes: &[(&str, Then)], undone: &[&str], left: &[&str]) {
        let after = snapshot(&self.sim.state().await);
        let history = self.history().await;
        let actions: Vec<&str> = history
            .iter()
            .map(|c| c["action"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = changes.iter().map(|(a, _)| *a).collect();
        assert_eq!(actions, expected, "{history:#?}");
        let listed = stdout(&self.history_out(&[]).await);
        let cat = catalog();
        for (change, (action, then)) in history.iter().zip(changes) {
            let id = change["id"].as_str().unwrap();
            // The line under the change's own says how it is taken back.
            let said = listed
                .lines()
                .skip_while(|l| !l.starts_with(id))
                .nth(1)
                .unwrap_or_else(|| panic!("{id} listed:\n{listed}"))
                .trim();
            let undo = cat.get(action).unwrap().safety.undo.clone().unwrap();
            let requests = self.sim.requests().await.len();
            let out = self.undo(id).await;
            let shown = format!("{action}:\n{}\n{}", stdout(&out), stderr(&out));
            match (then, &undo) {
                (Then::Refused, Undo::Never(why)) => {
                    assert_eq!(change["undo"], json!({"kind": "never", "why": why}));
                    assert_eq!(said, format!("cannot be undone: {why}"));
                    assert_ne!(out.status.code(), Some(0), "{shown}");
                    assert!(
                        stderr(&out).contains(&format!("{id} ({action}) cannot be undone: {why}")),
                        "{shown}"
                    );
                    assert_eq!(
                        self.sim.requests().await.len(),
                        requests,
                        "{action}: a refused undo sends nothing"
                    );
                }
                (Then::Undone | Then::Fails(_), Undo::By(inv)) => {
                    assert_eq!(change["undo"]["kind"], "call", "{change}");
                    assert_eq!(change["undo"]["action"], inv.action, "{change}");
                    assert_eq!(said, format!("undo runs {}", inv.action));
                    if let Then::Fails(because) = then {
                        assert_ne!(out.status.code(), Some(0), "{shown}");
                        assert!(stdout(&out).contains(because), "{shown}");
                    } else {
                        assert_eq!(out.status.code(), Some(0), "{shown}");
                    }
                }
                _ => panic!("{action}: the catalog says {undo:?}"),
            }
        }
        let end = snapshot(&self.sim.state().await);
        let set = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>();
        let all: Vec<&str> = undone.iter().chain(left).copied().collect();
        let show = |keys: &BTreeSet<String>, now: &Snapshot| {
            keys.iter()
                .map(|k| {
                    format!(
                        "{k}:\n  before {:?}\n  now    {:?}",
                        self.before.get(k),
                        now.get(k)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let changed = differing(&self.before, &after);
        assert_eq!(
            changed,
            set(&all),
            "what the job changed:\n{}",
            show(&changed, &after)
        );
        let remains = differing(&self.before, &end);
        assert_eq!(
            remains,
            set(left),
            "what is not as before the job, after its undo:\n{}",
            show(&remains, &end)
        );
        for k in left {
            assert_eq!(end.get(*k), after.get(*k), "{k}: as the job left it");
        }
        // Each undo that ran is a change of its own (undoing it again is a redo).
        let ran = changes
            .iter()
            .filter(|(_, t)| matches!(t, Then::Undone))
            .count();
        assert_eq!(self.history().await.len(), history.len() + ran);
        self.client.cancel().await.ok();
    }
}

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

/// An image no tag names (the demo's dangling one).
fn untagged(i: &Value) -> bool {
    i["repoTags"].as_array().is_none_or(|t| t.is_empty())
}

/// The key of the state's one entity of `section` that `pick` finds.
async fn key_in(sim: &Sim, section: &str, pick: impl Fn(&Value) -> bool) -> String {
    let st = sim.state().await;
    let found: Vec<&Value> = st[section]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| pick(i))
        .collect();
    assert_eq!(found.len(), 1, "{section}: {found:?}");
    format!("{section} {}", key_of(found[0]))
}

/// 1. A project created and deployed: it is brought down and destroyed with its containers.
/// The image the deploy pulled stays (project.down removes none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_01_deploy_from_compose_is_taken_back() {
    let job = Job::begin().await;
    let compose = "services:\n  web:\n    image: nginx:1.27-alpine\n    ports:\n      - \"8081:80\"\n  worker:\n    image: ghcr.io/acme/worker:1.4.0\n";
    let v = job
        .run(
            "project.create",
            json!({"name": "shop", "composeContent": compose, "envContent": "MODE=prod\n"}),
            true,
        )
        .await;
    let id = v["id"].as_str().expect("the project's ID").to_string();
    job.run("project.up", json!({"projectId": id}), true).await;
    let v = job
        .run("container.list", json!({"search": "shop"}), false)
        .await;
    assert_eq!(items(&v).len(), 2, "{v}");
    job.run(
        "container.logs",
        json!({"containerId": "shop-web-1", "tail": 10, "timeoutSeconds": 1}),
        false,
    )
    .await;
    job.end(
        &[
            ("project.up", Then::Undone),
            ("project.create", Then::Undone),
        ],
        &[
            "projects 0:shop",
            "containers 0:shop-web-1",
            "containers 0:shop-worker-1",
        ],
        &["images 0:ghcr.io/acme/worker:1.4.0"],
    )
    .await;
}

/// 2. An exited container restarted: it is stopped again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_02_failing_container_is_taken_back() {
    let job = Job::begin().await;
    job.run("container.list", json!({"search": "backup"}), false)
        .await;
    job.run(
        "container.logs",
        json!({"containerId": "backup-1", "tail": 20, "timeoutSeconds": 1}),
        false,
    )
    .await;
    job.run("container.get", json!({"containerId": "backup-1"}), false)
        .await;
    job.run("event.list", json!({"type": "container"}), false)
        .await;
    job.run("container.get", json!({"containerId": "db-1"}), false)
        .await;
    job.run(
        "container.restart",
        json!({"containerId": "backup-1"}),
        false,
    )
    .await;
    assert_eq!(
        job.sim.container("backup-1").await.unwrap()["state"],
        "running"
    );
    job.end(
        &[("container.restart", Then::Undone)],
        &["containers 0:backup-1"],
        &[],
    )
    .await;
}

/// 3. Pull, redeploy, prune: none can be undone; each is refused with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_03_update_app_images_is_refused_with_reasons() {
    let job = Job::begin().await;
    let dangling = key_in(&job.sim, "images", untagged).await;
    let v = job
        .run("project.list", json!({"search": "webshop"}), false)
        .await;
    let id = items(&v)
        .iter()
        .find(|p| p["name"] == "webshop")
        .and_then(|p| p["id"].as_str())
        .expect("webshop's ID")
        .to_string();
    job.run("project.updates", json!({"projectId": id}), false)
        .await;
    job.run("project.pull", json!({"projectId": id}), false)
        .await;
    job.run("project.redeploy", json!({"projectId": id}), true)
        .await;
    job.run("image.prune", json!({"dangling": true}), true)
        .await;
    job.end(
        &[
            ("image.prune", Then::Refused),
            ("project.redeploy", Then::Refused),
            ("project.pull", Then::Refused),
        ],
        &[],
        // The redeploy ran every container of the project (the paused one too) on the pulled
        // images; the prune deleted the dangling image.
        &["projects 0:webshop", "containers 0:cache-1", &dangling],
    )
    .await;
}

/// 4. Prunes: none can be undone; each is refused with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_04_free_disk_space_is_refused_with_reasons() {
    let job = Job::begin().await;
    let dangling = key_in(&job.sim, "images", untagged).await;
    let anonymous = key_in(&job.sim, "volumes", |v| {
        v["labels"]["com.docker.volume.anonymous"].is_string()
    })
    .await;
    job.run("image.counts", json!({}), false).await;
    job.run("image.prune", json!({"dangling": true}), true)
        .await;
    job.run("volume.sizes", json!({}), false).await;
    job.run("volume.prune", json!({}), true).await;
    for _ in 0..2 {
        job.run(
            "system.prune",
            json!({"buildCache": {"mode": "unused"}}),
            true,
        )
        .await;
    }
    job.run("image.counts", json!({}), false).await;
    job.end(
        &[
            ("system.prune", Then::Refused),
            ("system.prune", Then::Refused),
            ("volume.prune", Then::Refused),
            ("image.prune", Then::Refused),
        ],
        &[],
        &[&dangling, &anonymous, "buildCachePruned 0"],
    )
    .await;
}

/// 5. Scaled, updated, rolled back: the rollback is rolled back, the update rolled back, the
/// replicas scaled back — the service runs its old image with its old replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_05_swarm_scale_update_rollback_is_taken_back() {
    let job = Job::begin().await;
    let v = job.run("swarm_service.list", json!({}), false).await;
    let id = items(&v)
        .iter()
        .find(|s| s["name"] == "edge-proxy")
        .and_then(|s| s["id"].as_str())
        .expect("edge-proxy's ID")
        .to_string();
    job.run("swarm_service.get", json!({"serviceId": id}), false)
        .await;
    job.run(
        "swarm_service.scale",
        json!({"serviceId": id, "replicas": 3}),
        false,
    )
    .await;
    job.run(
        "swarm_service.update",
        json!({"serviceId": id, "version": 0,
               "spec": {"Labels": {},
                        "TaskTemplate": {"ForceUpdate": 0,
                                         "ContainerSpec": {"Image": "traefik:v3.2"}}}}),
        true,
    )
    .await;
    job.run("swarm_service.rollback", json!({"serviceId": id}), true)
        .await;
    job.end(
        &[
            ("swarm_service.rollback", Then::Undone),
            ("swarm_service.update", Then::Undone),
            ("swarm_service.scale", Then::Undone),
        ],
        &["swarmServices 0:edge-proxy"],
        &[],
    )
    .await;
}

/// 6. A backup made and restored: the backup is deleted; the restore is refused with its
/// reason, and the volume stays as the restore left it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_06_volume_backup_restore_is_taken_back_but_the_restore() {
    let job = Job::begin().await;
    let v = job
        .run(
            "volume_backup.create",
            json!({"volumeName": "webshop_db-data"}),
            false,
        )
        .await;
    let backup = v["id"].as_str().expect("the backup's ID").to_string();
    job.run(
        "volume_backup.list",
        json!({"volumeName": "webshop_db-data"}),
        false,
    )
    .await;
    job.run(
        "volume_backup.restore",
        json!({"volumeName": "webshop_db-data", "backupId": backup}),
        true,
    )
    .await;
    job.end(
        &[
            ("volume_backup.restore", Then::Refused),
            ("volume_backup.create", Then::Undone),
        ],
        &["collections /environments/0/volumes/webshop_db-data/backups"],
        &["volumes 0:webshop_db-data"],
    )
    .await;
}

/// 7. A registry added, an image pulled from it: the registry is deleted; the pull is refused
/// with its reason. The registry's token is nowhere in the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_07_private_registry_is_taken_back_but_the_pull() {
    let job = Job::begin().await;
    let token = "ghp-registry-token-93f1";
    job.run(
        "container_registry.create",
        json!({"url": "registry.acme.test", "username": "ci", "token": token,
               "registryType": "generic", "description": "ACME", "enabled": true,
               "insecure": false, "repositoryNames": [], "awsAccessKeyId": "",
               "awsRegion": "", "awsSecretAccessKey": ""}),
        true,
    )
    .await;
    job.run("container_registry.list", json!({}), false).await;
    job.run(
        "image.pull",
        json!({"imageName": "registry.acme.test/shop/api", "tag": "2.0"}),
        false,
    )
    .await;
    let kept = std::fs::read_to_string(&job.file).unwrap();
    assert!(!kept.contains(token), "{kept}");
    job.end(
        &[
            ("image.pull", Then::Refused),
            ("container_registry.create", Then::Undone),
        ],
        &["collections /container-registries"],
        &["images 0:registry.acme.test/shop/api:2.0"],
    )
    .await;
}

/// 8. A repository and a GitOps sync added, then synced: both are deleted; the sync's deploy is
/// refused with its reason, and its project stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_08_gitops_is_taken_back_but_the_sync() {
    let job = Job::begin().await;
    let v = job
        .run(
            "git_repository.create",
            json!({"name": "infra", "url": "https://git.acme.test/infra.git", "authType": "none"}),
            true,
        )
        .await;
    let repo = v["id"].as_str().expect("the repository's ID").to_string();
    let v = job
        .run(
            "gitops_sync.create",
            json!({"name": "infra-sync", "repositoryId": repo, "branch": "main",
                   "composePath": "stacks/web/compose.yaml", "projectName": "infra-web"}),
            true,
        )
        .await;
    let sync = v["id"].as_str().expect("the sync's ID").to_string();
    job.run("gitops_sync.sync", json!({"syncId": sync}), false)
        .await;
    job.run("project.list", json!({"search": "infra"}), false)
        .await;
    job.end(
        &[
            ("gitops_sync.sync", Then::Refused),
            ("gitops_sync.create", Then::Undone),
            ("git_repository.create", Then::Undone),
        ],
        &[
            "collections /customize/git-repositories",
            "collections /environments/0/gitops-syncs",
        ],
        &["projects 0:infra-web", "containers 0:infra-web-app-1"],
    )
    .await;
}

/// 9. Only reads (and one refused by a disconnected agent): nothing is recorded, nothing
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_09_second_environment_records_nothing() {
    let job = Job::begin().await;
    job.run("environment.list", json!({}), false).await;
    job.run(
        "container.list",
        json!({"environmentId": "staging-agent"}),
        false,
    )
    .await;
    let mut st = job.sim.state().await;
    for e in st["environments"].as_array_mut().unwrap() {
        if e["name"] == "staging-agent" {
            e["agentConnected"] = json!(false);
        }
    }
    job.sim.set_state(st).await;
    let r = call(
        &job.client,
        "arcane_execute_action",
        json!({"action": "container.list", "params": {"environmentId": "staging-agent"},
               "confirm": false}),
    )
    .await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(writes(&job.sim.requests().await).is_empty());
    assert_eq!(job.history().await, Vec::<Value>::new());
    assert_eq!(
        stdout(&job.history_out(&[]).await).trim(),
        "No changes recorded yet."
    );
    job.client.cancel().await.ok();
}

/// 10. A key created and revoked: the revoke is refused with its reason (the secret is gone);
/// undoing the creation deletes nothing, the key being gone already, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_10_api_key_for_ci_is_refused_and_already_gone() {
    let job = Job::begin().await;
    let v = job
        .run(
            "api_key.create",
            json!({"name": "ci", "description": "CI deploys",
                   "permissions": [{"permission": "projects:deploy", "environmentId": "0"}]}),
            true,
        )
        .await;
    let id = v["id"].as_str().expect("the key's ID").to_string();
    let v = job.run("api_key.list", json!({}), false).await;
    assert_eq!(items(&v).len(), 1, "{v}");
    job.run("api_key.delete", json!({"id": id}), true).await;
    job.end(
        &[
            ("api_key.delete", Then::Refused),
            ("api_key.create", Then::Fails("api key not found")),
        ],
        &[],
        &[],
    )
    .await;
}
