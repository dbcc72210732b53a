//! Live resources (docs/live-resources.md): which `arcane://` URIs a client may subscribe to,
//! and what tells it that one changed — `notifications/resources/updated`, for 2025 sessions
//! (`resources/subscribe`) and 2026-07-28 listeners (`subscriptions/listen`) alike.
//!
//! - The environments, each environment, the dashboards and the activities follow Arcane's
//!   client stream (`GET /api/stream`, [`Executor::open_feed`]): **one** connection per
//!   Arcane credential in use, opened with its first such subscription and closed when the
//!   last one ends, reconnecting with a bounded backoff. A URI is notified when its part of a
//!   snapshot changed (timestamps and heartbeats aside), never for a re-sent one.
//! - Containers and projects: Arcane's stream carries counts only (its dashboard has no
//!   first-page tables, docs/arcane-wire.md#the-client-stream), so their state comes from a
//!   poll of the list: **one** per environment, kind and credential however many subscribe,
//!   every `--subscription-poll-ms`, for as long as one subscription needs it. An object is
//!   notified when its entry changed (its uptime text aside) or it appeared or went away.
//!
//! Every read goes through the executor as a tool call would (policy, the response cap, the
//! caller's own key); notifications carry the URI only, so no value of Arcane reaches them —
//! the client reads the resource again, redacted as every read. A subscription belongs to its
//! owner (a session, or one listen request): nothing of one owner's is posted to another's
//! [`Mailbox`]. Caps: `--max-subscriptions` per owner, `--max-subscriptions-total` in all, and
//! a share of the total per caller (every owner of one token), beyond which the caller's own
//! oldest subscription ends ([`Settings::share`]).

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::load::reload::Live;
use crate::load::snapshot::Snapshot;
use arcane_engine::{Auth, CallContext, Executor, Produced};
use arcane_markdown::quoted_name;

/// The client stream's channels, all on one connection.
const CHANNELS: &str = "environments,dashboard,activities";
/// First pause before reconnecting a failed stream; doubled after each failure up to
/// [`BACKOFF_MAX`], back to this once a connection has delivered an event.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
/// Longest pause between two attempts to open the stream.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Page size of a poll (Arcane's lists clamp larger limits to 100).
const PAGE: u64 = 100;
/// Pages read per poll: an object beyond the first `PAGE * MAX_PAGES` of its list is not seen.
const MAX_PAGES: u64 = 10;
/// Longest URI that can be subscribed to.
const MAX_URI: usize = 1024;
/// How often a session's forwarder looks whether its session has ended.
const SESSION_CHECK: Duration = Duration::from_secs(1);

/// The operator's settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Interval of the container and project polls.
    pub poll: Duration,
    /// Most subscriptions of one owner (a session, or one listen request).
    pub per_owner: usize,
    /// Most subscriptions of the whole server.
    pub total: usize,
}

impl Settings {
    /// Most subscriptions of one caller (a token and key, an address without tokens, the stdio
    /// client), across its sessions and listen requests: a quarter of the total, and at least
    /// one owner's. Past it the caller's own oldest subscription ends, so one token can neither
    /// fill the server's total nor end anyone else's. A share of the whole total (one session
    /// may hold it) ends nothing: the total refuses.
    pub fn share(&self) -> usize {
        self.total.div_ceil(4).max(self.per_owner)
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            poll: Duration::from_millis(crate::config::DEFAULT_SUBSCRIPTION_POLL_MS),
            per_owner: 64,
            total: 1024,
        }
    }
}

/// Which objects a poll lists.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    Container,
    Project,
}

impl Kind {
    fn list_action(self) -> &'static str {
        match self {
            Kind::Container => "container.list",
            Kind::Project => "project.list",
        }
    }
}

/// What a subscribed URI follows.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Topic {
    /// `arcane://environments`.
    Environments,
    /// `arcane://environment/{id}`.
    Environment(String),
    /// `arcane://dashboard`, `arcane://environment/{id}/dashboard`.
    Dashboard(String),
    /// `arcane://activities`, `arcane://environment/{id}/activities`.
    Activities(String),
    /// `arcane://container/{id}`, `arcane://project/{id}` and their `environment/{id}/` forms.
    Object { env: String, kind: Kind, id: String },
}

impl Topic {
    /// The URI's topic, with `default_env` for the URIs without an environment; `None` for a
    /// URI that cannot be subscribed to.
    pub fn of(uri: &str, default_env: &str) -> Option<Topic> {
        // Every subscription keeps its URI: a client's cannot be of any length.
        if uri.len() > MAX_URI {
            return None;
        }
        let segs = crate::present::links::segments(uri)?;
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let object = |env: &str, kind: &str, id: &str| {
            let kind = match kind {
                "container" => Kind::Container,
                "project" => Kind::Project,
                _ => return None,
            };
            (!id.is_empty()).then(|| Topic::Object {
                env: env.to_string(),
                kind,
                id: id.to_string(),
            })
        };
        match segs.as_slice() {
            ["environments"] => Some(Topic::Environments),
            ["dashboard"] => Some(Topic::Dashboard(default_env.to_string())),
            ["activities"] => Some(Topic::Activities(default_env.to_string())),
            ["environment", env] if !env.is_empty() => Some(Topic::Environment(env.to_string())),
            ["environment", env, "dashboard"] if !env.is_empty() => {
                Some(Topic::Dashboard(env.to_string()))
            }
            ["environment", env, "activities"] if !env.is_empty() => {
                Some(Topic::Activities(env.to_string()))
            }
            ["environment", env, kind, id] if !env.is_empty() => object(env, kind, id),
            [kind, id] => object(default_env, kind, id),
            _ => None,
        }
    }

    /// The action whose reading the topic stands for: withdrawn by policy, no subscription.
    pub fn action(&self) -> &'static str {
        match self {
            Topic::Environments => "environment.list",
            Topic::Environment(_) => "environment.get",
            Topic::Dashboard(_) => "environment.dashboard",
            Topic::Activities(_) => "activity.list",
            Topic::Object {
                kind: Kind::Container,
                ..
            } => "container.get",
            Topic::Object {
                kind: Kind::Project,
                ..
            } => "project.get",
        }
    }

    /// Whether the client stream feeds it (else a poll does).
    fn streamed(&self) -> bool {
        !matches!(self, Topic::Object { .. })
    }
}

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscribeError {
    /// Not a URI that changes are followed for.
    #[error(
        "{0} cannot be subscribed to. Live resources: arcane://environments, arcane://dashboard, \
         arcane://activities, arcane://environment/{{environmentId}} (and its /dashboard and \
         /activities), arcane://container/{{containerId}}, arcane://project/{{projectId}} (and \
         their arcane://environment/{{environmentId}}/… forms); read any other resource again \
         when you need it"
    )]
    NotLive(String),
    /// Its reading action is withdrawn by policy.
    #[error("{uri} is not served here: {reason}")]
    Withdrawn { uri: String, reason: String },
    /// A cap was reached.
    #[error("{0}")]
    Full(String),
}

/// Where the URIs of an owner's changed subscriptions wait to be sent: a set, so a URI that
/// changed twice before it was sent is sent once, and never more entries than subscriptions.
#[derive(Default)]
pub struct Mailbox {
    pending: Mutex<BTreeSet<String>>,
    bell: Notify,
}

impl Mailbox {
    fn post(&self, uri: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.insert(uri.to_string()) {
            self.bell.notify_one();
        }
    }

    /// The URIs that changed since the last call, waiting until there is one.
    pub async fn next(&self) -> Vec<String> {
        loop {
            let taken =
                std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
            if !taken.is_empty() {
                return taken.into_iter().collect();
            }
            self.bell.notified().await;
        }
    }
}

/// The subscriptions of the server and the upstream readers they need. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

struct Shared {
    exec: Arc<Executor>,
    live: Arc<Live<Snapshot>>,
    settings: Settings,
    state: Mutex<State>,
    /// Bumped by every event and poll: what [`Hub::settle`] waits on.
    progress: tokio::sync::watch::Sender<u64>,
}

/// A credential by its full SHA-256 (the configured one as all zeros): one caller's
/// subscriptions never read with another caller's key.
type Cred = [u8; 32];

#[derive(Default)]
struct State {
    owners: HashMap<Vec<u8>, Owner>,
    total: usize,
    /// Order of subscribing: a caller over its share loses its oldest first.
    next: u64,
    feeds: HashMap<Cred, Upstream>,
    polls: HashMap<(Cred, String, Kind), Poller>,
}

struct Owner {
    mailbox: Arc<Mailbox>,
    /// The caller it belongs to (its share is counted over all of the caller's owners).
    caller: Vec<u8>,
    /// URI → what it follows and with whose key.
    uris: HashMap<String, (Topic, Cred)>,
    /// URI → when it was subscribed ([`State::next`]).
    order: HashMap<String, u64>,
}

struct Upstream {
    stop: CancellationToken,
    /// The fingerprint of each topic's last state.
    seen: HashMap<Topic, u64>,
    /// Environment ID → name, from the last environments snapshot: a subscription may name an
    /// environment either way.
    names: HashMap<String, String>,
}

struct Poller {
    stop: CancellationToken,
    /// The items of the last successful poll: what identifies each, and its fingerprint.
    last: Option<Vec<Item>>,
}

struct Item {
    id: String,
    names: Vec<String>,
    fingerprint: u64,
}

impl Hub {
    pub fn new(exec: Arc<Executor>, live: Arc<Live<Snapshot>>, settings: Settings) -> Hub {
        Hub {
            shared: Arc::new(Shared {
                exec,
                live,
                settings,
                state: Mutex::default(),
                progress: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// Subscribes `owner` (whose changes go to `mailbox`), of `caller`, to `uri`, read with
    /// `credential` (else the configured one), unless `view` (the caller's view of the live
    /// snapshot) withdraws its reading action. Subscribing again to the same URI changes
    /// nothing. A caller at its share first loses its own oldest subscription.
    pub fn subscribe(
        &self,
        owner: &[u8],
        caller: &[u8],
        mailbox: &Arc<Mailbox>,
        uri: &str,
        credential: Option<Auth>,
        view: &Snapshot,
    ) -> Result<(), SubscribeError> {
        let default_env = self.shared.exec.config().environment.clone();
        let shown = || quoted_name(uri, 200);
        let topic = Topic::of(uri, &default_env).ok_or_else(|| SubscribeError::NotLive(shown()))?;
        {
            let snap = view;
            let reason = match snap.catalog.get(topic.action()) {
                None => Some("Arcane's document has no such action".to_string()),
                Some(a) => snap.policy.withdrawn(a).map(|r| r.to_string()),
            };
            if let Some(reason) = reason {
                return Err(SubscribeError::Withdrawn {
                    uri: shown(),
                    reason,
                });
            }
        }
        let cred = cred_of(credential.as_ref());
        let settings = self.shared.settings;
        let mut st = self.shared.lock();
        let have = st.owners.get(owner).map_or(0, |o| o.uris.len());
        if st
            .owners
            .get(owner)
            .is_some_and(|o| o.uris.contains_key(uri))
        {
            return Ok(());
        }
        if have >= settings.per_owner {
            return Err(SubscribeError::Full(format!(
                "this session already has {have} subscriptions, its limit (--max-subscriptions); \
                 unsubscribe from one (resources/unsubscribe, or end a subscriptions/listen) first"
            )));
        }
        if settings.share() < settings.total {
            st.make_room(caller, settings.share());
        }
        if st.total >= settings.total {
            return Err(SubscribeError::Full(format!(
                "this server has {} subscriptions, its limit (--max-subscriptions-total); retry \
                 later",
                st.total
            )));
        }
        let seq = st.next;
        st.next += 1;
        let o = st.owners.entry(owner.to_vec()).or_insert_with(|| Owner {
            mailbox: mailbox.clone(),
            caller: Vec::new(),
            uris: HashMap::new(),
            order: HashMap::new(),
        });
        o.caller = caller.to_vec();
        o.uris.insert(uri.to_string(), (topic.clone(), cred));
        o.order.insert(uri.to_string(), seq);
        st.total += 1;
        if topic.streamed() {
            if let std::collections::hash_map::Entry::Vacant(e) = st.feeds.entry(cred) {
                let stop = CancellationToken::new();
                e.insert(Upstream {
                    stop: stop.clone(),
                    seen: HashMap::new(),
                    names: HashMap::new(),
                });
                tokio::spawn(run_feed(
                    Arc::downgrade(&self.shared),
                    cred,
                    credential,
                    stop,
                ));
            }
        } else if let Topic::Object { env, kind, .. } = &topic {
            let key = (cred, env.clone(), *kind);
            if !st.polls.contains_key(&key) {
                let stop = CancellationToken::new();
                st.polls.insert(
                    key.clone(),
                    Poller {
                        stop: stop.clone(),
                        last: None,
                    },
                );
                tokio::spawn(run_poll(
                    Arc::downgrade(&self.shared),
                    key,
                    credential,
                    stop,
                ));
            }
        }
        tracing::debug!(subscriptions = st.total, "resource subscribed");
        Ok(())
    }

    /// Waits (at most `within`) until the state `owner`'s subscription to `uri` is compared
    /// with is known — the stream's first snapshot of it, or the first poll —, so that a
    /// change made after `resources/subscribe` answered is heard. Whether it is known: an
    /// Arcane that cannot be reached leaves the subscription waiting for its reconnection.
    pub async fn settle(&self, owner: &[u8], uri: &str, within: Duration) -> bool {
        let mut progress = self.shared.progress.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            {
                let st = self.shared.lock();
                let Some((topic, cred)) = st.owners.get(owner).and_then(|o| o.uris.get(uri)) else {
                    return false;
                };
                if st.known(topic, *cred) {
                    return true;
                }
            }
            match tokio::time::timeout_at(deadline, progress.changed()).await {
                Ok(Ok(())) => {}
                _ => return false,
            }
        }
    }

    /// Ends `owner`'s subscription to `uri`; whether it had one.
    pub fn unsubscribe(&self, owner: &[u8], uri: &str) -> bool {
        let mut st = self.shared.lock();
        let Some(o) = st.owners.get_mut(owner) else {
            return false;
        };
        let Some((topic, cred)) = o.uris.remove(uri) else {
            return false;
        };
        o.order.remove(uri);
        // The owner stays (with its mailbox and forwarder) until it ends.
        st.total -= 1;
        st.release(&topic, cred);
        true
    }

    /// Ends every subscription of `owner` (its session ended, its listen request closed).
    pub fn end(&self, owner: &[u8]) {
        let mut st = self.shared.lock();
        let Some(o) = st.owners.remove(owner) else {
            return;
        };
        st.total -= o.uris.len();
        for (topic, cred) in o.uris.into_values() {
            st.release(&topic, cred);
        }
    }

    /// The mailbox of a 2025 session: made by its first subscription, with the task that
    /// sends what is posted to it to `peer` until the session ends
    /// and then ends the session's subscriptions.
    pub fn session_mailbox(
        &self,
        owner: &[u8],
        peer: &rmcp::Peer<rmcp::RoleServer>,
    ) -> Arc<Mailbox> {
        let mut st = self.shared.lock();
        if let Some(o) = st.owners.get(owner) {
            return o.mailbox.clone();
        }
        let mailbox = Arc::new(Mailbox::default());
        st.owners.insert(
            owner.to_vec(),
            Owner {
                mailbox: mailbox.clone(),
                caller: Vec::new(),
                uris: HashMap::new(),
                order: HashMap::new(),
            },
        );
        tokio::spawn(
            self.clone()
                .forward(owner.to_vec(), mailbox.clone(), peer.clone()),
        );
        mailbox
    }

    async fn forward(
        self,
        owner: Vec<u8>,
        mailbox: Arc<Mailbox>,
        peer: rmcp::Peer<rmcp::RoleServer>,
    ) {
        loop {
            tokio::select! {
                uris = mailbox.next() => {
                    for uri in uris {
                        let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                        if peer.notify_resource_updated(param).await.is_err() {
                            break;
                        }
                    }
                }
                _ = tokio::time::sleep(SESSION_CHECK) => {}
            }
            if peer.is_transport_closed() {
                break;
            }
        }
        tracing::debug!("session ended: its subscriptions end");
        self.end(&owner);
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Ends `caller`'s oldest subscriptions while it holds `share` or more — only its own, in
    /// whichever of its sessions or listen requests they are.
    fn make_room(&mut self, caller: &[u8], share: usize) {
        loop {
            let mine = || self.owners.iter().filter(|(_, o)| o.caller == caller);
            if mine().map(|(_, o)| o.uris.len()).sum::<usize>() < share {
                return;
            }
            let oldest = mine()
                .flat_map(|(key, o)| o.order.iter().map(move |(uri, seq)| (*seq, key, uri)))
                .min_by_key(|(seq, _, _)| *seq)
                .map(|(_, key, uri)| (key.clone(), uri.clone()));
            let Some((key, uri)) = oldest else { return };
            let Some(o) = self.owners.get_mut(&key) else {
                return;
            };
            o.order.remove(&uri);
            let Some((topic, cred)) = o.uris.remove(&uri) else {
                return;
            };
            self.total -= 1;
            tracing::debug!(uri = %uri, "a caller over its share of subscriptions: its oldest ended");
            self.release(&topic, cred);
        }
    }

    /// After a subscription ended: stops the stream or poll nobody needs any more.
    fn release(&mut self, topic: &Topic, cred: Cred) {
        let still = |f: &dyn Fn(&Topic, &Cred) -> bool| {
            self.owners
                .values()
                .any(|o| o.uris.values().any(|(t, c)| f(t, c)))
        };
        if topic.streamed() {
            if !still(&|t, c| t.streamed() && *c == cred)
                && let Some(feed) = self.feeds.remove(&cred)
            {
                feed.stop.cancel();
            }
        } else if let Topic::Object { env, kind, .. } = topic {
            let needed = still(&|t, c| {
                matches!(t, Topic::Object { env: e, kind: k, .. } if e == env && k == kind)
                    && *c == cred
            });
            if !needed && let Some(p) = self.polls.remove(&(cred, env.clone(), *kind)) {
                p.stop.cancel();
            }
        }
    }

    /// Whether the state `topic` is compared with is known.
    fn known(&self, topic: &Topic, cred: Cred) -> bool {
        match topic {
            Topic::Object { env, kind, .. } => self
                .polls
                .get(&(cred, env.clone(), *kind))
                .is_some_and(|p| p.last.is_some()),
            _ => self.feeds.get(&cred).is_some_and(|f| {
                f.seen.contains_key(topic)
                    || f.seen.keys().any(|t| match (t, topic) {
                        (Topic::Environment(id), Topic::Environment(g))
                        | (Topic::Dashboard(id), Topic::Dashboard(g))
                        | (Topic::Activities(id), Topic::Activities(g)) => {
                            f.names.get(id).is_some_and(|n| n == g)
                        }
                        _ => false,
                    })
                    // An environment not in a received list is known: absent.
                    || (matches!(topic, Topic::Environment(_))
                        && f.seen.contains_key(&Topic::Environments))
            }),
        }
    }

    /// Posts `uri` of every subscription of `cred` that `matches`.
    fn post(&self, cred: Cred, matches: impl Fn(&Topic) -> bool) {
        for o in self.owners.values() {
            for (uri, (t, c)) in &o.uris {
                if *c == cred && matches(t) {
                    o.mailbox.post(uri);
                }
            }
        }
    }
}

fn cred_of(credential: Option<&Auth>) -> Cred {
    use sha2::Digest;
    match credential {
        None => [0; 32],
        Some(a) => sha2::Sha256::digest(a.header().1.as_bytes()).into(),
    }
}

/// A value's fingerprint: its JSON text hashed (Arcane writes a struct's fields in one order).
fn fingerprint(v: &Value) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    serde_json::to_string(v).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// `v` without the fields that change with time alone (`timestamp`, an environment's
/// `lastSeen` and `lastHeartbeat`).
fn steady(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for k in ["timestamp", "lastSeen", "lastHeartbeat"] {
            o.remove(k);
        }
    }
    v
}

/// Reads Arcane's client stream for one credential until nobody needs it; reconnects after
/// a failure, waiting [`BACKOFF_MIN`] doubled per failure up to [`BACKOFF_MAX`].
async fn run_feed(
    shared: Weak<Shared>,
    cred: Cred,
    credential: Option<Auth>,
    stop: CancellationToken,
) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let Some(exec) = shared.upgrade().map(|s| s.exec.clone()) else {
            return;
        };
        let opened = tokio::select! {
            _ = stop.cancelled() => return,
            r = exec.open_feed(CHANNELS, credential.as_ref()) => r,
        };
        drop(exec);
        match opened {
            Ok(mut feed) => {
                tracing::debug!("client stream open");
                let ended = loop {
                    let event = tokio::select! {
                        _ = stop.cancelled() => return,
                        e = feed.next() => e,
                    };
                    match event {
                        Ok(event) => {
                            backoff = BACKOFF_MIN;
                            let Some(s) = shared.upgrade() else { return };
                            s.on_event(cred, &event);
                            s.progress.send_modify(|n| *n += 1);
                        }
                        Err(e) => break e,
                    }
                };
                tracing::warn!(error = %ended, retry_s = backoff.as_secs(), "Arcane's client stream stopped; reconnecting");
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_s = backoff.as_secs(), "cannot open Arcane's client stream; retrying");
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

impl Shared {
    /// One event of the stream: the topics whose state it changed are posted.
    fn on_event(&self, cred: Cred, event: &Value) {
        let default_env = &self.exec.config().environment;
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(feed) = st.feeds.get_mut(&cred) else {
            return;
        };
        let mut changed: Vec<Topic> = Vec::new();
        let mut note = |seen: &mut HashMap<Topic, u64>, t: Topic, fp: u64| {
            if seen.insert(t.clone(), fp).is_some_and(|old| old != fp) {
                changed.push(t);
            }
        };
        match event.get("channel").and_then(Value::as_str) {
            Some("environments") => {
                let p = &event["environment"];
                if let Some(list) = p.get("environments").and_then(Value::as_array) {
                    let steady_list: Vec<Value> = list.iter().map(steady).collect();
                    note(
                        &mut feed.seen,
                        Topic::Environments,
                        fingerprint(&json!(steady_list)),
                    );
                    let mut names = HashMap::new();
                    let mut ids = std::collections::HashSet::new();
                    for e in &steady_list {
                        let Some(id) = e.get("id").and_then(Value::as_str) else {
                            continue;
                        };
                        ids.insert(id.to_string());
                        if let Some(n) = e.get("name").and_then(Value::as_str) {
                            names.insert(id.to_string(), n.to_string());
                        }
                        note(
                            &mut feed.seen,
                            Topic::Environment(id.to_string()),
                            fingerprint(e),
                        );
                    }
                    // An environment gone from the list changed too (its fingerprint 0).
                    let gone: Vec<Topic> = feed
                        .seen
                        .keys()
                        .filter(|t| matches!(t, Topic::Environment(id) if !ids.contains(id)))
                        .cloned()
                        .collect();
                    for t in gone {
                        note(&mut feed.seen, t, 0);
                    }
                    feed.names = names;
                }
            }
            Some("dashboard") => {
                let p = &event["dashboard"];
                if let Some(env) = p.get("environmentId").and_then(Value::as_str) {
                    note(
                        &mut feed.seen,
                        Topic::Dashboard(env.to_string()),
                        fingerprint(&steady(p)),
                    );
                }
            }
            Some("activities") => {
                let p = &event["activity"];
                let env = p
                    .get("environmentId")
                    .and_then(Value::as_str)
                    .unwrap_or(default_env);
                note(
                    &mut feed.seen,
                    Topic::Activities(env.to_string()),
                    fingerprint(&steady(p)),
                );
            }
            _ => {}
        }
        if changed.is_empty() {
            return;
        }
        let names = feed.names.clone();
        // A subscription names an environment by ID or by name.
        let same_env =
            |given: &str, id: &str| given == id || names.get(id).is_some_and(|n| n == given);
        st.post(cred, |t| {
            changed.iter().any(|c| match (c, t) {
                (Topic::Environments, Topic::Environments) => true,
                (Topic::Environment(id), Topic::Environment(g))
                | (Topic::Dashboard(id), Topic::Dashboard(g))
                | (Topic::Activities(id), Topic::Activities(g)) => same_env(g, id),
                _ => false,
            })
        });
    }
}

/// Lists one kind of object of one environment every poll interval until nobody needs it.
async fn run_poll(
    shared: Weak<Shared>,
    key: (Cred, String, Kind),
    credential: Option<Auth>,
    stop: CancellationToken,
) {
    loop {
        let Some(s) = shared.upgrade() else { return };
        let every = s.settings.poll;
        let listed = tokio::select! {
            _ = stop.cancelled() => return,
            l = s.list(&key.1, key.2, credential.clone(), &stop) => l,
        };
        match listed {
            Ok(items) => {
                s.on_poll(&key, items);
                s.progress.send_modify(|n| *n += 1);
            }
            Err(e) => tracing::debug!(error = %e, "a subscription's poll failed; retrying"),
        }
        drop(s);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

impl Shared {
    /// The items of a list action, page by page (at most [`MAX_PAGES`]), through the executor
    /// as a tool call (policy, validation, the response cap).
    async fn list(
        &self,
        env: &str,
        kind: Kind,
        credential: Option<Auth>,
        stop: &CancellationToken,
    ) -> Result<Vec<Item>, String> {
        let snap = self.live.load();
        let ctx = CallContext {
            cancel: stop.child_token(),
            progress: None,
            credential,
            ..CallContext::default()
        };
        let mut items = Vec::new();
        for page in 0..MAX_PAGES {
            let params = Map::from_iter([
                ("environmentId".to_string(), json!(env)),
                ("limit".to_string(), json!(PAGE)),
                ("start".to_string(), json!(page * PAGE)),
            ]);
            let outcome = self
                .exec
                .execute(&snap.scope(), kind.list_action(), params, false, &ctx)
                .await
                .map_err(|e| e.to_string())?;
            let Produced::Json(v) = outcome.produced else {
                return Err("the list answered no JSON".into());
            };
            let data = v.get("data").and_then(Value::as_array);
            let got = data.map_or(0, Vec::len) as u64;
            items.extend(data.into_iter().flatten().map(|i| item(kind, i)));
            let total = v
                .pointer("/pagination/totalItems")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if got == 0 || (page + 1) * PAGE >= total {
                break;
            }
        }
        Ok(items)
    }

    /// A poll's items: every subscription whose object changed, appeared or went away since
    /// the last poll is posted.
    fn on_poll(&self, key: &(Cred, String, Kind), items: Vec<Item>) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(poller) = st.polls.get_mut(key) else {
            return;
        };
        let Some(last) = poller.last.replace(items) else {
            return;
        };
        let now = poller.last.as_deref().unwrap_or_default();
        let (cred, env, kind) = key;
        // Only subscribed objects are compared: the rest changes nothing anyone hears.
        let changed: Vec<String> = st
            .owners
            .values()
            .flat_map(|o| o.uris.values())
            .filter_map(|(t, c)| match t {
                Topic::Object {
                    env: e,
                    kind: k,
                    id,
                } if c == cred && e == env && k == kind => Some(id.clone()),
                _ => None,
            })
            .filter(|id| state_of(&last, id) != state_of(now, id))
            .collect();
        if changed.is_empty() {
            return;
        }
        st.post(*cred, |t| {
            matches!(t, Topic::Object { env: e, kind: k, id } if e == env && k == kind && changed.contains(id))
        });
    }
}

/// The fingerprint of the object `id` names in `items` (by ID, name, or an ID prefix of at
/// least 12 characters, as Docker's short IDs); `None` when it is not there.
fn state_of(items: &[Item], id: &str) -> Option<u64> {
    items
        .iter()
        .find(|i| i.id == id || i.names.iter().any(|n| n == id))
        .or_else(|| {
            let mut by_prefix = items
                .iter()
                .filter(|i| id.len() >= 12 && i.id.starts_with(id));
            match (by_prefix.next(), by_prefix.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        })
        .map(|i| i.fingerprint)
}

/// One list item as a poll keeps it: its ID, names and fingerprint. A container's `status`
/// ("Up 3 hours (healthy)") counts only by its parenthesised parts (health, exit code): its
/// uptime changes with time alone.
fn item(kind: Kind, v: &Value) -> Item {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    if let Some(n) = v.get("names").and_then(Value::as_array) {
        for n in n.iter().filter_map(Value::as_str) {
            names.push(n.trim_start_matches('/').to_string());
        }
    }
    if !s("name").is_empty() {
        names.push(s("name").to_string());
    }
    let mut steady = v.clone();
    if kind == Kind::Container
        && let Some(o) = steady.as_object_mut()
        && let Some(Value::String(status)) = o.get_mut("status")
    {
        *status = parenthesised(status);
    }
    Item {
        id: s("id").to_string(),
        names,
        fingerprint: fingerprint(&steady),
    }
}

/// The parenthesised parts of `s`: `"Exited (1) 3 hours ago"` → `"(1)"`.
fn parenthesised(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                out.push(c);
            }
            ')' if depth > 0 => {
                depth -= 1;
                out.push(c);
            }
            _ if depth > 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_map_to_what_they_follow() {
        let t = |u: &str| Topic::of(u, "0");
        assert_eq!(t("arcane://environments"), Some(Topic::Environments));
        assert_eq!(t("arcane://dashboard"), Some(Topic::Dashboard("0".into())));
        assert_eq!(
            t("arcane://environment/env-2/dashboard"),
            Some(Topic::Dashboard("env-2".into()))
        );
        assert_eq!(
            t("arcane://activities"),
            Some(Topic::Activities("0".into()))
        );
        assert_eq!(
            t("arcane://environment/env-2"),
            Some(Topic::Environment("env-2".into()))
        );
        assert_eq!(
            t("arcane://container/web%2D1"),
            Some(Topic::Object {
                env: "0".into(),
                kind: Kind::Container,
                id: "web-1".into()
            })
        );
        assert_eq!(
            t("arcane://environment/env-2/project/jobs"),
            Some(Topic::Object {
                env: "env-2".into(),
                kind: Kind::Project,
                id: "jobs".into()
            })
        );
        for not in [
            "arcane://tools",
            "arcane://image/nginx",
            "arcane://container/",
            "arcane://guides/x",
            "https://example.com",
            "arcane://environment//dashboard",
            &format!("arcane://container/{}", "a".repeat(MAX_URI)),
        ] {
            assert_eq!(t(not), None, "{not}");
        }
    }

    #[test]
    fn uptime_alone_is_no_change() {
        let a = item(
            Kind::Container,
            &json!({"id": "abc", "names": ["/web-1"], "state": "running", "status": "Up 3 minutes (healthy)"}),
        );
        let b = item(
            Kind::Container,
            &json!({"id": "abc", "names": ["/web-1"], "state": "running", "status": "Up 4 minutes (healthy)"}),
        );
        let c = item(
            Kind::Container,
            &json!({"id": "abc", "names": ["/web-1"], "state": "running", "status": "Up 4 minutes (unhealthy)"}),
        );
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(b.fingerprint, c.fingerprint);
        assert_eq!(a.names, ["web-1"]);
        assert_eq!(parenthesised("Exited (1) 3 hours ago"), "(1)");
    }

    #[test]
    fn objects_are_found_by_id_name_or_long_prefix() {
        let items = vec![
            item(
                Kind::Container,
                &json!({"id": "1b51628232631d86", "names": ["/web-1"]}),
            ),
            item(
                Kind::Container,
                &json!({"id": "1b51628232631d99", "names": ["/web-2"]}),
            ),
        ];
        assert!(state_of(&items, "web-1").is_some());
        assert!(state_of(&items, "1b51628232631d86").is_some());
        assert!(state_of(&items, "1b5162823263").is_none(), "ambiguous");
        assert!(state_of(&items, "1b5").is_none(), "too short");
        assert!(state_of(&items, "gone").is_none());
    }

    #[tokio::test]
    async fn a_mailbox_sends_each_changed_uri_once() {
        let m = Mailbox::default();
        m.post("arcane://a");
        m.post("arcane://a");
        m.post("arcane://b");
        assert_eq!(m.next().await, ["arcane://a", "arcane://b"]);
        m.post("arcane://a");
        assert_eq!(m.next().await, ["arcane://a"]);
    }
}
