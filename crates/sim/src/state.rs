//! The simulator's in-memory state: its file format, the built-in demo state and the
//! projections of stored objects into Arcane's API shapes. The database-backed collections'
//! items are stored here too ([`Collections`]), with the clock their timestamps come from.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::synth::hex_id;

/// The text of the built-in demo state (a state file like any other; the README lists it).
pub const DEMO_STATE: &str = include_str!("../data/demo-state.json");

/// The whole simulated world. Every list defaults to empty; every string may hold anything
/// (ANSI escapes, bidi controls, Markdown, HTML…) and is returned byte for byte.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct State {
    /// Environments; `"0"` is the local one, any other ID is a remote (agent) environment.
    pub environments: Vec<Environment>,
    /// Containers of every environment.
    pub containers: Vec<Container>,
    /// Images of every environment.
    pub images: Vec<Image>,
    /// Compose projects of every environment.
    pub projects: Vec<Project>,
    /// Volumes of every environment.
    pub volumes: Vec<Volume>,
    /// Networks of every environment.
    pub networks: Vec<Network>,
    /// Swarm services of every environment.
    pub swarm_services: Vec<SwarmService>,
    /// Vulnerability scans, one per scanned image; an image without one was never scanned.
    pub scans: Vec<Scan>,
    /// Directories created in the build workspace (paths relative to its root).
    pub build_dirs: Vec<String>,
    /// Arcane's event log (`GET /events`), oldest first, each as Arcane answers it
    /// (`id`, `type`, `severity`, `title`, `description`, `resourceType`, `resourceId`,
    /// `resourceName`, `userId`, `username`, `environmentId`, `metadata`, `timestamp`,
    /// `createdAt`). Container actions append to it, as Arcane logs them.
    pub events: Vec<Value>,
    /// Database-backed resources (registries, API keys, GitOps syncs…), by collection path.
    #[serde(skip_serializing_if = "Collections::is_empty")]
    pub collections: Collections,
}

/// The stored items of every collection, keyed by the collection's concrete path (without
/// `/api`, e.g. `/container-registries` or `/environments/0/gitops-syncs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Collections {
    pub items: BTreeMap<String, Vec<Value>>,
    /// How many items were ever created: the source of IDs and timestamps, so that a run
    /// gives the same answers every time.
    pub created: u64,
    /// Environments whose build cache was pruned (every environment starts with some).
    pub build_cache_pruned: Vec<String>,
}

/// The build cache every environment has until it is pruned.
pub const BUILD_CACHE_BYTES: i64 = 412_000_000;

impl Collections {
    pub fn is_empty(&self) -> bool {
        self.items.values().all(Vec::is_empty)
            && self.created == 0
            && self.build_cache_pruned.is_empty()
    }
}

fn local() -> String {
    "0".to_string()
}
fn yes() -> bool {
    true
}

/// An Arcane environment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub api_url: String,
    #[serde(default = "online")]
    pub status: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Whether the environment's agent answers; `false` makes every proxied request to this
    /// (remote) environment fail with Arcane's 502 `Edge agent is not connected`.
    #[serde(default = "yes")]
    pub agent_connected: bool,
    /// Whether Docker runs in Swarm mode there; off → every swarm route answers 409
    /// `Swarm mode is not enabled`.
    #[serde(default = "yes")]
    pub swarm_enabled: bool,
    /// An edge environment (agent dials in). Only those carry `connected` and `apiKey`.
    #[serde(default)]
    pub edge: bool,
    /// Any other fields, merged into API answers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A finished vulnerability scan of one image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Scan {
    /// The scanned image's ID (`sha256:…`).
    pub image_id: String,
    #[serde(default = "local")]
    pub environment_id: String,
    #[serde(default)]
    pub image_name: String,
    #[serde(default = "scan_time")]
    pub scan_time: String,
    /// Vulnerabilities as Arcane lists them (`vulnerabilityId`, `pkgName`,
    /// `installedVersion`, `fixedVersion`, `severity`, `title`…).
    #[serde(default)]
    pub vulnerabilities: Vec<Value>,
}

fn scan_time() -> String {
    "2025-06-01T12:00:00Z".to_string()
}

impl Scan {
    /// Counts by severity (`VulnerabilitySeveritySummary`).
    pub fn summary(&self) -> Value {
        let mut counts = [0i64; 5];
        for v in &self.vulnerabilities {
            let i = match v.get("severity").and_then(Value::as_str).unwrap_or("") {
                "CRITICAL" => 0,
                "HIGH" => 1,
                "MEDIUM" => 2,
                "LOW" => 3,
                _ => 4,
            };
            counts[i] += 1;
        }
        json!({"critical": counts[0], "high": counts[1], "medium": counts[2], "low": counts[3],
               "unknown": counts[4], "total": self.vulnerabilities.len()})
    }
}

fn online() -> String {
    "online".to_string()
}

/// A Docker container.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// 64-hex container ID.
    pub id: String,
    /// Container name (without leading `/`).
    pub name: String,
    #[serde(default = "local")]
    pub environment_id: String,
    pub image: String,
    #[serde(default)]
    pub image_id: String,
    /// Docker's raw state: created, running, paused, restarting, removing, exited or dead.
    #[serde(default = "running")]
    pub state: String,
    /// Docker's status text (`Up 3 hours`); derived from `state` when empty.
    #[serde(default)]
    pub status: String,
    /// Unix seconds.
    #[serde(default = "created")]
    pub created: i64,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub labels: Map<String, Value>,
    /// `KEY=value` environment entries.
    #[serde(default)]
    pub env: Vec<String>,
    /// Ports in Arcane's shape (`{ip, privatePort, publicPort, type}`).
    #[serde(default)]
    pub ports: Vec<Value>,
    /// Names of the networks it is attached to.
    #[serde(default)]
    pub networks: Vec<String>,
    /// Mounts in Arcane's shape (`{type, name, source, destination, rw}`).
    #[serde(default)]
    pub mounts: Vec<Value>,
    /// Log lines on stdout, served by the logs WebSocket.
    #[serde(default)]
    pub logs: Vec<String>,
    /// Log lines on stderr.
    #[serde(default)]
    pub stderr: Vec<String>,
    /// When it last started and stopped (RFC 3339, as Docker's inspect gives them); the
    /// answers use a fixed time when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Docker's restart policy name (`no`, `always`, `on-failure`, `unless-stopped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// The healthcheck it runs, in Arcane's shape (`test`, `interval`, `timeout`, `retries`,
    /// `startPeriod`; durations in nanoseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthcheck: Option<Value>,
    /// Its health as Docker's inspect reports it (`status`, `failingStreak`, `log`: the last
    /// probes, each `{start, end, exitCode, output}`); only a container with a healthcheck
    /// has one. Its status also ends the list's status text, `Up 3 hours (healthy)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether a volume is anonymous: Docker labels the volumes it names itself, and only those
/// are what a prune without `all` removes.
pub fn is_anonymous(v: &Volume) -> bool {
    v.labels.contains_key(ANONYMOUS_VOLUME_LABEL)
}

/// The label Docker (API 1.42+) puts on an anonymous volume.
pub const ANONYMOUS_VOLUME_LABEL: &str = "com.docker.volume.anonymous";

fn running() -> String {
    "running".to_string()
}
fn created() -> i64 {
    1_717_400_000
}

/// A Docker image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// `sha256:<64 hex>`.
    pub id: String,
    #[serde(default = "local")]
    pub environment_id: String,
    #[serde(default)]
    pub repo_tags: Vec<String>,
    #[serde(default)]
    pub repo_digests: Vec<String>,
    #[serde(default)]
    pub size: i64,
    #[serde(default = "created")]
    pub created: i64,
    #[serde(default)]
    pub labels: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A compose project.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub name: String,
    #[serde(default = "local")]
    pub environment_id: String,
    /// `running`, `stopped` or `partially running`; recomputed after up/down/restart.
    #[serde(default = "running")]
    pub status: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub compose_content: String,
    #[serde(default)]
    pub env_content: String,
    /// Compose service configs (compose-go's JSON shape, e.g. `{name, image, mem_limit}`).
    #[serde(default)]
    pub services: Vec<Value>,
    #[serde(default = "created_at")]
    pub created_at: String,
    #[serde(default = "created_at")]
    pub updated_at: String,
    /// Whether an image update is available (for `…/updates`).
    #[serde(default)]
    pub has_update: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn created_at() -> String {
    "2025-05-20T09:30:00Z".to_string()
}

/// A Docker volume.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    #[serde(default = "local")]
    pub environment_id: String,
    #[serde(default = "driver_local")]
    pub driver: String,
    #[serde(default)]
    pub mountpoint: String,
    #[serde(default = "created_at")]
    pub created_at: String,
    #[serde(default)]
    pub labels: Map<String, Value>,
    #[serde(default)]
    pub size: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn driver_local() -> String {
    "local".to_string()
}

/// A Docker network.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    pub id: String,
    pub name: String,
    #[serde(default = "local")]
    pub environment_id: String,
    #[serde(default = "driver_bridge")]
    pub driver: String,
    #[serde(default = "driver_local")]
    pub scope: String,
    #[serde(default)]
    pub internal: bool,
    #[serde(default)]
    pub labels: Map<String, Value>,
    #[serde(default = "created_at")]
    pub created: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn driver_bridge() -> String {
    "bridge".to_string()
}

/// A swarm service.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SwarmService {
    pub id: String,
    pub name: String,
    #[serde(default = "local")]
    pub environment_id: String,
    pub image: String,
    /// `replicated` or `global`.
    #[serde(default = "replicated")]
    pub mode: String,
    #[serde(default)]
    pub replicas: i64,
    #[serde(default)]
    pub running_replicas: i64,
    #[serde(default)]
    pub stack_name: String,
    #[serde(default)]
    pub labels: Map<String, Value>,
    #[serde(default)]
    pub ports: Vec<Value>,
    #[serde(default)]
    pub logs: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn replicated() -> String {
    "replicated".to_string()
}

impl State {
    /// Reads a state file (JSON or YAML).
    pub fn load(path: &Path) -> Result<State> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read state file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid state file {}", path.display()))
    }

    /// Parses state text (JSON, or YAML when it is not JSON).
    pub fn parse(text: &str) -> Result<State> {
        let trimmed = text.trim_start();
        let state: State = if trimmed.starts_with('{') {
            serde_json::from_str(text).context("invalid JSON state")?
        } else {
            arcane_catalog::check_yaml(text, "the state file", &arcane_catalog::YAML_DATA_FILE)
                .map_err(anyhow::Error::new)?;
            yaml_serde::from_str(text).context("invalid YAML state")?
        };
        state.validate()?;
        Ok(state)
    }

    /// Parses a JSON value into a state (for `POST /__sim/state`).
    pub fn from_json(v: Value) -> Result<State> {
        let state: State = serde_json::from_value(v)?;
        state.validate()?;
        Ok(state)
    }

    fn validate(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for e in &self.environments {
            if !seen.insert(e.id.as_str()) {
                anyhow::bail!("duplicate environment id {:?}", e.id);
            }
        }
        Ok(())
    }

    /// The built-in demo state: `crates/sim/data/demo-state.json`, compiled in and read by the same
    /// parser as a `--state` file, so the demo is exactly what that file would load.
    pub fn demo() -> State {
        Self::parse(DEMO_STATE).expect("the embedded demo state parses (checked by a unit test)")
    }
}

/// A stored object that belongs to one environment.
pub trait InEnv {
    /// Its environment's ID.
    fn env(&self) -> &str;
}

macro_rules! in_env {
    ($($t:ty),*) => {$(
        impl InEnv for $t {
            fn env(&self) -> &str {
                &self.environment_id
            }
        }
    )*};
}
in_env!(
    Container,
    Image,
    Project,
    Volume,
    Network,
    SwarmService,
    Scan
);

/// Docker-style status text for a state.
pub fn status_text(state: &str) -> String {
    match state {
        "running" => "Up 3 hours".to_string(),
        "paused" => "Up 3 hours (Paused)".to_string(),
        "exited" => "Exited (0) 2 hours ago".to_string(),
        "created" => "Created".to_string(),
        "restarting" => "Restarting (1) 5 seconds ago".to_string(),
        "dead" => "Dead".to_string(),
        other => other.to_string(),
    }
}

fn merge_extra(mut base: Value, extra: &Map<String, Value>) -> Value {
    if let Value::Object(o) = &mut base {
        for (k, v) in extra {
            o.insert(k.clone(), v.clone());
        }
    }
    base
}

/// The compose project a container belongs to (its `com.docker.compose.project` label).
pub fn container_project(c: &Container) -> Option<&str> {
    c.labels
        .get("com.docker.compose.project")
        .and_then(Value::as_str)
}

/// Whether a container carries Arcane's internal-resource label (docs/arcane-wire.md#container-list).
pub fn is_internal(c: &Container) -> bool {
    c.labels
        .get("com.getarcaneapp.internal.resource")
        .and_then(Value::as_str)
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
}

fn container_status(c: &Container) -> String {
    if c.status.is_empty() {
        status_text(&c.state)
    } else {
        c.status.clone()
    }
}

fn container_networks(c: &Container) -> Value {
    let mut nets = Map::new();
    // Each container its own address on a network (from its ID), as Docker's IPAM gives them.
    let host = 2 + u8::from_str_radix(c.id.get(..2).unwrap_or("00"), 16).unwrap_or(0) % 250;
    for (i, n) in c.networks.iter().enumerate() {
        let subnet = 18 + i;
        nets.insert(
            n.clone(),
            json!({
                "networkId": hex_id(&format!("network:{}:{n}", c.environment_id)),
                "ipAddress": format!("172.{subnet}.0.{host}"),
                "gateway": format!("172.{subnet}.0.1"),
                "macAddress": format!("02:42:ac:{subnet:02x}:00:{host:02x}"),
            }),
        );
    }
    Value::Object(nets)
}

/// The health status of a container with a healthcheck (`healthy`, `unhealthy`, `starting`).
pub fn health_status(c: &Container) -> Option<&str> {
    c.health.as_ref()?.get("status")?.as_str()
}

/// A container in the list's shape (`ContainerSummary`).
pub fn container_summary(c: &Container) -> Value {
    let ports: Vec<Value> = c
        .ports
        .iter()
        .map(|p| {
            let mut p = p.clone();
            // docs/arcane-wire.md#container-list: unpublished ports carry ip "invalid IP".
            if let Value::Object(o) = &mut p
                && !o.contains_key("ip")
                && !o.contains_key("publicPort")
            {
                o.insert("ip".into(), json!("invalid IP"));
            }
            p
        })
        .collect();
    let v = json!({
        "id": c.id,
        "names": [c.name],
        "image": c.image,
        "imageId": c.image_id,
        "command": c.command,
        "created": c.created,
        "ports": ports,
        "labels": c.labels,
        "state": c.state,
        "status": container_status(c),
        "hostConfig": {"networkMode": c.networks.first().cloned().unwrap_or_else(|| "bridge".into())},
        "networkSettings": {"networks": container_networks(c)},
        "mounts": c.mounts,
    });
    merge_extra(v, &c.extra)
}

/// A container in the inspect shape (`ContainerDetails`).
pub fn container_details(c: &Container) -> Value {
    let running = c.state == "running" || c.state == "paused";
    let mut v = json!({
        "id": c.id,
        "name": c.name,
        "image": c.image,
        "imageId": c.image_id,
        "created": unix_to_rfc3339(c.created),
        "state": {
            "status": c.state,
            "running": running,
            // Docker's status text carries the exit code: `Exited (1) 5 hours ago`.
            "exitCode": c.status.strip_prefix("Exited (")
                .and_then(|r| r.split(')').next())
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or(0),
            "startedAt": c.started_at.as_deref().unwrap_or("2025-06-01T09:00:00Z"),
            "finishedAt": match (&c.finished_at, running) {
                (Some(t), _) => t.as_str(),
                (None, true) => "0001-01-01T00:00:00Z",
                (None, false) => "2025-06-01T10:00:00Z",
            },
        },
        "config": {
            "env": c.env,
            "cmd": if c.command.is_empty() { Vec::new() } else { c.command.split(' ').map(str::to_string).collect::<Vec<_>>() },
            "workingDir": "",
            "user": "",
        },
        "hostConfig": {"networkMode": c.networks.first().cloned().unwrap_or_else(|| "bridge".into()),
                       "restartPolicy": c.restart_policy.as_deref().unwrap_or("unless-stopped")},
        "networkSettings": {"networks": container_networks(c)},
        "ports": c.ports,
        "mounts": c.mounts,
        "labels": c.labels,
    });
    // Arcane leaves both out for a container without a healthcheck.
    if let Some(h) = &c.health {
        v["state"]["health"] = h.clone();
    }
    if let Some(h) = &c.healthcheck {
        v["config"]["healthcheck"] = h.clone();
    }
    merge_extra(v, &c.extra)
}

/// An image in the list's shape (`ImageSummary`).
pub fn image_summary(i: &Image, in_use: bool) -> Value {
    let (repo, tag) = repo_and_tag(i);
    let v = json!({
        "id": i.id,
        "repoTags": i.repo_tags,
        "repoDigests": i.repo_digests,
        "created": i.created,
        "size": i.size,
        "virtualSize": i.size,
        "labels": i.labels,
        "inUse": in_use,
        "repo": repo,
        "tag": tag,
    });
    merge_extra(v, &i.extra)
}

/// An image in the inspect shape (`ImageDetailSummary`).
pub fn image_details(i: &Image) -> Value {
    let v = json!({
        "id": i.id,
        "repoTags": i.repo_tags,
        "repoDigests": i.repo_digests,
        "comment": "",
        "created": unix_to_rfc3339(i.created),
        "author": "",
        "architecture": "amd64",
        "os": "linux",
        "size": i.size,
        "config": {"labels": i.labels},
    });
    merge_extra(storage(v, i), &i.extra)
}

/// What Docker reports about where an image lives, as Arcane 2.8 passes it on: overlay2's
/// directories (one lower directory per layer but the top one), the layer digests and the OCI
/// descriptor of the pulled index. Derived from the image's ID, so every image has its own.
fn storage(mut v: Value, i: &Image) -> Value {
    let layers = 3 + usize::from(i.id.as_bytes().last().copied().unwrap_or(0) % 5);
    let dir = |n: usize| {
        format!(
            "/var/lib/docker/overlay2/{}",
            hex_id(&format!("{} dir {n}", i.id))
        )
    };
    let lower: Vec<String> = (1..layers).map(|n| format!("{}/diff", dir(n))).collect();
    v["graphDriver"] = json!({
        "name": "overlay2",
        "data": {
            "LowerDir": lower.join(":"),
            "MergedDir": format!("{}/merged", dir(0)),
            "UpperDir": format!("{}/diff", dir(0)),
            "WorkDir": format!("{}/work", dir(0)),
        },
    });
    v["rootFs"] = json!({
        "type": "layers",
        "layers": (0..layers).map(|n| format!("sha256:{}", hex_id(&format!("{} layer {n}", i.id)))).collect::<Vec<_>>(),
    });
    let index = i
        .repo_digests
        .first()
        .and_then(|d| d.split_once('@'))
        .map(|(_, digest)| digest.to_string())
        .unwrap_or_else(|| format!("sha256:{}", hex_id(&format!("{} index", i.id))));
    v["descriptor"] = json!({
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": index,
        "size": 10_000 + (i.size % 1_000),
    });
    v
}

/// `(repo, tag)` of an image's first tag (`<none>` when untagged).
pub fn repo_and_tag(i: &Image) -> (String, String) {
    match i.repo_tags.first() {
        Some(t) => match t.rsplit_once(':') {
            Some((r, tag)) if !tag.contains('/') => (r.to_string(), tag.to_string()),
            _ => (t.clone(), "latest".to_string()),
        },
        None => ("<none>".to_string(), "<none>".to_string()),
    }
}

/// Compose byte-size fields that compose-go marshals as quoted decimals (docs/arcane-wire.md#compose-byte-sizes).
pub const COMPOSE_BYTE_FIELDS: [&str; 5] = [
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "shm_size",
];

fn to_byte_string(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Number(n)) => Value::String(n.to_string()),
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::String("0".to_string()),
    }
}

/// Rewrites a compose service config so that its byte sizes are strings, as Arcane sends
/// them (docs/arcane-wire.md#compose-byte-sizes): `mem_limit`, `mem_reservation`, `mem_swappiness`, `memswap_limit`,
/// `shm_size`, build `shm_size`, deploy resources `memory`, tmpfs `size`.
pub fn stringify_compose_bytes(service: &mut Value) {
    let Value::Object(o) = service else { return };
    for f in COMPOSE_BYTE_FIELDS {
        let s = to_byte_string(o.get(f));
        o.insert(f.to_string(), s);
    }
    if let Some(Value::Object(b)) = o.get_mut("build") {
        let s = to_byte_string(b.get("shm_size"));
        b.insert("shm_size".into(), s);
    }
    if let Some(Value::Object(res)) = o.get_mut("deploy").and_then(|d| d.get_mut("resources")) {
        for k in ["limits", "reservations"] {
            if let Some(Value::Object(r)) = res.get_mut(k) {
                let s = to_byte_string(r.get("memory"));
                r.insert("memory".into(), s);
            }
        }
    }
    if let Some(Value::Array(vols)) = o.get_mut("volumes") {
        for v in vols {
            if let Some(Value::Object(t)) = v.get_mut("tmpfs") {
                let s = to_byte_string(t.get("size"));
                t.insert("size".into(), s);
            }
        }
    }
}

/// A project in the details shape (`ProjectDetails`), with the containers that run it.
pub fn project_details(p: &Project, containers: &[&Container]) -> Value {
    let running = containers.iter().filter(|c| c.state == "running").count();
    let runtime: Vec<Value> = containers
        .iter()
        .map(|c| {
            let svc = c
                .labels
                .get("com.docker.compose.service")
                .and_then(Value::as_str)
                .unwrap_or(&c.name);
            let mut service = json!({
                "name": svc,
                "image": c.image,
                "status": c.state,
                "containerId": c.id,
                "containerName": c.name,
                "ports": c.ports.iter().filter_map(|p| {
                    let pp = p.get("privatePort")?;
                    Some(match p.get("publicPort") { Some(pub_) => format!("{pub_}:{pp}"), None => pp.to_string() })
                }).collect::<Vec<_>>(),
            });
            // Arcane sends `health` only for a container with a healthcheck.
            if let Some(h) = health_status(c) {
                service["health"] = json!(h);
            }
            service
        })
        .collect();
    let services: Vec<Value> = p
        .services
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Value::Object(o) = &mut s {
                o.entry("command").or_insert(json!([]));
                o.entry("entrypoint").or_insert(json!([]));
            }
            stringify_compose_bytes(&mut s);
            s
        })
        .collect();
    let v = json!({
        "id": p.id,
        "name": p.name,
        "dirName": p.name,
        "path": p.path,
        "status": p.status,
        "composeFileName": "compose.yaml",
        "composeContent": p.compose_content,
        "envContent": p.env_content,
        "createdAt": p.created_at,
        "updatedAt": p.updated_at,
        "serviceCount": p.services.len().max(containers.len()),
        "runningCount": running,
        "isArchived": false,
        "tags": [],
        "services": services,
        "runtimeServices": runtime,
        "updateInfo": {
            "status": if p.has_update { "has_update" } else { "up_to_date" },
            "hasUpdate": p.has_update,
            "imageCount": p.services.len(),
            "checkedImageCount": p.services.len(),
            "imagesWithUpdates": if p.has_update { 1 } else { 0 },
            "errorCount": 0,
            "lastCheckedAt": "2025-06-01T12:00:00Z",
        },
    });
    merge_extra(v, &p.extra)
}

/// A volume (`VolumeVolume`).
pub fn volume_json(v: &Volume, users: &[String]) -> Value {
    let out = json!({
        "id": v.name,
        "name": v.name,
        "driver": v.driver,
        "mountpoint": if v.mountpoint.is_empty() { format!("/var/lib/docker/volumes/{}/_data", v.name) } else { v.mountpoint.clone() },
        "scope": "local",
        "options": {},
        "labels": v.labels,
        "createdAt": v.created_at,
        "inUse": !users.is_empty(),
        "size": v.size,
        "containers": users,
    });
    merge_extra(out, &v.extra)
}

/// A network (`NetworkSummary` / `NetworkInspect`).
pub fn network_json(n: &Network, in_use: bool) -> Value {
    let out = json!({
        "id": n.id,
        "name": n.name,
        "driver": n.driver,
        "scope": n.scope,
        "internal": n.internal,
        "created": n.created,
        "options": {},
        "labels": n.labels,
        "inUse": in_use,
        "isDefault": matches!(n.name.as_str(), "bridge" | "host" | "none"),
    });
    merge_extra(out, &n.extra)
}

/// A swarm service (`SwarmServiceSummary`).
pub fn swarm_service_json(s: &SwarmService) -> Value {
    let out = json!({
        "id": s.id,
        "name": s.name,
        "image": s.image,
        "mode": s.mode,
        "replicas": s.replicas,
        "runningReplicas": s.running_replicas,
        "ports": s.ports,
        "createdAt": "2025-05-20T09:30:00Z",
        "updatedAt": "2025-06-01T12:00:00Z",
        "labels": s.labels,
        "nodes": ["node-1"],
        "networks": ["ingress"],
        "mounts": [],
        "stackName": s.stack_name,
    });
    merge_extra(out, &s.extra)
}

/// An environment (`EnvironmentEnvironment`).
pub fn environment_json(e: &Environment) -> Value {
    let out = json!({
        "id": e.id,
        "name": e.name,
        "apiUrl": e.api_url,
        "status": e.status,
        "enabled": e.enabled,
        "isEdge": e.edge,
        "lastSeen": "2025-06-01T12:00:00Z",
    });
    // Only edge environments carry `connected` (and an `apiKey` on creation).
    let out = match out {
        Value::Object(mut o) if e.edge => {
            o.insert("connected".into(), json!(e.agent_connected));
            Value::Object(o)
        }
        other => other,
    };
    merge_extra(out, &e.extra)
}

/// The simulator's clock for stored objects: a fixed start plus one second per creation, so
/// answers are the same on every run.
pub fn timestamp(n: u64) -> String {
    unix_to_rfc3339(1_767_225_600 + n as i64)
}

/// Formats Unix seconds as RFC 3339 UTC.
pub fn unix_to_rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// ID of a demo container, derived from its name: `hex_id("container:<name>")`.
pub fn demo_container_id(name: &str) -> String {
    hex_id(&format!("container:{name}"))
}

/// ID of a demo image, derived from its first tag: `sha256:` + `hex_id("image:<tag>")`.
pub fn demo_image_id(tag: &str) -> String {
    format!("sha256:{}", hex_id(&format!("image:{tag}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_demo_is_what_the_loader_reads_from_the_file() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/demo-state.json");
        let from_file = State::load(&path).unwrap();
        assert_eq!(State::demo(), from_file);
        // The demo the README describes: two environments, the named containers with their
        // derived IDs, one scan.
        assert_eq!(from_file.environments.len(), 2);
        let web = from_file
            .containers
            .iter()
            .find(|c| c.name == "web-1")
            .unwrap();
        assert_eq!(web.id, demo_container_id("web-1"));
        assert_eq!(web.image_id, demo_image_id("nginx:1.27-alpine"));
        assert_eq!(from_file.scans.len(), 1);
    }

    #[test]
    fn demo_round_trips_through_json_and_yaml() {
        let d = State::demo();
        let j = serde_json::to_string(&d).unwrap();
        assert_eq!(State::parse(&j).unwrap(), d);
        let y = yaml_serde::to_string(&d).unwrap();
        assert_eq!(State::parse(&y).unwrap(), d);
    }

    #[test]
    fn bad_state_is_an_error() {
        let e = State::parse("{\"containers\": 3}").unwrap_err();
        assert!(format!("{e:#}").contains("invalid JSON state"));
        let e = State::parse("bogus: [1]\n").unwrap_err();
        assert!(format!("{e:#}").contains("unknown field"), "{e:#}");
    }

    #[test]
    fn rfc3339() {
        assert_eq!(unix_to_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(unix_to_rfc3339(1_717_171_717), "2024-05-31T16:08:37Z");
    }

    #[test]
    fn compose_bytes_become_strings() {
        // docs/arcane-wire.md#compose-byte-sizes: compose byte sizes go out as quoted decimals, "0" when unset.
        let mut s = json!({"mem_limit": 268435456, "build": {}, "deploy": {"resources": {"limits": {"memory": 5}}},
                           "volumes": [{"tmpfs": {"size": 64}}]});
        stringify_compose_bytes(&mut s);
        assert_eq!(s["mem_limit"], "268435456");
        assert_eq!(s["mem_reservation"], "0");
        assert_eq!(s["build"]["shm_size"], "0");
        assert_eq!(s["deploy"]["resources"]["limits"]["memory"], "5");
        assert_eq!(s["volumes"][0]["tmpfs"]["size"], "64");
    }
}
