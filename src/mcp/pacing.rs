//! Answers paced to the client's reading: at most `--max-calls-in-flight` `tools/call` calls of
//! a session run at once, each counted from the moment it starts until its answer has been
//! **written** to the session's transport (docs/measurements.md, "Memory under a burst").
//!
//! rmcp tells a handler nothing of the fate of its answer: a returned result waits, as a typed
//! message (a tree of `serde_json::Value`s several times the size of its JSON text), until the
//! transport has written it, and a client slower to read than the server is to answer would let
//! thousands of them pile up. [`Paced`] wraps the transport rmcp serves, so it sees every
//! message both ways: a `tools/call` request gets a [`Ticket`] (in the request's extensions,
//! which rmcp hands to the handler), its answer's write gives the slot back, and so does the
//! client's cancellation of a call whose answer was not yet handed over (rmcp then drops the
//! answer). A call beyond the limit waits for a slot holding only its parsed request, before
//! it runs; everything else (`ping`, `initialize`, `tools/list`, `arcane_find_action`,
//! resources, notifications) never waits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData, JsonRpcMessage,
    JsonRpcNotification, JsonRpcRequest, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// One session's slots and the calls holding them, by request ID.
pub struct Pacing {
    slots: Arc<Semaphore>,
    /// Every `tools/call` read and not yet answered (its answer not yet handed to the
    /// transport), with its slot once it has one.
    calls: Mutex<HashMap<RequestId, Option<OwnedSemaphorePermit>>>,
    /// Answers handed to the transport and not yet written, and the most of them and of open
    /// calls at once, for the session's last log line.
    unwritten: AtomicUsize,
    peak_unwritten: AtomicUsize,
    peak_open: AtomicUsize,
}

impl Drop for Pacing {
    fn drop(&mut self) {
        tracing::debug!(
            peak_open_calls = self.peak_open.load(Ordering::Relaxed),
            peak_unwritten_answers = self.peak_unwritten.load(Ordering::Relaxed),
            "session's calls at their busiest"
        );
    }
}

impl Pacing {
    /// A session's pacing with `limit` slots (at least one).
    pub fn new(limit: usize) -> Arc<Pacing> {
        Arc::new(Pacing {
            slots: Arc::new(Semaphore::new(limit.clamp(1, Semaphore::MAX_PERMITS))),
            calls: Mutex::default(),
            unwritten: AtomicUsize::new(0),
            peak_unwritten: AtomicUsize::new(0),
            peak_open: AtomicUsize::new(0),
        })
    }

    /// Slots free now.
    pub fn available(&self) -> usize {
        self.slots.available_permits()
    }

    /// Calls read and not yet answered (running, waiting for a slot, or done and not yet
    /// handed to the transport).
    pub fn open(&self) -> usize {
        self.calls().len()
    }

    fn calls(&self) -> MutexGuard<'_, HashMap<RequestId, Option<OwnedSemaphorePermit>>> {
        // A panic while holding the lock leaves the map whole (every change is one call).
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a `tools/call` just read; `false` when a call of that ID is still open.
    fn register(&self, id: &RequestId) -> bool {
        let mut calls = self.calls();
        if calls.contains_key(id) {
            return false;
        }
        calls.insert(id.clone(), None);
        self.peak_open.fetch_max(calls.len(), Ordering::Relaxed);
        true
    }

    /// The call's answer is being handed to the transport: its entry leaves the map, and its
    /// slot (if any) is kept by the caller until the write is done.
    fn answered(&self, id: &RequestId) -> Option<OwnedSemaphorePermit> {
        self.calls().remove(id).flatten()
    }

    /// The client cancelled the call: rmcp drops its answer when it comes, so its slot is free
    /// now. Once its answer is handed over (no longer in the map) the write gives it back.
    fn cancelled(&self, id: &RequestId) {
        let slot = self.calls().remove(id);
        drop(slot);
    }
}

/// What a `tools/call` handler gets in its request's extensions: the way to its slot.
#[derive(Clone)]
pub struct Ticket {
    pacing: Arc<Pacing>,
    id: RequestId,
}

impl Ticket {
    /// Waits for a slot, holding nothing else; `None` when the call is cancelled first (or
    /// its entry is gone: cancelled while the slot was being given).
    /// A call that has to wait does so in a span of its own (docs/observability.md).
    pub async fn admit(self, cancel: &CancellationToken) -> Option<CallSlot> {
        if cancel.is_cancelled() {
            return None;
        }
        let permit = match self.pacing.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let wait = async {
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        permit = self.pacing.slots.clone().acquire_owned() => permit.ok(),
                    }
                };
                let span = tracing::info_span!(
                    target: "arcane_mcp::mcp::pacing",
                    "mcp.slot.wait",
                    "otel.name" = "wait for a call slot (--max-calls-in-flight)",
                );
                tracing::Instrument::instrument(wait, span).await?
            }
        };
        let mut calls = self.pacing.calls();
        match calls.get_mut(&self.id) {
            Some(slot @ None) => *slot = Some(permit),
            // Cancelled (and forgotten) while waiting: the permit goes back as it drops.
            _ => return None,
        }
        drop(calls);
        Some(CallSlot {
            ticket: self,
            done: false,
        })
    }
}

/// A call holding its slot. Its answer's write gives the slot back; if the call ends without
/// an answer (a panic, or its task dropped), dropping this gives it back instead.
pub struct CallSlot {
    ticket: Ticket,
    done: bool,
}

impl CallSlot {
    /// The call has its answer: from now on the transport gives the slot back.
    pub fn answered(mut self) {
        self.done = true;
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        if !self.done {
            self.ticket.pacing.cancelled(&self.ticket.id);
        }
    }
}

/// An rmcp server transport whose `tools/call` calls are paced by a [`Pacing`].
pub struct Paced<T> {
    inner: T,
    pacing: Arc<Pacing>,
}

impl<T> Paced<T> {
    pub fn new(inner: T, pacing: Arc<Pacing>) -> Paced<T> {
        Paced { inner, pacing }
    }
}

impl<T> Transport<RoleServer> for Paced<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let slot = id.and_then(|id| self.pacing.answered(id));
        let write = self.inner.send(item);
        let pacing = self.pacing.clone();
        let waiting = pacing.unwritten.fetch_add(1, Ordering::Relaxed) + 1;
        pacing.peak_unwritten.fetch_max(waiting, Ordering::Relaxed);
        async move {
            let written = write.await;
            pacing.unwritten.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
            written
        }
    }

    // Cancel-safe as rmcp's loop needs (it selects over it): nothing is awaited after the
    // inner transport's message is taken.
    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let mut message = self.inner.receive().await?;
            match &mut message {
                JsonRpcMessage::Request(JsonRpcRequest {
                    id,
                    request: ClientRequest::CallToolRequest(call),
                    ..
                }) => {
                    if !self.pacing.register(id) {
                        // Two calls under one ID could not be told apart when answered.
                        let refusal = ServerJsonRpcMessage::error(
                            ErrorData::invalid_request(
                                format!(
                                    "request ID {id} is already used by a call in flight: give \
                                     each request an ID of its own"
                                ),
                                None,
                            ),
                            Some(id.clone()),
                        );
                        tokio::spawn(self.inner.send(refusal));
                        continue;
                    }
                    call.extensions.insert(Ticket {
                        pacing: self.pacing.clone(),
                        id: id.clone(),
                    });
                }
                JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ClientNotification::CancelledNotification(n),
                    ..
                }) => {
                    if let Some(id) = &n.params.request_id {
                        self.pacing.cancelled(id);
                    }
                }
                _ => {}
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(pacing: &Arc<Pacing>, id: i64) -> Ticket {
        let id = RequestId::Number(id);
        assert!(pacing.register(&id));
        Ticket {
            pacing: pacing.clone(),
            id,
        }
    }

    #[tokio::test]
    async fn a_slot_comes_back_when_the_answer_is_handed_over_then_written() {
        let pacing = Pacing::new(1);
        let never = CancellationToken::new();
        let first = ticket(&pacing, 1).admit(&never).await.unwrap();
        first.answered();
        assert_eq!(pacing.available(), 0, "answered but not yet written");
        let slot = pacing.answered(&RequestId::Number(1));
        assert!(slot.is_some());
        assert_eq!(pacing.open(), 0);
        assert_eq!(pacing.available(), 0, "still being written");
        drop(slot);
        assert_eq!(pacing.available(), 1);
    }

    #[tokio::test]
    async fn a_waiting_call_gives_up_when_cancelled() {
        let pacing = Pacing::new(1);
        let never = CancellationToken::new();
        let _first = ticket(&pacing, 1).admit(&never).await.unwrap();
        let cancel = CancellationToken::new();
        let waiting = tokio::spawn({
            let t = ticket(&pacing, 2);
            let cancel = cancel.clone();
            async move { t.admit(&cancel).await.is_some() }
        });
        cancel.cancel();
        assert!(!waiting.await.unwrap());
        assert_eq!(pacing.available(), 0, "the first call still holds the slot");
    }

    #[tokio::test]
    async fn a_cancelled_call_frees_its_slot_and_a_later_answer_changes_nothing() {
        let pacing = Pacing::new(1);
        let never = CancellationToken::new();
        let call = ticket(&pacing, 1).admit(&never).await.unwrap();
        pacing.cancelled(&RequestId::Number(1));
        assert_eq!(pacing.available(), 1);
        call.answered();
        assert!(pacing.answered(&RequestId::Number(1)).is_none());
        assert_eq!(pacing.available(), 1);
    }

    #[tokio::test]
    async fn a_call_cancelled_while_its_slot_is_given_does_not_keep_it() {
        let pacing = Pacing::new(1);
        let t = ticket(&pacing, 1);
        pacing.cancelled(&RequestId::Number(1));
        assert!(t.admit(&CancellationToken::new()).await.is_none());
        assert_eq!(pacing.available(), 1);
    }

    #[tokio::test]
    async fn a_call_that_ends_without_an_answer_gives_its_slot_back() {
        let pacing = Pacing::new(1);
        let call = ticket(&pacing, 1)
            .admit(&CancellationToken::new())
            .await
            .unwrap();
        drop(call);
        assert_eq!(pacing.available(), 1);
        assert_eq!(pacing.open(), 0);
    }

    #[test]
    fn an_id_in_use_is_refused_until_answered() {
        let pacing = Pacing::new(4);
        let id = RequestId::Number(7);
        assert!(pacing.register(&id));
        assert!(!pacing.register(&id));
        drop(pacing.answered(&id));
        assert!(pacing.register(&id));
    }
}
