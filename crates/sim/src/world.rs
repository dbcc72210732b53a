//! The world the simulator shares between requests: the spec, the users, the state and the
//! seed a reset returns to, the request log, pending faults, streams and activities, the
//! imitated version. Everything else reads and changes it through [`Shared`]'s methods.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};

use crate::config::{ArcaneVersion, SimUser};
use crate::faults::{self, Fault, FaultSpec};
use crate::spec::Spec;
use crate::state::State;

/// Everything the simulator shares between requests.
pub struct Shared {
    pub spec: Spec,
    /// Every accepted key with its user.
    users: Vec<SimUser>,
    /// Sign-ins and personal API keys (`src/accounts.rs`).
    accounts: Mutex<crate::accounts::Accounts>,
    seed: Mutex<State>,
    state: Mutex<State>,
    log: Mutex<Vec<Value>>,
    faults: Mutex<Vec<Fault>>,
    streams: Mutex<Vec<Value>>,
    /// Every activity ID handed out, with the stream that reports it (if any).
    activities: Mutex<Vec<(String, Option<usize>)>>,
    pub stream_pace_ms: AtomicU64,
    activity: AtomicU64,
    /// Imitating Arcane's main branch (else 2.8.x); switchable through `/__sim/config`.
    main: AtomicBool,
    /// Counts list requests: Docker's order of some lists changes from one request to the
    /// next, and this makes the change deterministic per request sequence.
    list_seq: AtomicU64,
}

/// Default pause between two lines of a JSON-lines stream.
pub const DEFAULT_STREAM_PACE_MS: u64 = 20;

/// Locks `m`, going on with the data of a thread that panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(spec: Spec, seed: State, users: Vec<SimUser>, version: ArcaneVersion) -> Shared {
        Shared {
            spec,
            users,
            accounts: Mutex::default(),
            state: Mutex::new(seed.clone()),
            seed: Mutex::new(seed),
            log: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
            activities: Mutex::new(Vec::new()),
            stream_pace_ms: AtomicU64::new(DEFAULT_STREAM_PACE_MS),
            activity: AtomicU64::new(1),
            main: AtomicBool::new(version == ArcaneVersion::Main),
            list_seq: AtomicU64::new(0),
        }
    }

    /// The Arcane version being imitated.
    pub fn version(&self) -> ArcaneVersion {
        if self.main.load(Ordering::Relaxed) {
            ArcaneVersion::Main
        } else {
            ArcaneVersion::V2_8
        }
    }

    /// The number of this list request (0, 1, 2… since the last reset).
    pub fn next_list_seq(&self) -> u64 {
        self.list_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Locks the state.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// A new activity ID (`act-…`), as Arcane's streams announce first.
    pub fn next_activity(&self) -> String {
        let n = self.activity.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "{:08x}-5a1e-4c0d-9e00-{:012x}",
            0x5157_0000u32 + n as u32,
            n
        );
        lock(&self.activities).push((id.clone(), None));
        id
    }

    /// Whether an activity is still running (its stream has not ended); `None` when unknown.
    pub fn activity_running(&self, id: &str) -> Option<bool> {
        let stream = lock(&self.activities)
            .iter()
            .find(|(a, _)| a == id)
            .map(|(_, s)| *s)?;
        let Some(i) = stream else {
            return Some(false);
        };
        let streams = lock(&self.streams);
        let s = streams.get(i)?;
        let ended = s.get("completed") == Some(&Value::Bool(true))
            || s.get("aborted") == Some(&Value::Bool(true));
        Some(!ended)
    }

    /// Every activity handed out, oldest first, with whether it still runs (`None`: no stream
    /// reports it) — the activities channel of `/api/stream`.
    pub fn activities(&self) -> Vec<(String, Option<bool>)> {
        let ids: Vec<String> = lock(&self.activities)
            .iter()
            .map(|(a, _)| a.clone())
            .collect();
        ids.into_iter()
            .map(|id| {
                let running = self.activity_running(&id);
                (id, running)
            })
            .collect()
    }

    /// Records which stream reports activity `id`.
    pub fn link_activity(&self, id: &str, stream: usize) {
        if let Some(e) = lock(&self.activities).iter_mut().find(|(a, _)| a == id) {
            e.1 = Some(stream);
        }
    }

    fn mark_log(&self, idx: usize, key: &str, v: Value) {
        if let Some(Value::Object(e)) = lock(&self.log).get_mut(idx) {
            e.insert(key.to_string(), v);
        }
    }

    /// Registers a stream; returns its index in `/__sim/streams`.
    pub fn stream_started(&self, log_idx: usize, method: &str, path: &str) -> usize {
        let mut s = lock(&self.streams);
        let id = s.len();
        s.push(
            json!({"id": id, "requestIndex": log_idx, "method": method, "path": path,
                      "linesSent": 0, "completed": false, "aborted": false}),
        );
        s.len() - 1
    }

    pub fn stream_line_sent(&self, id: usize) {
        if let Some(Value::Object(s)) = lock(&self.streams).get_mut(id) {
            let n = s.get("linesSent").and_then(Value::as_u64).unwrap_or(0);
            s.insert("linesSent".into(), json!(n + 1));
        }
    }

    pub fn stream_finished(&self, id: usize, log_idx: usize, completed: bool) {
        if let Some(Value::Object(s)) = lock(&self.streams).get_mut(id) {
            s.insert("completed".into(), json!(completed));
            s.insert("aborted".into(), json!(!completed));
        }
        if !completed {
            self.mark_log(log_idx, "aborted", json!(true));
        }
    }

    /// The user whose API key is `key`: a configured one, or a personal key made through
    /// `POST /auth/me/api-keys` and not deleted.
    pub fn user_with_key(&self, key: &[u8]) -> Option<SimUser> {
        if let Some(u) = self.users.iter().find(|u| u.key.as_bytes() == key) {
            return Some(u.clone());
        }
        let key = std::str::from_utf8(key).ok()?;
        let accounts = lock(&self.accounts);
        let name = accounts.key_user(key)?;
        self.users.iter().find(|u| u.name == name).cloned()
    }

    /// The user of a live access token of `POST /auth/login`.
    pub fn user_with_session(&self, token: &str) -> Option<SimUser> {
        let accounts = lock(&self.accounts);
        let name = accounts.session_user(token)?;
        self.users.iter().find(|u| u.name == name).cloned()
    }

    /// Every user.
    pub fn users(&self) -> Vec<SimUser> {
        self.users.clone()
    }

    /// Sign-ins and personal keys, locked.
    pub fn accounts(&self) -> MutexGuard<'_, crate::accounts::Accounts> {
        lock(&self.accounts)
    }

    /// Appends an entry to the request log; returns its index.
    pub fn log_request(&self, entry: Value) -> usize {
        let mut log = lock(&self.log);
        log.push(entry);
        log.len() - 1
    }

    /// Names the user (and role) of the logged request `idx` — never with the key.
    pub fn log_user(&self, idx: usize, user: &SimUser) {
        self.mark_log(idx, "user", json!(user.name));
        self.mark_log(idx, "role", json!(user.role.as_str()));
    }

    /// The request log, oldest first (`/__sim/requests`).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.log).clone()
    }

    /// Every stream so far (`/__sim/streams`).
    pub fn streams(&self) -> Vec<Value> {
        lock(&self.streams).clone()
    }

    /// Takes the first pending fault that matches the request, if any.
    pub fn take_fault(&self, method: &str, path: &str) -> Option<FaultSpec> {
        faults::take(&mut lock(&self.faults), method, path)
    }

    /// How many faults are still pending.
    pub fn pending_faults(&self) -> usize {
        lock(&self.faults).len()
    }

    /// Queues faults after the pending ones.
    pub fn add_faults(&self, fs: Vec<Fault>) {
        lock(&self.faults).extend(fs);
    }

    /// Drops every pending fault.
    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// Replaces the state and the seed a reset returns to.
    pub fn replace_state(&self, s: State) {
        *self.state() = s.clone();
        *lock(&self.seed) = s;
    }

    /// Back to the seed: the state, an empty log, no faults, streams or activities, the default
    /// stream pace and list sequence (`/__sim/reset`; the imitated version stays).
    pub fn reset(&self) {
        let seed = lock(&self.seed).clone();
        *self.state() = seed;
        lock(&self.log).clear();
        lock(&self.faults).clear();
        lock(&self.streams).clear();
        lock(&self.activities).clear();
        self.stream_pace_ms
            .store(DEFAULT_STREAM_PACE_MS, Ordering::Relaxed);
        self.list_seq.store(0, Ordering::Relaxed);
    }

    /// Switches the imitated Arcane version.
    pub fn set_version(&self, version: ArcaneVersion) {
        self.main
            .store(version == ArcaneVersion::Main, Ordering::Relaxed);
    }
}
