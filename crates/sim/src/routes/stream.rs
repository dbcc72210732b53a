//! `GET /api/stream?channels=environments,dashboard,activities`: Arcane 2.8's multiplexed
//! client stream (docs/arcane-wire.md#the-client-stream). One JSON line per event, each an
//! envelope `{channel, <payload>, timestamp}` (a heartbeat: `{type: "heartbeat", timestamp}`).
//!
//! Arcane polls its producers (dashboard every 15 s, environments every 5 s, activities pushed
//! as they happen); the simulator looks at its state every [`TICK`] and sends a channel's
//! snapshot as soon as it differs from the last one sent, so a change made through the API or
//! a hook shows up in the next line without a 15 s wait. Unchanged snapshots are re-sent every
//! [`REFRESH`], as Arcane's pollers do. The stream is registered in `/__sim/streams` (aborted
//! once the client goes away); a `truncated_stream` fault cuts it after the first snapshots.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::state::{self, State};
use crate::world::Shared;

/// How often the simulator looks for a change of its state.
const TICK: Duration = Duration::from_millis(200);
/// Arcane's heartbeat interval (`clientStreamHeartbeatInterval`) and the floor at which its
/// producers re-send an unchanged snapshot (dashboard poll 15 s).
const REFRESH: Duration = Duration::from_secs(15);

/// The channels Arcane knows; others are ignored, as Arcane does.
const CHANNELS: [&str; 3] = ["environments", "dashboard", "activities"];

pub(super) fn client(ctx: &Ctx) -> Response {
    // Arcane lower-cases and trims each name; unknown names select nothing.
    let requested: Vec<&'static str> = CHANNELS
        .into_iter()
        .filter(|c| {
            ctx.q("channels")
                .is_some_and(|raw| raw.split(',').any(|n| n.trim().eq_ignore_ascii_case(c)))
        })
        .collect();
    let limit = ctx
        .q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(ACTIVITY_LIMIT);
    let sh = ctx.sh.clone();
    let id = sh.stream_started(ctx.log_idx, &ctx.method, &ctx.path);
    let s = Feed {
        guard: Guard {
            sh: sh.clone(),
            id,
            log_idx: ctx.log_idx,
        },
        requested,
        limit,
        last: Vec::new(),
        sent_at: Instant::now(),
        first: true,
        cut: ctx.truncate,
    };
    let stream = futures::stream::unfold(s, |mut s| async move {
        if s.cut && !s.first {
            s.cut = false;
            return Some((Err(std::io::Error::other("simulated truncated stream")), s));
        }
        loop {
            if !s.first {
                tokio::time::sleep(TICK).await;
            }
            let lines = s.lines();
            s.first = false;
            if !lines.is_empty() {
                let n = lines.len();
                let mut b = Vec::new();
                for l in lines {
                    b.extend(serde_json::to_vec(&l).unwrap_or_default());
                    b.push(b'\n');
                }
                for _ in 0..n {
                    s.guard.sh.stream_line_sent(s.guard.id);
                }
                return Some((Ok::<Bytes, std::io::Error>(Bytes::from(b)), s));
            }
        }
    });
    crate::streams::json_lines_response(stream)
}

/// Arcane's default number of activities in a snapshot when `limit` is 0.
const ACTIVITY_LIMIT: usize = 50;

/// Marks the stream aborted in `/__sim/streams` when the client goes away (the stream never
/// completes on its own).
struct Guard {
    sh: Arc<Shared>,
    id: usize,
    log_idx: usize,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.sh.stream_finished(self.id, self.log_idx, false);
    }
}

struct Feed {
    guard: Guard,
    requested: Vec<&'static str>,
    limit: usize,
    /// The last payload sent per (channel, environment), without its timestamp.
    last: Vec<((&'static str, String), Value)>,
    sent_at: Instant,
    first: bool,
    cut: bool,
}

impl Feed {
    /// The lines to send now: every snapshot that changed, everything after [`REFRESH`], and a
    /// heartbeat when no channel was asked for.
    fn lines(&mut self) -> Vec<Value> {
        let refresh = self.sent_at.elapsed() >= REFRESH;
        let payloads = {
            let st = self.guard.sh.state();
            let activities = self.guard.sh.activities();
            snapshots(&st, &activities, &self.requested, self.limit)
        };
        let now = now();
        let mut out = Vec::new();
        for (channel, env, payload) in payloads {
            let key = (channel, env);
            let changed = match self.last.iter_mut().find(|(k, _)| *k == key) {
                Some((_, last)) if *last == payload => false,
                Some((_, last)) => {
                    *last = payload.clone();
                    true
                }
                None => {
                    self.last.push((key, payload.clone()));
                    true
                }
            };
            if changed || refresh {
                out.push(envelope(channel, payload, &now));
            }
        }
        if refresh && (out.is_empty() || self.requested.is_empty()) {
            out.push(json!({"type": "heartbeat", "timestamp": now}));
        }
        if !out.is_empty() {
            self.sent_at = Instant::now();
        }
        out
    }
}

/// One line: the channel, its payload under the channel's key (with the same timestamp), and
/// the envelope's timestamp (`types/stream/stream.go`).
fn envelope(channel: &str, mut payload: Value, now: &str) -> Value {
    payload["timestamp"] = json!(now);
    let key = match channel {
        "environments" => "environment",
        "dashboard" => "dashboard",
        _ => "activity",
    };
    json!({"channel": channel, key: payload, "timestamp": now})
}

fn now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let base = state::unix_to_rfc3339(d.as_secs() as i64);
    // RFC 3339 with milliseconds, as Go's time.Time marshals (to the nanosecond there).
    match base.strip_suffix('Z') {
        Some(b) => format!("{b}.{:03}Z", d.subsec_millis()),
        None => base,
    }
}

/// The current payload of every requested channel, keyed by environment.
fn snapshots(
    st: &State,
    activities: &[(String, Option<bool>)],
    requested: &[&'static str],
    limit: usize,
) -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for channel in requested {
        match *channel {
            // One snapshot of every environment the caller sees (the simulator's users see all).
            "environments" => out.push((
                "environments",
                String::new(),
                json!({"type": "snapshot",
                       "environments": st.environments.iter().map(state::environment_json).collect::<Vec<_>>()}),
            )),
            // The local environment's producer and one poller per enabled remote environment.
            "dashboard" => {
                for e in st.environments.iter().filter(|e| e.enabled) {
                    let payload = if e.id != "0" && !e.agent_connected {
                        json!({"type": "error", "environmentId": e.id,
                               "error": "Edge agent is not connected", "errorCode": "unreachable"})
                    } else {
                        json!({"type": "snapshot", "environmentId": e.id,
                               "snapshot": dashboard_snapshot(st, &e.id)})
                    };
                    out.push(("dashboard", e.id.clone(), payload));
                }
            }
            _ => {
                // Only the local environment records activities in the simulator.
                let list: Vec<Value> = activities
                    .iter()
                    .rev()
                    .take(limit)
                    .map(|(id, running)| {
                        let status = match running {
                            Some(true) => "running",
                            _ => "success",
                        };
                        json!({"id": id, "environmentId": "0", "type": "resource_action",
                               "status": status, "startedAt": state::timestamp(0),
                               "createdAt": state::timestamp(0)})
                    })
                    .collect();
                let mut payload = json!({"type": "snapshot", "environmentId": "0"});
                // `activities` is `omitempty` in Arcane's type.
                if !list.is_empty() {
                    payload["activities"] = json!(list);
                }
                out.push(("activities", "0".into(), payload));
            }
        }
    }
    out
}

/// The dashboard snapshot of one environment as the stream carries it: the full dashboard's
/// counters, with the first-page tables left out (`data: null`, as Arcane's local producer
/// builds it without tables and trims the remote ones).
fn dashboard_snapshot(st: &State, env: &str) -> Value {
    let mut v = json!({"data": {}});
    super::system::dashboard(st, env, &mut v);
    let mut d = v["data"].take();
    d["containers"]["data"] = Value::Null;
    d["images"]["data"] = Value::Null;
    let stopped = d["containers"]["counts"]["stoppedContainers"]
        .as_u64()
        .unwrap_or(0);
    let items: Vec<Value> = if stopped > 0 {
        vec![json!({"kind": "stopped_containers", "count": stopped, "severity": "warning"})]
    } else {
        Vec::new()
    };
    d["actionItems"] = json!({"items": items});
    d["settings"] = json!({});
    d
}
