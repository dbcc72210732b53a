//! The WebSocket endpoints (docs/handlers.md) with the framing of docs/arcane-wire.md#websockets

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::reply::unknown_route;
use crate::routes::containers::find_container;
use crate::state::container_project;

/// Interval between follow-mode log lines and stats frames.
const TICK: Duration = Duration::from_millis(500);

/// Dispatches `/api/environments/{id}/ws/…`.
pub fn route(ctx: Ctx, upgrade: WebSocketUpgrade, segs: &[&str]) -> Response {
    // `segs` are already as Arcane's handlers see them (decoded or raw; see the server).
    let env = segs[1].to_string();
    let rest: Vec<&str> = segs[3..].to_vec();
    let opts = LogOpts::from(&ctx);
    let st = ctx.sh.state().clone();
    match rest.as_slice() {
        ["containers", id, "logs"] => {
            let lines = match find_container(&st, &env, id) {
                Some(i) => Ok(lines_of(
                    &st.containers[i].logs,
                    &st.containers[i].stderr,
                    None,
                )),
                None => Err(format!(
                    "Failed to stream container logs: Error response from daemon: No such container: {id}"
                )),
            };
            upgrade.on_upgrade(move |ws| logs(ws, lines, opts, false))
        }
        ["swarm", "services", id, "logs"] => {
            let lines = match st
                .swarm_services
                .iter()
                .find(|s| s.environment_id == env && (s.id == *id || s.name == *id))
            {
                Some(s) => Ok(lines_of(&s.logs, &[], None)),
                None => Err(format!(
                    "Failed to stream service logs: Error response from daemon: service {id} not found"
                )),
            };
            upgrade.on_upgrade(move |ws| logs(ws, lines, opts, false))
        }
        ["projects", id, "logs"] => {
            let lines = match st
                .projects
                .iter()
                .find(|p| p.environment_id == env && p.id == *id)
            {
                Some(p) => {
                    let mut out = Vec::new();
                    let mut err = Vec::new();
                    for c in st.containers.iter().filter(|c| {
                        c.environment_id == env && container_project(c) == Some(p.name.as_str())
                    }) {
                        let l = lines_of(&c.logs, &c.stderr, Some(&c.name));
                        for x in l {
                            if x.stderr { err.push(x) } else { out.push(x) }
                        }
                    }
                    out.extend(err);
                    Ok(out)
                }
                None => Err("Failed to stream project logs: project not found".to_string()),
            };
            upgrade.on_upgrade(move |ws| logs(ws, lines, opts, true))
        }
        ["containers", id, "stats"] => {
            let found = find_container(&st, &env, id).map(|i| st.containers[i].clone());
            let id = id.to_string();
            upgrade.on_upgrade(move |ws| stats(ws, found, id))
        }
        ["containers", id, "terminal"] => {
            let found = find_container(&st, &env, id).map(|i| st.containers[i].clone());
            let id = id.to_string();
            let shell = ctx.q("shell").unwrap_or("/bin/sh").to_string();
            upgrade.on_upgrade(move |ws| terminal(ws, found, id, shell))
        }
        ["system", "stats"] => {
            let interval = ctx
                .q("interval")
                .and_then(|i| i.parse::<u64>().ok())
                .filter(|i| *i > 0)
                .unwrap_or(2);
            let n = st
                .containers
                .iter()
                .filter(|c| c.environment_id == env)
                .count();
            upgrade.on_upgrade(move |ws| system_stats(ws, interval, n))
        }
        _ => unknown_route(&ctx.path),
    }
}

#[derive(Clone)]
struct Line {
    message: String,
    stderr: bool,
    service: Option<String>,
}

fn lines_of(out: &[String], err: &[String], service: Option<&str>) -> Vec<Line> {
    out.iter()
        .map(|m| Line {
            message: m.clone(),
            stderr: false,
            service: service.map(str::to_string),
        })
        .chain(err.iter().map(|m| Line {
            message: m.clone(),
            stderr: true,
            service: service.map(str::to_string),
        }))
        .collect()
}

#[derive(Clone, Copy)]
struct LogOpts {
    follow: bool,
    tail: Option<usize>,
    json: bool,
    batched: bool,
    timestamps: bool,
}

impl LogOpts {
    fn from(ctx: &Ctx) -> LogOpts {
        LogOpts {
            follow: ctx.q("follow").is_none_or(|v| v != "false" && v != "0"),
            tail: match ctx.q("tail") {
                Some("all") => None,
                Some(t) => t.parse().ok().or(Some(100)),
                None => Some(100),
            },
            json: ctx.q("format") == Some("json"),
            batched: ctx.q("batched") == Some("true"),
            timestamps: ctx.q("timestamps") == Some("true"),
        }
    }
}

/// RFC 3339 with nanoseconds, UTC.
fn now_rfc3339_nano() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let base = crate::state::unix_to_rfc3339(d.as_secs() as i64);
    format!("{}.{:09}Z", base.trim_end_matches('Z'), d.subsec_nanos())
}

fn render(line: &Line, seq: u64, opts: LogOpts, project: bool) -> Value {
    if opts.json {
        let mut v = json!({"seq": seq, "level": if line.stderr { "stderr" } else { "stdout" },
                           "message": line.message, "timestamp": now_rfc3339_nano()});
        if let Some(s) = &line.service {
            v["service"] = json!(s);
        }
        v
    } else {
        // Text: container/service lines get "[STDERR] " before stderr; project lines are the
        // message only (docs/arcane-wire.md#websockets).
        let mut s = String::new();
        if opts.timestamps {
            s.push_str(&now_rfc3339_nano());
            s.push(' ');
        }
        if line.stderr && !project {
            s.push_str("[STDERR] ");
        }
        s.push_str(&line.message);
        Value::String(s)
    }
}

async fn send_value(ws: &mut WebSocket, v: Value) -> bool {
    let text = match v {
        Value::String(s) => s,
        other => other.to_string(),
    };
    ws.send(Message::Text(text.into())).await.is_ok()
}

async fn send_lines(
    ws: &mut WebSocket,
    lines: &[Line],
    seq: &mut u64,
    opts: LogOpts,
    project: bool,
) -> bool {
    if opts.batched && opts.json {
        for chunk in lines.chunks(50) {
            let arr: Vec<Value> = chunk
                .iter()
                .map(|l| {
                    *seq += 1;
                    render(l, *seq, opts, project)
                })
                .collect();
            if !send_value(ws, Value::Array(arr)).await {
                return false;
            }
        }
        return true;
    }
    for l in lines {
        *seq += 1;
        if !send_value(ws, render(l, *seq, opts, project)).await {
            return false;
        }
    }
    true
}

/// Waits until the client closes (or errors). Arcane never closes finished log sockets.
async fn drain(ws: &mut WebSocket) {
    while let Some(Ok(m)) = ws.recv().await {
        if matches!(m, Message::Close(_)) {
            break;
        }
    }
}

async fn logs(mut ws: WebSocket, lines: Result<Vec<Line>, String>, opts: LogOpts, project: bool) {
    let lines = match lines {
        Ok(l) => l,
        Err(e) => {
            // A single error frame; the socket stays open (docs/arcane-wire.md#websockets).
            let frame = if opts.json {
                json!({"seq": 1, "level": "error", "message": e, "timestamp": now_rfc3339_nano(), "service": "arcane"})
            } else {
                Value::String(e)
            };
            if send_value(&mut ws, frame).await {
                drain(&mut ws).await;
            }
            return;
        }
    };
    // follow=false: stdout first, then stderr (lines_of already orders them so).
    let mut lines = lines;
    if let Some(t) = opts.tail
        && lines.len() > t
    {
        lines = lines.split_off(lines.len() - t);
    }
    let mut seq = 0;
    if !send_lines(&mut ws, &lines, &mut seq, opts, project).await {
        return;
    }
    if !opts.follow {
        drain(&mut ws).await;
        return;
    }
    let template = lines.first().cloned().unwrap_or(Line {
        message: String::new(),
        stderr: false,
        service: None,
    });
    let mut n = 0u64;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {
                n += 1;
                let l = Line { message: format!("heartbeat {n}: still running"), stderr: false, service: template.service.clone() };
                if !send_lines(&mut ws, &[l], &mut seq, opts, project).await {
                    return;
                }
            }
            m = ws.recv() => match m {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    }
}

fn stats_frame(c: &crate::state::Container, n: u64, first: bool) -> Value {
    let mem = 52_428_800u64 + n * 1_048_576;
    let mut v = json!({
        "read": now_rfc3339_nano(),
        "preread": now_rfc3339_nano(),
        "id": c.id,
        "name": format!("/{}", c.name),
        "pids_stats": {"current": 4},
        "cpu_stats": {"cpu_usage": {"total_usage": 1_000_000_000u64 + n * 10_000_000, "usage_in_kernelmode": 100_000_000, "usage_in_usermode": 900_000_000},
                      "system_cpu_usage": 100_000_000_000u64 + n * 1_000_000_000, "online_cpus": 2, "throttling_data": {"periods": 0, "throttled_periods": 0, "throttled_time": 0}},
        "precpu_stats": {"cpu_usage": {"total_usage": 1_000_000_000u64, "usage_in_kernelmode": 100_000_000, "usage_in_usermode": 900_000_000},
                         "system_cpu_usage": 100_000_000_000u64, "online_cpus": 2, "throttling_data": {"periods": 0, "throttled_periods": 0, "throttled_time": 0}},
        "memory_stats": {"usage": mem, "limit": 2_147_483_648u64, "stats": {"inactive_file": 1_048_576}},
        "networks": {"eth0": {"rx_bytes": 1024 * n, "tx_bytes": 2048 * n, "rx_packets": n, "tx_packets": n}},
        "currentHistorySample": {"cpuTenths": 12, "memoryTenths": (mem * 1000 / 2_147_483_648u64), "memoryUsageBytes": mem},
    });
    if first {
        v["statsHistory"] =
            json!([{"cpuTenths": 10, "memoryTenths": 24, "memoryUsageBytes": 51_380_224}]);
    }
    v
}

async fn stats(mut ws: WebSocket, c: Option<crate::state::Container>, id: String) {
    let Some(c) = c else {
        let _ = send_value(&mut ws, json!({"error": format!("Failed to stream container stats: Error response from daemon: No such container: {id}"), "timestamp": now_rfc3339_nano()})).await;
        // The socket closes shortly after the error frame (about 2 s in Arcane; 500 ms here).
        tokio::time::sleep(TICK).await;
        let _ = ws.send(Message::Close(None)).await;
        return;
    };
    let mut n = 0;
    loop {
        if !send_value(&mut ws, stats_frame(&c, n, n == 0)).await {
            return;
        }
        n += 1;
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            m = ws.recv() => match m {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    }
}

async fn system_stats(mut ws: WebSocket, interval: u64, containers: usize) {
    loop {
        let frame = json!({"cpuUsage": 7.5, "memoryUsage": 3_221_225_472u64, "memoryTotal": 8_589_934_592u64,
            "diskUsage": 42_949_672_960u64, "diskTotal": 107_374_182_400u64, "cpuCount": 2,
            "architecture": "amd64", "platform": "linux", "hostname": "arcane-sim", "gpuCount": 0,
            "containers": containers});
        if !send_value(&mut ws, frame).await {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(interval)) => {}
            m = ws.recv() => match m {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    }
}

/// The terminal: raw binary frames, TTY echo, a tiny shell (`echo`, `env`, `hostname`,
/// `pwd`, `whoami`, `exit`), no resize or control messages (docs/arcane-wire.md#websockets).
async fn terminal(
    mut ws: WebSocket,
    c: Option<crate::state::Container>,
    id: String,
    shell: String,
) {
    let Some(c) = c else {
        let _ = ws
            .send(Message::Text(format!("Error creating exec: failed to create exec: Error response from daemon: No such container: {id}\r\n").into()))
            .await;
        // Abrupt close: drop the socket without a close frame.
        return;
    };
    if c.state != "running" {
        let _ = ws
            .send(Message::Text(format!("Error creating exec: failed to create exec: Error response from daemon: container {} is not running\r\n", c.id).into()))
            .await;
        return;
    }
    let prompt = b"/ # ".to_vec();
    if ws
        .send(Message::Binary(prompt.clone().into()))
        .await
        .is_err()
    {
        return;
    }
    let mut line = Vec::<u8>::new();
    while let Some(Ok(m)) = ws.recv().await {
        let data: Vec<u8> = match m {
            Message::Binary(b) => b.to_vec(),
            Message::Text(t) => t.as_bytes().to_vec(),
            Message::Close(_) => return,
            _ => continue,
        };
        let mut out = Vec::new();
        for b in data {
            if b == b'\r' || b == b'\n' {
                out.extend_from_slice(b"\r\n");
                let cmd = String::from_utf8_lossy(&line).trim().to_string();
                line.clear();
                if cmd == "exit" {
                    let _ = ws.send(Message::Binary(out.into())).await;
                    let _ = ws.send(Message::Close(None)).await;
                    return;
                }
                out.extend_from_slice(run(&cmd, &c, &shell).as_bytes());
                out.extend_from_slice(&prompt);
            } else {
                line.push(b);
                out.push(b);
            }
        }
        if ws.send(Message::Binary(out.into())).await.is_err() {
            return;
        }
    }
}

fn run(cmd: &str, c: &crate::state::Container, shell: &str) -> String {
    let (prog, args) = cmd.split_once(' ').unwrap_or((cmd, ""));
    match prog {
        "" => String::new(),
        "echo" => format!("{args}\r\n"),
        "env" => c.env.iter().map(|e| format!("{e}\r\n")).collect(),
        "hostname" => format!("{}\r\n", &c.id[..12.min(c.id.len())]),
        "pwd" => "/\r\n".to_string(),
        "whoami" => "root\r\n".to_string(),
        "printf" => format!("\u{1b}[1;31m{args}\u{1b}[0m\r\n"),
        other => format!("{shell}: {other}: not found\r\n"),
    }
}
