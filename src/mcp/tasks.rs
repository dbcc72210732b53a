//! MCP tasks (docs/tasks.md): a long-running call answered at once with a task that the client
//! polls, reads and cancels. rmcp's `TaskManager` keeps each task's state and runs its work;
//! this adds whose each task is (another caller can neither see, read nor cancel it) and the
//! limits (`--max-tasks`, `--max-tasks-total`, `--task-ttl-max`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{DetailedTask, Task};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};

/// The poll interval suggested to clients (`pollIntervalMs`): a pull's lines come about once a
/// second, so polling faster shows nothing new.
pub const POLL_INTERVAL_MS: u64 = 1_000;

/// Finished tasks kept (until their TTL) for each task that may run at once: their results are
/// capped like any answer, and this caps how many there are.
const KEPT_PER_RUNNING: usize = 8;

/// The tasks of every session and caller of this server.
pub struct Tasks {
    manager: TaskManager,
    /// Each task's owner: a digest of who created it (`owner_key`).
    owners: Mutex<HashMap<String, Vec<u8>>>,
    per_caller: usize,
    total: usize,
    ttl: Duration,
}

/// Why a task was not created: the text of the call's `isError` result.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl Tasks {
    /// At most `per_caller` tasks running for one caller and `total` in all; each kept `ttl`
    /// from its creation (and finished ones one more `ttl` at most, rmcp's retention).
    pub fn new(per_caller: usize, total: usize, ttl: Duration) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            owners: Mutex::default(),
            per_caller: per_caller.max(1),
            total: total.max(1),
            ttl,
        }
    }

    /// The TTL every task gets, in milliseconds (`ttlMs`).
    pub fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts `work` as a task of `owner`, unless a limit is reached. The task is visible to
    /// `tasks/get` when this returns.
    pub fn start<F: FnOnce(TaskContext) -> TaskFuture>(
        &self,
        owner: Vec<u8>,
        status: &str,
        work: F,
    ) -> Result<Task, (Refused, F)> {
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        // Tasks rmcp has forgotten (TTL) are forgotten here too.
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        let running = |id: &String| {
            self.manager
                .get_task(id)
                .is_ok_and(|t| !t.status().is_terminal())
        };
        let all = owners.keys().filter(|id| running(id)).count();
        let mine = owners
            .iter()
            .filter(|(id, o)| **o == owner && running(id))
            .count();
        if mine >= self.per_caller {
            return Err((
                Refused(format!(
                    "Not started: {mine} task(s) of yours are running, the most this server allows \
                 per caller (--max-tasks {}). Wait for one to finish (tasks/get) or cancel one \
                 (tasks/cancel), then call again; nothing was sent to Arcane.",
                    self.per_caller
                )),
                work,
            ));
        }
        if all >= self.total {
            return Err((
                Refused(format!(
                    "Not started: {all} task(s) are running on this server, the most it allows \
                 (--max-tasks-total {}). Try again when one has finished; nothing was sent to \
                 Arcane.",
                    self.total
                )),
                work,
            ));
        }
        if owners.len() >= self.total * KEPT_PER_RUNNING {
            return Err((
                Refused(format!(
                    "Not started: the server keeps {} finished task(s) until their TTL ({} s). Read \
                 their results (tasks/get) and try again later; nothing was sent to Arcane.",
                    owners.len(),
                    self.ttl.as_secs()
                )),
                work,
            ));
        }
        let options = TaskOptions::new()
            .with_ttl_ms(self.ttl_ms())
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message(status);
        let task = self.manager.spawn(options, work);
        owners.insert(task.task_id.clone(), owner);
        Ok(task)
    }

    /// The task `id` as `owner` may see it; a task of another caller is as unknown as one that
    /// never existed, so that its existence says nothing.
    pub fn get(&self, owner: &[u8], id: &str) -> Result<DetailedTask, McpError> {
        self.check(owner, id)?;
        self.manager.get_task(id)
    }

    /// Asks the task `id` of `owner` to stop (cooperative: the running call closes its request
    /// to Arcane and the task ends `cancelled`).
    pub fn cancel(&self, owner: &[u8], id: &str) -> Result<(), McpError> {
        self.check(owner, id)?;
        self.manager.cancel_task(id)
    }

    /// Delivers `tasks/update` answers to the task `id` of `owner`.
    pub fn update(
        &self,
        owner: &[u8],
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        self.check(owner, id)?;
        self.manager.update_task(id, responses)
    }

    fn check(&self, owner: &[u8], id: &str) -> Result<(), McpError> {
        let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        match owners.get(id) {
            Some(o) if o == owner => Ok(()),
            // The words of rmcp's own answer for an unknown task (-32602).
            _ => Err(McpError::invalid_params(
                format!("unknown task: {}", arcane_markdown::clip(id, 100)),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::CallToolResult;

    fn forever(_: TaskContext) -> TaskFuture {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(CallToolResult::success(vec![]))
        })
    }

    #[tokio::test]
    async fn limits_count_running_tasks_per_caller_and_in_all() {
        let tasks = Tasks::new(1, 2, Duration::from_secs(60));
        let a = tasks
            .start(b"a".to_vec(), "", forever)
            .map_err(|(r, _)| r)
            .unwrap();
        let refused = tasks.start(b"a".to_vec(), "", forever).unwrap_err().0;
        assert!(refused.0.contains("--max-tasks 1"), "{}", refused.0);
        tasks
            .start(b"b".to_vec(), "", forever)
            .map_err(|(r, _)| r)
            .unwrap();
        let refused = tasks.start(b"c".to_vec(), "", forever).unwrap_err().0;
        assert!(refused.0.contains("--max-tasks-total 2"), "{}", refused.0);
        // Another caller neither sees nor cancels a's task.
        assert!(tasks.get(b"b", &a.task_id).is_err());
        assert!(tasks.cancel(b"b", &a.task_id).is_err());
        assert!(tasks.get(b"a", &a.task_id).is_ok());
    }
}
