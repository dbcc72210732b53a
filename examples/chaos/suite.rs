//! The chaos suite (docs/measurements.md#chaos): many concurrent MCP sessions over stdio and
//! Streamable HTTP against `arcane-mcp` server processes, while the simulator injects every
//! fault kind it has and the operator overlays reload, some of them broken. Loopback only,
//! bounded in time (rounds of load, then a drain and the checks) and in count (sessions).
//!
//! What it asserts, each a line of [`Report::violations`]:
//! - every call is answered within `call_timeout` (the server's `--timeout` plus room for a
//!   name lookup and a wait for a request slot), and no session's transport breaks;
//! - nothing unconfirmed reaches the simulator: every write request in its log is one the
//!   suite sent as a write or a confirmed delete, and the objects the unconfirmed destructive
//!   calls name are still there after every round;
//! - every mutating call has its audit line (per server process and action, the counts agree;
//!   every created volume's name is in a line) and no unconfirmed call is logged as run;
//! - after every broken reload the last good catalog is served (its generation and the action
//!   it withdraws), and every good reload is served;
//! - the servers' RSS stays under the stated bounds and returns after each burst (and does not
//!   creep from round to round);
//! - no server process dies or panics.
//!
//! `examples/chaos/main.rs` runs it from the command line; `tests/chaos.rs` runs a short one in
//! the normal test suite. Both call [`run`]; nothing here is duplicated there.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read, Seek};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use arcane_sim::hooks::HooksClient;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `arcane-mcp` binary.
    pub server_bin: PathBuf,
    /// Arcane's OpenAPI document, loaded by the simulator and the servers.
    pub spec: PathBuf,
    /// The servers' working directory (the repository: its `catalog/` declarations load).
    pub workdir: PathBuf,
    /// Total time under load; split into rounds of `round`.
    pub duration: Duration,
    pub round: Duration,
    /// Sessions of the one HTTP server per round (every fourth declines confirmations).
    pub http_sessions: usize,
    /// stdio server processes, one session each, kept for the whole run (the second declines).
    pub stdio_sessions: usize,
    pub seed: u64,
    /// The servers' `--timeout` (seconds).
    pub server_timeout_s: u64,
    /// How long a call may take before it counts as unanswered.
    pub call_timeout: Duration,
    /// Peak RSS bounds, MiB.
    pub http_rss_bound_mb: u64,
    pub stdio_rss_bound_mb: u64,
    /// Print a line per round to stderr.
    pub verbose: bool,
}

impl Config {
    /// The short run of the test suite: two rounds, a few sessions.
    pub fn short(server_bin: PathBuf, spec: PathBuf, workdir: PathBuf) -> Config {
        Config {
            server_bin,
            spec,
            workdir,
            duration: Duration::from_secs(20),
            round: Duration::from_secs(10),
            http_sessions: 6,
            stdio_sessions: 2,
            seed: 34,
            server_timeout_s: 5,
            call_timeout: Duration::from_secs(40),
            http_rss_bound_mb: 400,
            stdio_rss_bound_mb: 300,
            verbose: false,
        }
    }
}

/// Which calls a session makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Read,
    Search,
    Stream,
    Write,
    /// A destructive call with `"confirm": true` from a client that cannot ask: it runs.
    Confirmed,
    /// A destructive call nobody confirmed: without `confirm`, or with `"confirm": true` from
    /// a client that asks the person and is declined. It must never reach Arcane.
    Unconfirmed,
    /// The reload checker's reads of `arcane://tools`.
    Resource,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Read,
        Kind::Search,
        Kind::Stream,
        Kind::Write,
        Kind::Confirmed,
        Kind::Unconfirmed,
        Kind::Resource,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Search => "search",
            Kind::Stream => "stream",
            Kind::Write => "write",
            Kind::Confirmed => "confirmed-destructive",
            Kind::Unconfirmed => "unconfirmed-destructive",
            Kind::Resource => "resource",
        }
    }
}

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    Ok,
    ToolError,
    /// A JSON-RPC error answer.
    ProtocolError,
    /// No answer: the transport failed or the session ended.
    Broken,
    /// No answer within `call_timeout`.
    Timeout,
}

/// The objects the unconfirmed calls name: real ones, so a leak would destroy them.
const UNCONFIRMED: [(&str, &str, &str); 4] = [
    ("container.delete", "containerId", "web-1"),
    ("container.kill", "containerId", "db-1"),
    ("volume.delete", "volumeName", "orphaned-cache"),
    ("image.prune", "", ""),
];

const READS: [(&str, &str); 7] = [
    ("container.list", "{}"),
    ("container.get", r#"{"containerId":"web-1"}"#),
    ("image.list", "{}"),
    ("volume.list", "{}"),
    ("project.list", "{}"),
    ("network.list", "{}"),
    ("container.list", r#"{"environmentId":"env-2"}"#),
];

const SEARCHES: [&str; 8] = [
    "restart a container",
    "delete unused images",
    "show the logs of a service",
    "pull an image",
    "list volumes",
    "update a stack",
    "who is logged in",
    "prune networks",
];

/// The two harmless actions the good overlays withdraw in turn (the sessions never call them).
const TOGGLED: [&str; 2] = ["event.stats", "template.default"];

/// Broken overlays, each a different way an operator's file fails to load.
const BROKEN: [(&str, &str); 5] = [
    (
        "YAML syntax",
        "actions:\n  event.stats: {exclude: \"never closed\n",
    ),
    ("unknown field", "actions:\n  event.stats: {exclud: typo}\n"),
    (
        "duplicate key",
        "actions:\n  event.stats: {exclude: a}\n  event.stats: {exclude: b}\n",
    ),
    (
        "bad confirm value",
        "actions:\n  event.stats: {confirm: sometimes}\n",
    ),
    ("alias expansion bomb", ALIAS_BOMB),
];

/// A billion copies of one string through nine levels of aliases (a few hundred bytes).
const ALIAS_BOMB: &str = "a: &a [x,x,x,x,x,x,x,x,x,x]\n\
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n\
actions: {event.stats: {exclude: [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]}}\n";

/// The fault kinds, injected in turn (a `slow_body` on a list and on a stream).
const FAULT_KINDS: [&str; 9] = [
    "status",
    "delay",
    "drop",
    "malformed_json",
    "truncated_stream",
    "stream_error",
    "agent_unreachable",
    "slow_body",
    "slow_body_stream",
];

/// A small deterministic generator (splitmix64): the same seed gives the same run's choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The MCP client of every session: with `declines`, it declares form elicitation and declines
/// every question.
#[derive(Clone)]
struct ChaosClient {
    declines: bool,
    asked: Arc<AtomicU64>,
}

impl ClientHandler for ChaosClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let caps = if self.declines {
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build()
        } else {
            rmcp::model::ClientCapabilities::default()
        };
        rmcp::model::ClientConfig::new(caps, rmcp::model::Implementation::new("chaos", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Decline,
        ))
    }
}

type Client = RunningService<RoleClient, ChaosClient>;

/// One session and the server process whose audit log records its calls.
struct Session {
    label: String,
    /// `http` or `stdio-N`: the audit log of the process.
    process: String,
    declines: bool,
    client: Client,
}

/// Everything the tasks of a run record.
#[derive(Default)]
struct Record {
    /// (kind, answer) → latencies in µs.
    calls: BTreeMap<(Kind, Answer), Vec<u64>>,
    /// Tool errors by a coarse reading of their text (for the summary only).
    error_kinds: BTreeMap<&'static str, u64>,
    /// Mutating calls of this round: (process, action) → count.
    expected_audit: BTreeMap<(String, String), u64>,
    /// Volumes created this round, by process.
    created_volumes: BTreeMap<String, BTreeSet<String>>,
    /// Volumes whose confirmed delete was sent (whole run).
    confirmed_deletes: BTreeSet<String>,
    faults_applied: BTreeMap<&'static str, u64>,
    faults_expired: BTreeMap<&'static str, u64>,
    good_reloads: Vec<u64>,
    broken_reloads: BTreeMap<&'static str, u64>,
    sim_writes_checked: u64,
    audit_lines_checked: u64,
    violations: Vec<String>,
    violation_count: u64,
}

impl Record {
    fn violation(&mut self, v: String) {
        self.violation_count += 1;
        if self.violations.len() < 50 {
            self.violations.push(v);
        }
    }
}

type Shared = Arc<Mutex<Record>>;

fn lock(r: &Shared) -> std::sync::MutexGuard<'_, Record> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

/// RSS figures of one server process, MiB.
#[derive(Debug, Clone, Default)]
pub struct Rss {
    pub label: String,
    pub baseline: f64,
    pub peak_sampled: f64,
    pub hwm: f64,
    /// After each round's burst, once the sessions closed (HTTP) or went idle (stdio).
    pub after: Vec<f64>,
    pub bound: f64,
}

/// What a run found.
pub struct Report {
    pub config: Config,
    pub wall: Duration,
    pub rounds: usize,
    record: Record,
    pub rss: Vec<Rss>,
    pub questions_declined: u64,
}

impl Report {
    /// Every broken promise, in words; empty when the run passed.
    pub fn violations(&self) -> Vec<String> {
        let mut v = self.record.violations.clone();
        if self.record.violation_count > v.len() as u64 {
            v.push(format!(
                "… and {} more",
                self.record.violation_count - v.len() as u64
            ));
        }
        v
    }

    /// The number of calls made.
    pub fn calls(&self) -> u64 {
        self.record.calls.values().map(|l| l.len() as u64).sum()
    }

    /// The figures, as text for a person.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let c = &self.config;
        let r = &self.record;
        let mut s = String::new();
        let calls = self.calls();
        let _ = writeln!(
            s,
            "chaos: {:.0} s in {} rounds of {} s; {} HTTP sessions per round ({} declining confirmations) + {} stdio sessions; server --timeout {} s, call timeout {} s, seed {}",
            self.wall.as_secs_f64(),
            self.rounds,
            c.round.as_secs(),
            c.http_sessions,
            c.http_sessions / 4,
            c.stdio_sessions,
            c.server_timeout_s,
            c.call_timeout.as_secs(),
            c.seed,
        );
        let _ = writeln!(
            s,
            "calls: {calls} ({:.0}/s)",
            calls as f64 / self.wall.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "  {:<24} {:>8} {:>8} {:>10} {:>10} {:>7} {:>8} {:>9} {:>9}",
            "kind",
            "calls",
            "ok",
            "tool error",
            "rpc error",
            "broken",
            "timeout",
            "p50 ms",
            "p99 ms"
        );
        let mut all = Vec::new();
        for k in Kind::ALL {
            let mut lat: Vec<u64> = Vec::new();
            let count = |a: Answer| r.calls.get(&(k, a)).map_or(0, Vec::len);
            for a in [
                Answer::Ok,
                Answer::ToolError,
                Answer::ProtocolError,
                Answer::Broken,
                Answer::Timeout,
            ] {
                lat.extend(r.calls.get(&(k, a)).into_iter().flatten());
            }
            all.extend(lat.iter().copied());
            let (p50, p99) = percentiles(&mut lat);
            let _ = writeln!(
                s,
                "  {:<24} {:>8} {:>8} {:>10} {:>10} {:>7} {:>8} {:>9.1} {:>9.1}",
                k.name(),
                lat.len(),
                count(Answer::Ok),
                count(Answer::ToolError),
                count(Answer::ProtocolError),
                count(Answer::Broken),
                count(Answer::Timeout),
                p50,
                p99
            );
        }
        let (p50, p99) = percentiles(&mut all);
        let _ = writeln!(s, "  all calls: p50 {p50:.1} ms, p99 {p99:.1} ms");
        let _ = writeln!(s, "tool errors by reading: {}", join(&r.error_kinds));
        let _ = writeln!(s, "faults applied: {}", join(&r.faults_applied));
        if !r.faults_expired.is_empty() {
            let _ = writeln!(s, "faults expired unmatched: {}", join(&r.faults_expired));
        }
        let mut reload = r.good_reloads.clone();
        let (rp50, rp99) = percentiles(&mut reload);
        let _ = writeln!(
            s,
            "reloads: {} good (served after p50 {rp50:.0} ms, p99 {rp99:.0} ms), {} broken ({}), the last good catalog served after each",
            r.good_reloads.len(),
            r.broken_reloads.values().sum::<u64>(),
            join(&r.broken_reloads)
        );
        let _ = writeln!(
            s,
            "simulator: {} write requests checked; audit: {} lines checked; {} confirmation questions declined",
            r.sim_writes_checked, r.audit_lines_checked, self.questions_declined
        );
        for m in &self.rss {
            let after: Vec<String> = m.after.iter().map(|a| format!("{a:.0}")).collect();
            let _ = writeln!(
                s,
                "rss {}: baseline {:.1} MiB, peak {:.1} MiB sampled ({:.1} VmHWM, bound {:.0}), after each burst [{}] MiB",
                m.label,
                m.baseline,
                m.peak_sampled,
                m.hwm,
                m.bound,
                after.join(", ")
            );
        }
        let v = self.violations();
        let _ = writeln!(s, "violations: {}", v.len());
        for line in v {
            let _ = writeln!(s, "  - {line}");
        }
        s
    }
}

fn join<K: std::fmt::Display>(m: &BTreeMap<K, u64>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// p50 and p99 of latencies in µs, as ms.
fn percentiles(l: &mut [u64]) -> (f64, f64) {
    if l.is_empty() {
        return (0.0, 0.0);
    }
    l.sort_unstable();
    let at = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)] as f64 / 1000.0;
    (at(0.50), at(0.99))
}

/// A coarse reading of a tool error's text, for the summary.
fn error_kind(text: &str) -> &'static str {
    let t = text.to_lowercase();
    if t.contains("nothing was sent") || t.contains("confirm") || t.contains("declined") {
        "refused (confirmation)"
    } else if t.contains("timed out") || t.contains("timeout") {
        "timed out"
    } else if t.contains("json") || t.contains("decode") || t.contains("malformed") {
        "unreadable answer"
    } else if t.contains("agent") {
        "agent unreachable"
    } else if t.contains("connection") || t.contains("closed") || t.contains("ended") {
        "connection cut"
    } else if t.contains(" 5") || t.contains("429") || t.contains("status") {
        "error status"
    } else {
        "other"
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn execute(action: &str, params: Value, confirm: bool) -> (String, Map<String, Value>) {
    (
        "arcane_execute_action".into(),
        args(json!({"action": action, "params": params, "confirm": confirm})),
    )
}

/// Makes one call and records its answer; returns whether it succeeded.
async fn call(
    rec: &Shared,
    timeout: Duration,
    client: &Client,
    kind: Kind,
    tool: String,
    arguments: Map<String, Value>,
    label: &str,
) -> bool {
    let started = Instant::now();
    let r = tokio::time::timeout(
        timeout,
        client
            .call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(arguments.clone())),
    )
    .await;
    let took = started.elapsed().as_micros() as u64;
    let mut rec = lock(rec);
    let (answer, ok) = match r {
        Err(_) => {
            rec.violation(format!(
                "{label}: no answer within {} s to {tool} {}",
                timeout.as_secs(),
                Value::Object(arguments.clone())
            ));
            (Answer::Timeout, false)
        }
        Ok(Ok(res)) if res.is_error == Some(true) => {
            let text: String = res
                .content
                .iter()
                .filter_map(|c| match c {
                    rmcp::model::ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            *rec.error_kinds.entry(error_kind(&text)).or_default() += 1;
            (Answer::ToolError, false)
        }
        Ok(Ok(_)) => (Answer::Ok, true),
        Ok(Err(rmcp::ServiceError::McpError(_))) => (Answer::ProtocolError, false),
        Ok(Err(e)) => {
            rec.violation(format!("{label}: the session broke during {tool}: {e}"));
            (Answer::Broken, false)
        }
    };
    if kind == Kind::Unconfirmed && ok {
        rec.violation(format!(
            "{label}: an unconfirmed destructive call succeeded: {}",
            Value::Object(arguments)
        ));
    }
    rec.calls.entry((kind, answer)).or_default().push(took);
    ok
}

/// One session's load until `until`.
async fn worker(s: Arc<Session>, seed: u64, until: Instant, rec: Shared, timeout: Duration) {
    let mut rng = Rng(seed);
    let mut created: Vec<String> = Vec::new();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let roll = rng.below(100);
        let (kind, (tool, arguments), mutating) = match roll {
            0..40 => {
                let (action, params) = rng.pick(&READS);
                (
                    Kind::Read,
                    execute(
                        action,
                        serde_json::from_str(params).unwrap_or_default(),
                        false,
                    ),
                    None,
                )
            }
            40..55 => (
                Kind::Search,
                (
                    "arcane_find_action".to_string(),
                    args(json!({"query": rng.pick(&SEARCHES)})),
                ),
                None,
            ),
            55..65 => (
                Kind::Stream,
                execute(
                    "image.pull",
                    json!({"imageName": "nginx:1.27-alpine"}),
                    false,
                ),
                Some("image.pull"),
            ),
            65..73 => {
                let name = format!("chaos-v-{}-{n}", s.label);
                let mut r = lock(&rec);
                r.created_volumes
                    .entry(s.process.clone())
                    .or_default()
                    .insert(name.clone());
                drop(r);
                created.push(name.clone());
                (
                    Kind::Write,
                    execute("volume.create", json!({"name": name}), false),
                    Some("volume.create"),
                )
            }
            73..80 => (
                Kind::Write,
                execute("container.restart", json!({"containerId": "web-1"}), false),
                Some("container.restart"),
            ),
            80..88 if !s.declines && !created.is_empty() => {
                let name = created.remove(rng.below(created.len() as u64) as usize);
                // Recorded before it is sent: the simulator's log may show it at once.
                lock(&rec).confirmed_deletes.insert(name.clone());
                (
                    Kind::Confirmed,
                    execute("volume.delete", json!({"volumeName": name}), true),
                    Some("volume.delete"),
                )
            }
            _ => {
                let (action, param, value) = *rng.pick(&UNCONFIRMED);
                let params = if param.is_empty() {
                    json!({})
                } else {
                    json!({ param: value })
                };
                // A declining client's model says `confirm: true`; the person still says no.
                (
                    Kind::Unconfirmed,
                    execute(action, params, s.declines),
                    Some(action),
                )
            }
        };
        if let Some(action) = mutating {
            *lock(&rec)
                .expected_audit
                .entry((s.process.clone(), action.to_string()))
                .or_default() += 1;
        }
        call(&rec, timeout, &s.client, kind, tool, arguments, &s.label).await;
    }
}

/// A fault of kind `FAULT_KINDS[k]`, for 1–3 matching requests.
fn fault(k: usize, rng: &mut Rng, server_timeout_s: u64) -> Value {
    let times = 1 + rng.below(3);
    let lists = "/environments/0/(containers|images|volumes|networks|projects)$";
    match FAULT_KINDS[k] {
        "status" => json!({"path": lists, "kind": "status",
                           "status": *rng.pick(&[500u16, 502, 503, 429, 404]), "times": times}),
        "delay" => {
            // One in four outlasts the server's timeout.
            let ms = if rng.below(4) == 0 {
                server_timeout_s * 1000 + 1000
            } else {
                100 + rng.below(1500)
            };
            json!({"path": "^/api/environments/0/", "kind": "delay", "delayMs": ms, "times": times})
        }
        "drop" => {
            json!({"path": "/environments/0/(containers|volumes)", "kind": "drop", "times": times})
        }
        "malformed_json" => json!({"path": lists, "kind": "malformed_json", "times": times}),
        "truncated_stream" => {
            let path = *rng.pick(&["/images/pull$", "/environments/0/containers$"]);
            json!({"path": path, "kind": "truncated_stream", "times": times})
        }
        "stream_error" => json!({"path": "/images/pull$", "kind": "stream_error", "times": times}),
        "agent_unreachable" => {
            json!({"path": "^/api/environments/env-2/", "kind": "agent_unreachable", "times": times})
        }
        "slow_body" => json!({"path": lists, "kind": "slow_body",
                              "chunkBytes": 64 + rng.below(448), "paceMs": 5 + rng.below(60), "times": times}),
        _ => json!({"path": "/images/pull$", "kind": "slow_body",
                    "chunkBytes": 8 + rng.below(24), "paceMs": 10 + rng.below(40), "times": times}),
    }
}

/// Injects one fault at a time, every kind in turn, each until the simulator consumed it (or 3 s
/// without a matching request).
async fn injector(hooks: HooksClient, rec: Shared, stop: Arc<AtomicBool>, seed: u64, t: u64) {
    let mut rng = Rng(seed);
    let mut k = rng.below(FAULT_KINDS.len() as u64) as usize;
    let mut current: Option<(usize, Instant)> = None;
    while !stop.load(Ordering::Relaxed) {
        let pending = hooks.pending_faults().await.unwrap_or(u64::MAX);
        let next = match current {
            None => true,
            Some((c, _)) if pending == 0 => {
                *lock(&rec).faults_applied.entry(FAULT_KINDS[c]).or_default() += 1;
                true
            }
            Some((c, since)) if since.elapsed() > Duration::from_secs(3) => {
                let _ = hooks.clear_faults().await;
                *lock(&rec).faults_expired.entry(FAULT_KINDS[c]).or_default() += 1;
                true
            }
            Some(_) => false,
        };
        if next {
            k = (k + 1) % FAULT_KINDS.len();
            match hooks.add_faults(&fault(k, &mut rng, t)).await {
                Ok(_) => current = Some((k, Instant::now())),
                Err(e) => {
                    lock(&rec).violation(format!("the simulator refused a fault: {e}"));
                    current = None;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = hooks.clear_faults().await;
}

/// `arcane://tools` as a session sees it.
async fn tools_index(client: &Client, rec: &Shared, timeout: Duration) -> Option<Value> {
    let started = Instant::now();
    let r = tokio::time::timeout(
        timeout,
        client.read_resource(ReadResourceRequestParams::new("arcane://tools".to_string())),
    )
    .await;
    let took = started.elapsed().as_micros() as u64;
    let mut rec = lock(rec);
    let (answer, v) = match r {
        Err(_) => (Answer::Timeout, None),
        Ok(Err(rmcp::ServiceError::McpError(_))) => (Answer::ProtocolError, None),
        Ok(Err(_)) => (Answer::Broken, None),
        Ok(Ok(res)) => match res.contents.first() {
            Some(ResourceContents::TextResourceContents { text, .. }) => {
                (Answer::Ok, serde_json::from_str::<Value>(text).ok())
            }
            _ => (Answer::ToolError, None),
        },
    };
    if answer != Answer::Ok {
        rec.violation(format!("arcane://tools was not read: {answer:?}"));
    }
    rec.calls
        .entry((Kind::Resource, answer))
        .or_default()
        .push(took);
    v
}

fn withdraws(index: &Value, action: &str) -> bool {
    index["actions"]
        .as_array()
        .is_some_and(|a| !a.iter().any(|x| x["id"] == action))
}

/// Writes the overlay whole (a rename), so the watcher never reads half a file.
fn write_overlay(dir: &Path, text: &str) -> Result<()> {
    let tmp = dir.join(".chaos.yaml.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join("chaos.yaml"))?;
    Ok(())
}

/// The served catalog's state the reloader last made: generation, withdrawn action.
#[derive(Clone, Copy)]
struct Served {
    generation: u64,
    withdrawn: Option<&'static str>,
}

/// Alternates good and broken overlays; after each good one waits until it serves, after each
/// broken one until the server reported the failure, then checks the last good catalog serves.
#[allow(clippy::too_many_arguments)]
async fn reloader(
    probe: Arc<Session>,
    dir: PathBuf,
    failures: Arc<AtomicU64>,
    rec: Shared,
    stop: Arc<AtomicBool>,
    served: Arc<Mutex<Served>>,
    step: Arc<AtomicU64>,
    timeout: Duration,
) {
    let guard = Duration::from_secs(30);
    loop {
        // A round ends on a good overlay. A server whose rebuild is slower than the probe's
        // (a stdio server on a starved CPU) may read a good overlay and the broken one after
        // it in one rebuild, and rightly keep an older good catalog; after a last good
        // overlay every server must serve that one.
        if stop.load(Ordering::Relaxed) && step.load(Ordering::Relaxed).is_multiple_of(2) {
            break;
        }
        let i = step.fetch_add(1, Ordering::Relaxed);
        let last = *served.lock().unwrap_or_else(|p| p.into_inner());
        if i.is_multiple_of(2) {
            let action = TOGGLED[((i / 2) % 2) as usize];
            let text = format!("actions:\n  {action}: {{exclude: \"chaos reload {i}\"}}\n");
            if let Err(e) = write_overlay(&dir, &text) {
                lock(&rec).violation(format!("cannot write the overlay: {e}"));
                return;
            }
            let started = Instant::now();
            loop {
                let Some(ix) = tools_index(&probe.client, &rec, timeout).await else {
                    return;
                };
                let generation = ix["generation"].as_u64().unwrap_or(0);
                if generation > last.generation && withdraws(&ix, action) {
                    if !TOGGLED.iter().all(|a| *a == action || !withdraws(&ix, a)) {
                        lock(&rec).violation(format!(
                            "good reload {i}: generation {generation} withdraws the previous overlay's action too"
                        ));
                    }
                    lock(&rec)
                        .good_reloads
                        .push(started.elapsed().as_micros() as u64);
                    *served.lock().unwrap_or_else(|p| p.into_inner()) = Served {
                        generation,
                        withdrawn: Some(action),
                    };
                    break;
                }
                if started.elapsed() > guard {
                    lock(&rec).violation(format!(
                        "good reload {i} ({action} withdrawn) not served within {} s (generation {generation})",
                        guard.as_secs()
                    ));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        } else {
            let (what, text) = BROKEN[((i / 2) as usize) % BROKEN.len()];
            let before = failures.load(Ordering::Relaxed);
            if let Err(e) = write_overlay(&dir, text) {
                lock(&rec).violation(format!("cannot write the overlay: {e}"));
                return;
            }
            let started = Instant::now();
            while failures.load(Ordering::Relaxed) == before {
                if started.elapsed() > guard {
                    lock(&rec).violation(format!(
                        "broken overlay ({what}) was not reported as a failed reload within {} s",
                        guard.as_secs()
                    ));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let Some(ix) = tools_index(&probe.client, &rec, timeout).await else {
                return;
            };
            let generation = ix["generation"].as_u64().unwrap_or(0);
            let kept = generation == last.generation
                && last.withdrawn.is_none_or(|a| withdraws(&ix, a))
                && TOGGLED
                    .iter()
                    .all(|a| Some(*a) == last.withdrawn || !withdraws(&ix, a));
            if !kept {
                lock(&rec).violation(format!(
                    "after the broken overlay ({what}) the last good catalog (generation {}) is not served: generation {generation}",
                    last.generation
                ));
            }
            *lock(&rec).broken_reloads.entry(what).or_default() += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn proc_status(pid: u32, field: &str) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Whether the process runs (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The servers' common arguments.
fn server_args(
    cfg: &Config,
    sim: &arcane_sim::RunningSim,
    tmp: &Path,
    audit: &Path,
) -> Vec<String> {
    vec![
        "--arcane-url".into(),
        sim.base_url(),
        "--api-key".into(),
        sim.api_key().into(),
        "--spec".into(),
        cfg.spec.display().to_string(),
        "--catalog-cache-dir".into(),
        tmp.join("catalog-cache").display().to_string(),
        "--overrides".into(),
        tmp.join("overlays").display().to_string(),
        "--timeout".into(),
        cfg.server_timeout_s.to_string(),
        "--audit-log".into(),
        audit.display().to_string(),
        // One file for the whole run, so that every line can be checked (never rotated).
        "--audit-log-max-bytes".into(),
        (1u64 << 40).to_string(),
    ]
}

fn server_command(cfg: &Config, args: &[String]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&cfg.server_bin);
    cmd.current_dir(&cfg.workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ARCANE_MCP_LOG", "warn")
        .args(args)
        .kill_on_drop(true);
    cmd
}

/// Reads a server's stderr: counts failed reloads and panics, keeps the last lines.
fn watch_stderr(
    stderr: tokio::process::ChildStderr,
    failures: Arc<AtomicU64>,
    panics: Arc<AtomicU64>,
    tail: Arc<Mutex<Vec<String>>>,
) {
    tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("reload failed") {
                failures.fetch_add(1, Ordering::Relaxed);
            }
            if line.contains("panicked") {
                panics.fetch_add(1, Ordering::Relaxed);
            }
            let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
            t.push(line);
            if t.len() > 40 {
                t.remove(0);
            }
        }
    });
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn http_session(
    url: &str,
    token: &str,
    label: String,
    declines: bool,
    asked: &Arc<AtomicU64>,
) -> Result<Session> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let handler = ChaosClient {
        declines,
        asked: asked.clone(),
    };
    let client = handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .with_context(|| format!("{label}: cannot open an HTTP session"))?;
    Ok(Session {
        label,
        process: "http".into(),
        declines,
        client,
    })
}

/// Checks the simulator's log of this round: every write is one the suite sent as a write or a
/// confirmed delete; the objects of the unconfirmed calls are still there.
async fn check_simulator(hooks: &HooksClient, rec: &Shared) -> Result<()> {
    let log = hooks.requests().await?;
    let state = hooks.state().await?;
    let mut rec = lock(rec);
    for r in &log {
        let method = r["method"].as_str().unwrap_or("");
        if matches!(method, "GET" | "HEAD") {
            continue;
        }
        rec.sim_writes_checked += 1;
        let path = r["path"].as_str().unwrap_or("");
        let allowed = match method {
            "POST" => {
                path == "/api/environments/0/volumes"
                    || path == "/api/environments/0/images/pull"
                    || (path.starts_with("/api/environments/0/containers/")
                        && path.ends_with("/restart"))
            }
            "DELETE" => path
                .strip_prefix("/api/environments/0/volumes/")
                .is_some_and(|name| rec.confirmed_deletes.contains(name)),
            _ => false,
        };
        if !allowed {
            rec.violation(format!(
                "a request nobody confirmed reached the simulator: {method} {path} {}",
                r["body"]
            ));
        }
    }
    let has = |list: &str, field: &str, value: &str| {
        state[list]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x[field] == value))
    };
    for (list, field, value) in [
        ("containers", "name", "web-1"),
        ("containers", "name", "db-1"),
        ("volumes", "name", "orphaned-cache"),
    ] {
        if !has(list, field, value) {
            rec.violation(format!("{value} is gone from the simulator's {list}"));
        }
    }
    let dangling = state["images"].as_array().is_some_and(|a| {
        a.iter()
            .any(|i| i["repoTags"].as_array().is_none_or(|t| t.is_empty()))
    });
    if !dangling {
        rec.violation("the dangling image is gone: an image prune ran".into());
    }
    Ok(())
}

/// Reads the audit lines written since `offset` (moved past them).
fn read_audit(path: &Path, offset: &mut u64) -> Result<Vec<Value>> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    f.seek(std::io::SeekFrom::Start(*offset))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    // Only whole lines; a line being written is read next time.
    let end = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    *offset += end as u64;
    let mut out = Vec::new();
    for line in buf[..end].lines() {
        let line = line?;
        out.push(
            serde_json::from_str(&line)
                .with_context(|| format!("audit line is not JSON: {line}"))?,
        );
    }
    Ok(out)
}

/// Checks this round's audit lines against the mutating calls made: per process and action
/// the counts agree, every created volume's name is in a line, no unconfirmed call ran.
async fn check_audit(audits: &[(String, PathBuf)], offsets: &mut [u64], rec: &Shared) {
    let expected = std::mem::take(&mut lock(rec).expected_audit);
    let created = std::mem::take(&mut lock(rec).created_volumes);
    let mut lines: Vec<(String, Value)> = Vec::new();
    let started = Instant::now();
    loop {
        for (i, (process, path)) in audits.iter().enumerate() {
            match read_audit(path, &mut offsets[i]) {
                Ok(new) => lines.extend(new.into_iter().map(|l| (process.clone(), l))),
                Err(e) => lock(rec).violation(format!("audit log of {process}: {e:#}")),
            }
        }
        let mut got: BTreeMap<(String, String), u64> = BTreeMap::new();
        for (p, l) in &lines {
            let a = l["action"].as_str().unwrap_or("?").to_string();
            *got.entry((p.clone(), a)).or_default() += 1;
        }
        // Audit lines are written before the answer; the wait covers a slow disk only.
        if got == expected || started.elapsed() > Duration::from_secs(10) {
            let mut rec = lock(rec);
            if got != expected {
                rec.violation(format!(
                    "audit lines do not match the mutating calls: expected {expected:?}, logged {got:?}"
                ));
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut rec = lock(rec);
    rec.audit_lines_checked += lines.len() as u64;
    let mut logged: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (p, l) in &lines {
        let action = l["action"].as_str().unwrap_or("");
        if action == "volume.create"
            && let Some(n) = l["params"]["name"].as_str()
        {
            logged.entry(p.clone()).or_default().insert(n.to_string());
        }
        let unconfirmed = UNCONFIRMED.iter().any(|(a, param, value)| {
            *a == action && (param.is_empty() || l["targets"][*param] == *value)
        });
        // `confirmed` says how the call claimed confirmation (a declining client's model sends
        // `confirm: true`: "param"); what ran is the outcome.
        if unconfirmed && !matches!(l["outcome"].as_str(), Some("refused" | "error")) {
            rec.violation(format!(
                "the audit log shows an unconfirmed call as run: {l}"
            ));
        }
    }
    for (p, names) in &created {
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !logged.get(p).is_some_and(|s| s.contains(*n)))
            .collect();
        if !missing.is_empty() {
            rec.violation(format!(
                "{p}: volume.create without an audit line: {missing:?}"
            ));
        }
    }
}

/// Runs the suite.
pub async fn run(cfg: Config) -> Result<Report> {
    arcane_engine::ensure_crypto_provider();
    if !cfg.server_bin.exists() {
        bail!(
            "no server binary at {} (build it first: cargo build --release --bin arcane-mcp)",
            cfg.server_bin.display()
        );
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir()?;
    std::fs::create_dir_all(tmp.path().join("overlays"))?;
    let sim = arcane_sim::start(arcane_sim::SimConfig::new(cfg.spec.clone())).await?;
    let hooks = HooksClient::new(sim.base_url())?;
    let rec: Shared = Arc::default();
    let asked = Arc::new(AtomicU64::new(0));

    // The HTTP server.
    let token = "chaos-token-0123456789";
    let port = free_port()?;
    let http_audit = tmp.path().join("audit-http.jsonl");
    let mut a = server_args(&cfg, &sim, tmp.path(), &http_audit);
    a.extend(
        [
            "--transport",
            "http",
            "--listen",
            &format!("127.0.0.1:{port}"),
            // All sessions come from one loopback address.
            "--rate-limit",
            "1000000",
        ]
        .map(String::from),
    );
    let mut http_cmd = server_command(&cfg, &a);
    http_cmd
        .env("ARCANE_MCP_AUTH_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut http_child = http_cmd.spawn().context("cannot start the HTTP server")?;
    let http_pid = http_child.id().context("no pid")?;
    let failures = Arc::new(AtomicU64::new(0));
    let panics = Arc::new(AtomicU64::new(0));
    let tail = Arc::new(Mutex::new(Vec::new()));
    watch_stderr(
        http_child.stderr.take().context("no stderr")?,
        failures.clone(),
        panics.clone(),
        tail.clone(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let url = format!("{base}/mcp");
    let http = reqwest::Client::new();
    let ready = Instant::now();
    loop {
        if let Ok(Some(status)) = http_child.try_wait() {
            let t = tail.lock().unwrap_or_else(|p| p.into_inner()).join("\n");
            bail!("the HTTP server exited ({status}) before serving:\n{t}");
        }
        if http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        if ready.elapsed() > Duration::from_secs(60) {
            bail!("the HTTP server did not serve /healthz within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The stdio servers, one session each, for the whole run.
    let mut audits = vec![("http".to_string(), http_audit)];
    let mut stdio: Vec<Arc<Session>> = Vec::new();
    let mut stdio_pids = Vec::new();
    let mut stdio_logs = Vec::new();
    for i in 0..cfg.stdio_sessions {
        let audit = tmp.path().join(format!("audit-stdio-{i}.jsonl"));
        let log = tmp.path().join(format!("stderr-stdio-{i}.log"));
        let cmd = server_command(&cfg, &server_args(&cfg, &sim, tmp.path(), &audit));
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("cannot start a stdio server")?;
        stdio_pids.push(transport.id().context("no pid")?);
        let declines = i % 4 == 1;
        let client = ChaosClient {
            declines,
            asked: asked.clone(),
        }
        .serve(transport)
        .await
        .with_context(|| format!("stdio-{i}: cannot initialize"))?;
        let process = format!("stdio-{i}");
        stdio.push(Arc::new(Session {
            label: process.clone(),
            process: process.clone(),
            declines,
            client,
        }));
        audits.push((process, audit));
        stdio_logs.push(log);
    }
    let mut offsets = vec![0u64; audits.len()];

    // The probe of the reloads, and the baselines.
    let probe = Arc::new(http_session(&url, token, "probe".into(), false, &asked).await?);
    tools_index(&probe.client, &rec, cfg.call_timeout).await;
    for s in &stdio {
        call(
            &rec,
            cfg.call_timeout,
            &s.client,
            Kind::Read,
            execute("container.list", json!({}), false).0,
            execute("container.list", json!({}), false).1,
            &s.label,
        )
        .await;
    }
    let mut pids = vec![("http".to_string(), http_pid, cfg.http_rss_bound_mb)];
    pids.extend(
        stdio_pids
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("stdio-{i}"), *p, cfg.stdio_rss_bound_mb)),
    );
    let rss: Arc<Mutex<Vec<Rss>>> = Arc::new(Mutex::new(
        pids.iter()
            .map(|(label, pid, bound)| Rss {
                label: label.clone(),
                baseline: proc_status(*pid, "VmRSS:").unwrap_or(0.0),
                bound: *bound as f64,
                ..Rss::default()
            })
            .collect(),
    ));
    let sampling = Arc::new(AtomicBool::new(false));
    {
        let (rss, pids, sampling, rec) = (rss.clone(), pids.clone(), sampling.clone(), rec.clone());
        tokio::spawn(async move {
            let mut reported = BTreeSet::new();
            while !sampling.load(Ordering::Relaxed) {
                for (i, (label, pid, _)) in pids.iter().enumerate() {
                    if !alive(*pid) && reported.insert(i) {
                        lock(&rec).violation(format!("the {label} server process died"));
                    }
                    if let Some(m) = proc_status(*pid, "VmRSS:") {
                        let mut r = rss.lock().unwrap_or_else(|p| p.into_inner());
                        r[i].peak_sampled = r[i].peak_sampled.max(m);
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }

    let served = Arc::new(Mutex::new(Served {
        generation: 0,
        withdrawn: None,
    }));
    let step = Arc::new(AtomicU64::new(0));
    let rounds = (cfg.duration.as_secs_f64() / cfg.round.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let mut rng = Rng(cfg.seed);
    for round in 0..rounds {
        let round_started = Instant::now();
        let left = cfg
            .duration
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1));
        let until = Instant::now() + cfg.round.min(left);
        let _ = hooks.reset().await;
        let mut sessions: Vec<Arc<Session>> = Vec::new();
        for i in 0..cfg.http_sessions {
            let label = format!("http{round}.{i}");
            match http_session(&url, token, label, i % 4 == 3, &asked).await {
                Ok(s) => sessions.push(Arc::new(s)),
                Err(e) => lock(&rec).violation(format!("{e:#}")),
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let inj = tokio::spawn(injector(
            hooks.clone(),
            rec.clone(),
            stop.clone(),
            rng.next(),
            cfg.server_timeout_s,
        ));
        let rel = tokio::spawn(reloader(
            probe.clone(),
            tmp.path().join("overlays"),
            failures.clone(),
            rec.clone(),
            stop.clone(),
            served.clone(),
            step.clone(),
            cfg.call_timeout,
        ));
        let mut workers = Vec::new();
        for s in sessions.iter().chain(stdio.iter()) {
            workers.push(tokio::spawn(worker(
                s.clone(),
                rng.next(),
                until,
                rec.clone(),
                cfg.call_timeout,
            )));
        }
        for w in workers {
            let _ = w.await;
        }
        stop.store(true, Ordering::Relaxed);
        let _ = inj.await;
        let _ = rel.await;
        let _ = hooks.clear_faults().await;

        // The burst is over: close the HTTP sessions, check, measure.
        for s in sessions {
            if let Ok(s) = Arc::try_unwrap(s) {
                let _ = s.client.cancel().await;
            }
        }
        check_simulator(&hooks, &rec).await?;
        check_audit(&audits, &mut offsets, &rec).await;
        // The stdio servers saw the same overlays: the last good one serves there too.
        let want = *served.lock().unwrap_or_else(|p| p.into_inner());
        for s in &stdio {
            let t = Instant::now();
            loop {
                let Some(ix) = tools_index(&s.client, &rec, cfg.call_timeout).await else {
                    break;
                };
                if want.withdrawn.is_none_or(|a| withdraws(&ix, a)) {
                    break;
                }
                if t.elapsed() > Duration::from_secs(30) {
                    lock(&rec).violation(format!(
                        "{}: the last good overlay ({:?} withdrawn) is not served",
                        s.label, want.withdrawn
                    ));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        // Memory settles once the calls are gone (the handler trims after a burst).
        tokio::time::sleep(Duration::from_secs(3)).await;
        {
            let mut r = rss.lock().unwrap_or_else(|p| p.into_inner());
            for (i, (_, pid, _)) in pids.iter().enumerate() {
                r[i].after.push(proc_status(*pid, "VmRSS:").unwrap_or(0.0));
            }
        }
        if cfg.verbose {
            let r = lock(&rec);
            let calls: usize = r.calls.values().map(Vec::len).sum();
            let after: Vec<String> = rss
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|m| format!("{} {:.0}", m.label, m.after.last().copied().unwrap_or(0.0)))
                .collect();
            eprintln!(
                "chaos: round {}/{rounds} done in {:.1} s; {calls} calls so far, {} violations; rss after [{}] MiB",
                round + 1,
                round_started.elapsed().as_secs_f64(),
                r.violation_count,
                after.join(", ")
            );
        }
    }

    // After the run: every server still answers a plain call, none died or panicked.
    let last = http_session(&url, token, "final".into(), false, &asked).await?;
    let mut finals = vec![&last.client];
    finals.extend(stdio.iter().map(|s| &s.client));
    for c in finals {
        let (tool, a) = execute("container.list", json!({}), false);
        if !call(&rec, cfg.call_timeout, c, Kind::Read, tool, a, "final").await {
            lock(&rec).violation("a server does not answer container.list after the run".into());
        }
    }
    let _ = last.client.cancel().await;
    sampling.store(true, Ordering::Relaxed);
    let mut rss = std::mem::take(&mut *rss.lock().unwrap_or_else(|p| p.into_inner()));
    for (i, (_, pid, _)) in pids.iter().enumerate() {
        rss[i].hwm = proc_status(*pid, "VmHWM:").unwrap_or(0.0);
    }
    {
        let mut r = lock(&rec);
        if let Ok(Some(status)) = http_child.try_wait() {
            r.violation(format!("the HTTP server exited: {status}"));
        }
        if panics.load(Ordering::Relaxed) > 0 {
            let t = tail.lock().unwrap_or_else(|p| p.into_inner()).join("\n");
            r.violation(format!("the HTTP server panicked:\n{t}"));
        }
        for (i, log) in stdio_logs.iter().enumerate() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.contains("panicked") {
                r.violation(format!("stdio-{i} panicked: {text}"));
            }
        }
        for k in FAULT_KINDS {
            if !r.faults_applied.contains_key(k) {
                r.violation(format!("the fault kind {k} was never applied"));
            }
        }
        if r.good_reloads.is_empty() || r.broken_reloads.is_empty() {
            r.violation("no good or no broken reload was made".into());
        }
        let declined_calls = stdio.iter().any(|s| s.declines) || cfg.http_sessions >= 4;
        if declined_calls && asked.load(Ordering::Relaxed) == 0 {
            r.violation("no confirmation question was ever asked of a declining client".into());
        }
        for m in &rss {
            if m.baseline == 0.0 {
                continue; // no /proc: not measured
            }
            let peak = m.peak_sampled.max(m.hwm);
            if peak > m.bound {
                r.violation(format!(
                    "{}: peak RSS {peak:.0} MiB over the bound of {:.0} MiB",
                    m.label, m.bound
                ));
            }
            // Returned: what the first burst leaves (calls gone, and the catalogs of the
            // reloads: each good reload builds a catalog and a search index beside the old
            // one, and a process that reloaded settles higher than at startup) is the level
            // the later bursts must come back to — no creep of more than 64 MiB (the reloads'
            // catalogs still add some in the first rounds).
            let first = m.after.first().copied().unwrap_or(0.0);
            let last = m.after.iter().copied().fold(0.0, f64::max);
            if last > first + 64.0 {
                r.violation(format!(
                    "{}: RSS after the bursts crept from {first:.0} to {last:.0} MiB",
                    m.label
                ));
            }
        }
    }
    for s in stdio {
        if let Ok(s) = Arc::try_unwrap(s) {
            let _ = s.client.cancel().await;
        }
    }
    if let Ok(p) = Arc::try_unwrap(probe) {
        let _ = p.client.cancel().await;
    }
    let _ = http_child.start_kill();
    let _ = http_child.wait().await;
    sim.shutdown().await;
    let record = std::mem::take(&mut *lock(&rec));
    Ok(Report {
        config: cfg,
        wall: started.elapsed(),
        rounds,
        record,
        rss,
        questions_declined: asked.load(Ordering::Relaxed),
    })
}
