//! What one client may hold of the listener (docs/security.md, "Limits"): connections per
//! address (counted before any request is read, so before authentication), connections per
//! address that no request has been admitted on yet ([`Unauthenticated`]), requests in flight
//! per bearer token, and the time a request body may take to arrive. Without them one token
//! holder could take every connection of the listener with request heads whose bodies never
//! end (only the head had a deadline), and anyone with connections that send nothing.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// At most `max` held per key (a client address, a token). A key's count goes when its last
/// hold is dropped, so the table is as large as the keys holding something.
pub struct PerKey<K> {
    max: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One place of a [`PerKey`], given back when dropped.
pub struct Held<K: Hash + Eq + Clone> {
    from: Arc<PerKey<K>>,
    key: K,
}

impl<K: Hash + Eq + Clone> PerKey<K> {
    pub fn new(max: usize) -> Arc<PerKey<K>> {
        Arc::new(PerKey {
            max,
            held: Mutex::default(),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for `key`, or `None` when it holds `max` already.
    pub fn try_take(self: &Arc<Self>, key: K) -> Option<Held<K>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(key.clone()).or_default();
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Held {
            from: self.clone(),
            key,
        })
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

impl<K: Hash + Eq + Clone> Drop for Held<K> {
    fn drop(&mut self) {
        let mut held = self.from.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// Connections on which no request has been admitted by the gate yet (waiting for a head, or
/// having sent only unauthenticated ones: `/healthz`, a refused token), by address. When a new
/// connection finds no place (its address's cap or the listener's), one of them that waits for
/// a head gives its places up at once and is closed: its own address's oldest, else the oldest
/// of the address holding the most, when that is more than `share`. So connections that send
/// nothing keep neither another client nor the address's own `/healthz` probe waiting for the
/// head timeout; one answering a request, or admitted, is never closed for it, and nothing is
/// closed while there is room (a burst of sign-ins is no attack).
pub struct Unauthenticated {
    share: usize,
    table: Mutex<HashMap<std::net::IpAddr, Vec<Arc<Pending>>>>,
}

/// One connection of [`Unauthenticated`]: whether it holds a place of the listener, whether it
/// is answering a request (else it waits for a head), what closes it, and its places.
pub struct Pending {
    pool: Arc<Unauthenticated>,
    key: std::net::IpAddr,
    placed: std::sync::atomic::AtomicBool,
    busy: std::sync::atomic::AtomicBool,
    close: tokio_util::sync::CancellationToken,
    held: Mutex<Option<Box<dyn Send>>>,
}

impl Unauthenticated {
    pub fn new(share: usize) -> Arc<Unauthenticated> {
        Arc::new(Unauthenticated {
            share,
            table: Mutex::default(),
        })
    }

    /// A new connection of `key`, counted until a request of it is admitted or it ends.
    pub fn enter(self: &Arc<Self>, key: std::net::IpAddr) -> Arc<Pending> {
        let p = Arc::new(Pending {
            pool: self.clone(),
            key,
            placed: Default::default(),
            busy: Default::default(),
            close: Default::default(),
            held: Mutex::new(None),
        });
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        table.entry(key).or_default().push(p.clone());
        p
    }

    /// Closes one connection waiting for a head that holds a place of the listener, giving its
    /// places back, to make room for a new connection of `key`: `key`'s own oldest, else the
    /// oldest of the address with the most such connections, when it has more than the share.
    /// Whether one was closed.
    pub fn make_room(&self, key: std::net::IpAddr) -> bool {
        use std::sync::atomic::Ordering;
        let waits =
            |p: &Arc<Pending>| p.placed.load(Ordering::Acquire) && !p.busy.load(Ordering::Acquire);
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let own = table.get(&key).and_then(|l| l.iter().position(waits));
        let (from, at) = match own {
            Some(at) => (key, at),
            None => {
                let most = table
                    .iter()
                    .map(|(k, l)| (l.iter().filter(|p| waits(p)).count(), *k))
                    .max();
                let Some((_, from)) = most.filter(|(n, _)| *n > self.share) else {
                    return false;
                };
                let Some(at) = table.get(&from).and_then(|l| l.iter().position(waits)) else {
                    return false;
                };
                (from, at)
            }
        };
        let Some(list) = table.get_mut(&from) else {
            return false;
        };
        let victim = list.remove(at);
        drop(victim.held.lock().unwrap_or_else(|e| e.into_inner()).take());
        victim.close.cancel();
        true
    }

    fn leave(&self, p: &Pending) {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = table.get_mut(&p.key) {
            list.retain(|q| !std::ptr::eq(Arc::as_ptr(q), p));
            if list.is_empty() {
                table.remove(&p.key);
            }
        }
    }

    #[cfg(test)]
    fn held_by(&self, key: std::net::IpAddr) -> usize {
        let table = self.table.lock().unwrap();
        table.get(&key).map_or(0, Vec::len)
    }
}

impl Pending {
    /// Keeps `held` (the connection's places in the caps; `placed`: a place of the listener
    /// among them) until the connection ends or is closed to make room.
    pub fn hold(&self, held: impl Send + 'static, placed: bool) {
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(held));
        self.placed
            .store(placed, std::sync::atomic::Ordering::Release);
    }

    /// Fires when the connection is closed to make room.
    pub fn closing(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.close.cancelled()
    }

    /// A request of it is being answered (`true`) or has been (`false`): only a connection
    /// waiting for a head is closed to make room.
    pub fn busy(&self, busy: bool) {
        self.busy.store(busy, std::sync::atomic::Ordering::Release);
    }

    /// The gate admitted a request of it: it no longer counts.
    pub fn leave(&self) {
        self.pool.leave(self);
    }

    /// The connection ended: it no longer counts, and its places are given back.
    pub fn ended(&self) {
        self.pool.leave(self);
        drop(self.held.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// Reads the whole body of `req` within `deadline` (counted from the end of its head) and at
/// most `limit` bytes, and gives the request back with the body in memory (what the MCP
/// service would read anyway). A body still arriving at the deadline gets `408` and the
/// connection is closed; a larger one `413`.
pub async fn read_body(
    req: Request,
    limit: usize,
    deadline: Duration,
) -> Result<Request, Response> {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(e)) if is_too_large(&e) => Err(closing(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Payload Too Large: the request body exceeds {limit} bytes (--max-request-bytes)."
            ),
        )),
        // The client went away or broke the framing mid-body: nobody reads the answer.
        Ok(Err(_)) => Err(closing(
            StatusCode::BAD_REQUEST,
            "Bad Request: the request body could not be read.".into(),
        )),
        Err(_) => {
            crate::logging::warn_throttled!(
                seconds = deadline.as_secs(),
                "a request body did not arrive within --request-body-timeout (408); the \
                 connection was closed"
            );
            Err(closing(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the request body did not arrive within {} s \
                     (--request-body-timeout); send it whole, then retry.",
                    deadline.as_secs()
                ),
            ))
        }
    }
}

fn is_too_large(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// A plain-text answer after which the connection is closed (its body was not read whole).
pub fn closing(status: StatusCode, text: String) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// `response` keeping `held` until its body has been sent or dropped: a streamed answer (an
/// event stream) holds its place for as long as it is open.
pub fn holding<T: Send + Sync + 'static>(response: Response, held: T) -> Response {
    use http_body_util::BodyExt;
    response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            let _ = &held;
            frame
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_counted_per_key_and_given_back() {
        let caps = PerKey::new(2);
        let a1 = caps.try_take("a").unwrap();
        let _a2 = caps.try_take("a").unwrap();
        assert!(caps.try_take("a").is_none(), "a holds its two");
        let b = caps.try_take("b").unwrap();
        drop(a1);
        assert!(caps.try_take("a").is_some(), "a place was given back");
        drop(b);
        assert_eq!(caps.keys(), 1, "a key holding nothing is forgotten");
    }

    #[tokio::test]
    async fn a_connection_waiting_for_a_head_makes_room() {
        let pool = Unauthenticated::new(1);
        let ip = |n: u8| std::net::IpAddr::from([127, 0, 0, n]);
        let (a, b, c) = (ip(1), ip(2), ip(3));
        let places = PerKey::new(8);
        let enter = |key| {
            let p = pool.enter(key);
            p.hold(places.try_take(key).unwrap(), true);
            p
        };
        let first = enter(a);
        let second = enter(a);
        second.busy(true);
        // a's own oldest waiting connection gives way, its places at once; one answering a
        // request never does.
        assert!(pool.make_room(a));
        assert!(first.close.is_cancelled() && !second.close.is_cancelled());
        assert!(first.held.lock().unwrap().is_none());
        let third = enter(a);
        // Another address takes from the one holding the most waiting, beyond the share (1).
        let fourth = enter(a);
        assert!(pool.make_room(b), "a has two waiting, more than its share");
        assert!(third.close.is_cancelled() && !fourth.close.is_cancelled());
        assert!(!pool.make_room(c), "a has one waiting, within its share");
        // Nothing waits: nothing is closed. Admitted or ended: no longer counted.
        fourth.busy(true);
        assert!(!pool.make_room(a));
        for p in [&second, &fourth] {
            p.leave();
        }
        assert_eq!(pool.held_by(a), 0);
        assert!(pool.table.lock().unwrap().is_empty());
    }
}
