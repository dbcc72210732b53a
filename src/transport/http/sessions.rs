//! rmcp's in-memory session manager with a ceiling on the sessions open at once: every session
//! holds a task, channels and the client's details until it ends or idles out, so without a
//! ceiling a client (or many) opening sessions in a loop grows the process without bound.
//! Each session's transport is paced (`crate::mcp::pacing`): a session that does not read its
//! answers holds its own calls, not the others', and speaks the 2025-11-25 form of tasks
//! (`crate::mcp::core_tasks`).

use std::sync::Arc;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;

use crate::mcp::core_tasks::CoreForm;
use crate::mcp::pacing::{Paced, Pacing};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};

/// [`LocalSessionManager`] refusing a new session beyond `max`.
pub struct Bounded {
    pub inner: LocalSessionManager,
    pub max: usize,
    /// Each session's limit of calls in flight (`--max-calls-in-flight`).
    pub max_calls_in_flight: usize,
}

/// A session refused at the ceiling, or the inner manager's error.
#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    #[error(
        "this server has {0} MCP sessions open, its limit (--max-sessions); retry later, when \
         idle sessions have expired (--session-idle-timeout)"
    )]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl Bounded {
    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether session `id` is open now.
    pub async fn has(&self, id: &str) -> bool {
        self.inner.sessions.read().await.contains_key(id)
    }

    /// The IDs of the sessions open now.
    pub async fn ids(&self) -> std::collections::HashSet<String> {
        let sessions = self.inner.sessions.read().await;
        sessions.keys().map(|k| k.to_string()).collect()
    }
}

impl SessionManager for Bounded {
    type Error = BoundedError;
    type Transport = CoreForm<Paced<WorkerTransport<LocalSessionWorker>>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let open = self.open().await;
        if open >= self.max {
            return Err(BoundedError::Full(open));
        }
        let (id, transport) = self.inner.create_session().await?;
        let pacing = Pacing::new(self.max_calls_in_flight);
        Ok((id, CoreForm::new(Paced::new(transport, pacing))))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
