//! The engine's limits against hostile input, without a server: the path-segment encoder's
//! invariants over arbitrary values, and the time and size caps of streams and WebSocket reads.

use std::time::Duration;

use futures::StreamExt as _;
use proptest::prelude::*;
use tokio::net::TcpListener;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The encoder's invariants: no `/ \ ? #` in a segment, nor anything a hop decodes into
    /// one, never a dot segment, and decoding gives the value back; what it refuses is exactly
    /// what is (or decodes to) a dot or empty segment or holds path structure.
    #[test]
    fn path_segments_are_safe(value in "(\\PC|[./%?#:@\\\\ ]|%2[eEfF]|%5[cC]|%25){0,12}") {
        use arcane_engine::{Refusal, is_dot_or_empty, segment, structure_in};
        match segment("p", &value) {
            Ok(seg) => {
                prop_assert!(!seg.contains(['/', '\\', '?', '#']), "{seg}");
                // What the hops decode (up to four rounds) is never path structure.
                prop_assert!(structure_in(&seg).is_none(), "{seg}");
                prop_assert!(!is_dot_or_empty(&seg), "{seg}");
                prop_assert!(!seg.chars().any(|c| c.is_control() || c == ' ' || !c.is_ascii()));
                let back = percent_encoding::percent_decode_str(&seg).decode_utf8().unwrap();
                prop_assert_eq!(back, value.as_str());
            }
            // An invisible character is refused too (path.rs, `Refusal::Hidden`): the value,
            // or what a hop decodes it to, holds it.
            Err(e) => match e.why {
                Refusal::Hidden(c) => {
                    prop_assert!(arcane_markdown::is_hidden_char(c), "{c:?}");
                    // As typed, or after the hops' rounds of percent-decoding.
                    let mut text = value.clone();
                    let mut seen = text.contains(c);
                    for _ in 0..4 {
                        text = percent_encoding::percent_decode_str(&text)
                            .decode_utf8_lossy()
                            .into_owned();
                        seen |= text.contains(c);
                    }
                    prop_assert!(seen, "{value:?}");
                }
                _ => prop_assert!(is_dot_or_empty(&value) || structure_in(&value).is_some()),
            },
        }
    }
}

#[tokio::test]
async fn a_stream_stopped_by_the_time_cap_says_so() {
    use arcane_engine::{StreamErrorKind, read_stream_within};
    let body = futures::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::from(
        "{\"type\":\"activity\",\"activityId\":\"a1\"}\n{\"log\":\"step 1\"}\n",
    ))])
    .chain(futures::stream::pending());
    let err = read_stream_within(
        body,
        |_| {},
        &tokio_util::sync::CancellationToken::new(),
        Some(Duration::from_millis(300)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, StreamErrorKind::TimeCap);
    let t = err.to_string();
    assert!(t.starts_with("stopped after"), "{t}");
    assert!(t.contains("longer than the time limit"), "{t}");
    assert!(!t.contains("decoding"), "{t}");
}

#[tokio::test]
async fn a_websocket_message_over_the_cap_ends_the_read() {
    use arcane_engine::{LogOptions, WsTarget, collect_logs};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(sock).await.unwrap();
        use futures::SinkExt;
        let _ = ws
            .send(tokio_tungstenite::tungstenite::Message::text(
                "first line\n",
            ))
            .await;
        let _ = ws
            .send(tokio_tungstenite::tungstenite::Message::text(
                "x".repeat(300 * 1024),
            ))
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let target = WsTarget {
        url: format!("ws://{addr}/api/environments/0/ws/containers/web-1/logs"),
        headers: vec![],
        tls: None,
        max_message_bytes: 64 * 1024,
    };
    let out = collect_logs(&target, &LogOptions::default()).await.unwrap();
    assert_eq!(out.lines, ["first line"]);
    let why = out.truncated.unwrap();
    assert!(why.contains("larger than the limit"), "{why}");
}
