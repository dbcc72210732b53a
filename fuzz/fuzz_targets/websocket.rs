//! Fuzzes the WebSocket handlers' frame handling (`arcane_engine::{collect_logs, sample_stats,
//! run_exec}`) against an in-process WebSocket server on loopback that sends the frames the
//! input describes, then closes. The terminal server answers like a shell: it reads the
//! command the handler sends and, where the input says so, prints the exit marker the
//! handler asked for.
//!
//! Input: the first byte picks the handler (logs, stats, exec); then records of a kind byte
//! (text, binary, ping, exit marker, close), a length byte and that many bytes of payload.
//! Invariants: no panic, no hang (each exchange is bounded); logs keep within their line and
//! byte caps, one sanitized line each; stats keep at most the samples asked, without
//! `statsHistory`; an exit code comes only from the marker, the output holds no marker nonce
//! and stays within its byte cap; every text (output and errors) forms no Markdown beyond our
//! paragraphs and fences.
#![no_main]

mod markdown_checks;

use std::sync::LazyLock;
use std::time::Duration;

use arcane_engine::{ExecOptions, LogOptions, WsTarget, collect_logs, run_exec, sample_stats};
use futures::{SinkExt, StreamExt};
use libfuzzer_sys::fuzz_target;
use markdown_checks::{no_autolinks, structure_free};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

const MAX_MESSAGE: usize = 4096;
const MAX_LINES: usize = 40;
const SAMPLES: usize = 3;
const MAX_BYTES: usize = 2048;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
});

enum Frame {
    Send(Message),
    Marker(u8),
}

fn frames(mut data: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    while let [kind, len, rest @ ..] = data {
        let n = usize::from(*len).min(rest.len());
        let payload = &rest[..n];
        data = &rest[n..];
        out.push(match kind % 5 {
            0 => Frame::Send(Message::text(String::from_utf8_lossy(payload).into_owned())),
            1 => Frame::Send(Message::binary(payload.to_vec())),
            2 => Frame::Send(Message::Ping(payload.to_vec().into())),
            3 => Frame::Marker(*len),
            _ => Frame::Send(Message::Close(None)),
        });
    }
    out
}

/// Serves one connection: reads the command first when it is a terminal, sends the frames,
/// closes, and drains until the handler has gone. Returns the exec nonce it saw, if any.
async fn serve(listener: &TcpListener, frames: Vec<Frame>, terminal: bool) -> Option<String> {
    let (tcp, _) = listener.accept().await.ok()?;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.ok()?;
    let mut nonce = None;
    if terminal {
        let marker = regex::Regex::new(r"__AMCP_%s_%s__\\n' ([0-9a-f]{16})").expect("regex");
        if let Some(Ok(Message::Binary(b))) = ws.next().await {
            let sent = String::from_utf8_lossy(&b).into_owned();
            nonce = marker.captures(&sent).map(|c| c[1].to_string());
        }
    }
    for f in frames {
        let msg = match f {
            Frame::Send(m) => m,
            Frame::Marker(code) => {
                let n = nonce.as_deref().unwrap_or("0000000000000000");
                Message::binary(format!("\n__AMCP_{n}_{code}__\n").into_bytes())
            }
        };
        if ws.send(msg).await.is_err() {
            break;
        }
    }
    let _ = ws.close(None).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
    nonce
}

fn clean(s: &str) -> bool {
    !s.chars().any(|c| c.is_control() && c != '\t')
}

fn plain(text: &str) {
    structure_free(text, &["p"]);
    no_autolinks(text);
}

fn fenced_text(text: &str) {
    let md = format!("# Title\n\n{text}");
    structure_free(&md, &["h", "p", "code"]);
    no_autolinks(&md);
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let frames = frames(rest);
    let markers = frames.iter().any(|f| matches!(f, Frame::Marker(_)));
    RT.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let target = WsTarget {
            url: format!(
                "ws://{}/api/environments/0/ws/x",
                listener.local_addr().unwrap()
            ),
            headers: vec![("X-API-Key".into(), "fuzz-key".into())],
            tls: None,
            max_message_bytes: MAX_MESSAGE,
        };
        let terminal = which % 3 == 2;
        let server = serve(&listener, frames, terminal);
        let client = async {
            match which % 3 {
                0 => {
                    let opts = LogOptions {
                        max_lines: MAX_LINES,
                        idle: Duration::from_secs(3),
                        first_frame: Duration::from_secs(3),
                        timeout: Duration::from_secs(5),
                        ..LogOptions::default()
                    };
                    match collect_logs(&target, &opts).await {
                        Ok(out) => {
                            assert!(out.lines.len() <= MAX_LINES);
                            let bytes: usize = out.lines.iter().map(|l| l.len() + 1).sum();
                            assert!(bytes <= MAX_MESSAGE, "{bytes} bytes of lines");
                            for l in &out.lines {
                                assert!(clean(l), "{l:?}");
                            }
                            fenced_text(&arcane_mcp::present::text::log_text(&out));
                        }
                        Err(e) => plain(&e.to_string()),
                    }
                    None
                }
                1 => {
                    match sample_stats(&target, SAMPLES, Duration::from_secs(5)).await {
                        Ok(out) => {
                            assert!(out.samples.len() <= SAMPLES);
                            for s in &out.samples {
                                assert!(s.get("statsHistory").is_none(), "{s}");
                            }
                        }
                        Err(e) => plain(&e.to_string()),
                    }
                    None
                }
                _ => {
                    let opts = ExecOptions {
                        shell: None,
                        timeout: Duration::from_secs(5),
                        max_bytes: MAX_BYTES,
                    };
                    Some(run_exec(&target, "ls -la /app", &opts).await)
                }
            }
        };
        let (nonce, exec) = tokio::time::timeout(Duration::from_secs(20), async {
            tokio::join!(server, client)
        })
        .await
        .expect("a WebSocket exchange hung");
        match exec {
            Some(Ok(out)) => {
                if out.exit_code.is_some() {
                    assert!(markers, "an exit code without the marker: {out:?}");
                }
                if let Some(n) = &nonce {
                    assert!(
                        !out.output.contains(n.as_str()),
                        "the nonce in {:?}",
                        out.output
                    );
                }
                assert!(
                    out.output.len() <= MAX_BYTES,
                    "{} bytes of output",
                    out.output.len()
                );
                fenced_text(&arcane_mcp::present::text::exec_text(&out));
            }
            Some(Err(e)) => plain(&e.to_string()),
            None => {}
        }
    });
});
