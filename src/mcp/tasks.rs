//! MCP tasks (docs/tasks.md): a long-running call answered at once with a task that the client
//! polls, reads and cancels, in either protocol form (the 2026-07-28 extension through rmcp's
//! handlers, the 2025-11-25 core methods through `crate::mcp::core_tasks`). rmcp's
//! `TaskManager` keeps each task's state; this is the one store both forms read: whose each
//! task is (another caller can neither see, read nor cancel it), the limits (`--max-tasks`,
//! `--max-tasks-total`, `--task-ttl-max`), the TTL that stops a task still running, and the
//! plain call's result each task ended with.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, DetailedTask, Task};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use tokio_util::sync::CancellationToken;

/// The poll interval suggested to clients (`pollIntervalMs`, `pollInterval`): a pull's lines
/// come about once a second, so polling faster shows nothing new.
pub const POLL_INTERVAL_MS: u64 = 1_000;

/// Finished tasks kept (until their TTL) for each task that may run at once: their results are
/// capped like any answer, and this caps how many there are.
const KEPT_PER_RUNNING: usize = 8;

/// The shortest TTL a client may ask for (2025-11-25 `task.ttl`): a shorter one would be
/// forgotten before its first poll.
const MIN_TTL_MS: u64 = 1_000;

/// How long rmcp's store keeps a task past the TTL it shows: the server stops a task still
/// running at its TTL itself (its request to Arcane closed, its audit line written), and this
/// is the time that stop has before rmcp's own sweep would drop it unfinished.
const STOP_GRACE_MS: u64 = 10_000;

/// The metadata that ties a message to its task (`io.modelcontextprotocol/related-task`).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Tasks per page of `tasks/list`.
const PAGE: usize = 50;

/// A call's work, run as a task: the very result the plain call returns, or the error its
/// request would have answered.
pub type Work = Pin<Box<dyn Future<Output = Result<CallToolResult, McpError>> + Send>>;

/// How a task ended, as `tasks/result` answers it.
#[derive(Clone, Debug)]
pub enum Ended {
    /// The plain call's result (completed, failed with `isError`, or cancelled).
    Result(CallToolResult),
    /// What its request would have answered instead: an error (the TTL passed, the server
    /// stopped it).
    Error(McpError),
}

/// Who asks about a task: the owner it must be, and whether their view of the policy still
/// serves an action (by ID). A task's result is its action's answer, so a caller whose view no
/// longer serves the action (a narrowed scope, a reload) can neither see, read nor cancel it.
pub struct Asker {
    pub owner: Vec<u8>,
    pub serves: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl Asker {
    fn may(&self, e: &Entry) -> bool {
        e.owner == self.owner && (self.serves)(&e.action)
    }
}

/// One task's entry beside rmcp's state.
struct Entry {
    owner: Vec<u8>,
    /// The action the task runs (its ID).
    action: String,
    /// The TTL the client is shown, in milliseconds.
    ttl_ms: u64,
    /// Order of creation: `tasks/list` pages by it.
    seq: u64,
    /// Set when the TTL stopped it.
    expired: Arc<AtomicBool>,
    ended: tokio::sync::watch::Receiver<Option<Ended>>,
}

/// The tasks of every session and caller of this server.
pub struct Tasks {
    manager: TaskManager,
    entries: Mutex<Entries>,
    per_caller: usize,
    total: usize,
    ttl: Duration,
}

#[derive(Default)]
struct Entries {
    by_id: HashMap<String, Entry>,
    next: u64,
}

/// Why a task was not created: the text of the call's `isError` result.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// Cancels the call's work when the task's future is dropped unfinished (rmcp's sweep, the
/// server's shutdown): a task never goes on sending to Arcane once nobody can see it.
struct StopOnDrop(CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Tasks {
    /// At most `per_caller` tasks running for one caller and `total` in all; each kept at most
    /// `ttl` from its creation (and finished ones one more `ttl` at most).
    pub fn new(per_caller: usize, total: usize, ttl: Duration) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            entries: Mutex::default(),
            per_caller: per_caller.max(1),
            total: total.max(1),
            ttl,
        }
    }

    /// The TTL of a task the client asked `requested` milliseconds for (none: the most),
    /// capped by `--task-ttl-max`.
    pub fn ttl_ms(&self, requested: Option<u64>) -> u64 {
        let max = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        requested.map_or(max, |r| r.clamp(MIN_TTL_MS.min(max), max))
    }

    /// Most tasks kept (running or finished, until their TTL) for one owner: a quarter of all
    /// the server keeps, and at least what its own running tasks would leave. One token can no
    /// longer fill the table and leave nobody else a task for an hour. A share refuses rather
    /// than forgets the owner's oldest: rmcp's store keeps a finished task until its TTL and
    /// cannot drop one sooner, so forgetting it here would free nothing.
    fn share(&self) -> usize {
        (self.total * KEPT_PER_RUNNING)
            .div_ceil(4)
            .max(self.per_caller * KEPT_PER_RUNNING)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `work` as a task of `owner` with the TTL asked for (`ttl_ms`, capped), unless a
    /// limit is reached. `stop` cancels the call's work: `tasks/cancel` (either form) and the
    /// TTL fire it. The task is visible to `tasks/get` when this returns.
    pub fn start(
        &self,
        owner: Vec<u8>,
        action: String,
        ttl_ms: Option<u64>,
        stop: CancellationToken,
        work: impl FnOnce(TaskContext) -> Work,
    ) -> Result<Task, Refused> {
        let mut entries = self.lock();
        // Tasks rmcp has forgotten (TTL) are forgotten here too.
        entries
            .by_id
            .retain(|id, _| self.manager.get_task(id).is_ok());
        let running = |id: &String| {
            self.manager
                .get_task(id)
                .is_ok_and(|t| !t.status().is_terminal())
        };
        let all = entries.by_id.keys().filter(|id| running(id)).count();
        let mine = entries
            .by_id
            .iter()
            .filter(|(id, e)| e.owner == owner && running(id))
            .count();
        if mine >= self.per_caller {
            return Err(Refused(format!(
                "Not started: {mine} task(s) of yours are running, the most this server allows \
                 per caller (--max-tasks {}). Wait for one to finish (tasks/get) or cancel one \
                 (tasks/cancel), then call again; nothing was sent to Arcane.",
                self.per_caller
            )));
        }
        if all >= self.total {
            return Err(Refused(format!(
                "Not started: {all} task(s) are running on this server, the most it allows \
                 (--max-tasks-total {}). Try again when one has finished; nothing was sent to \
                 Arcane.",
                self.total
            )));
        }
        let kept = entries.by_id.values().filter(|e| e.owner == owner).count();
        if kept >= self.share() {
            return Err(Refused(format!(
                "Not started: the server keeps {kept} task(s) of yours until their TTL ({} s), \
                 your share of the {} it keeps. Read their results (tasks/result) and try again \
                 when some have expired (a shorter TTL frees them sooner); nothing was sent to \
                 Arcane.",
                self.ttl.as_secs(),
                self.total * KEPT_PER_RUNNING
            )));
        }
        if entries.by_id.len() >= self.total * KEPT_PER_RUNNING {
            return Err(Refused(format!(
                "Not started: the server keeps {} finished task(s) until their TTL ({} s). Read \
                 their results (tasks/get) and try again later; nothing was sent to Arcane.",
                entries.by_id.len(),
                self.ttl.as_secs()
            )));
        }
        let ttl = self.ttl_ms(ttl_ms);
        let options = TaskOptions::new()
            .with_ttl_ms(ttl.saturating_add(STOP_GRACE_MS))
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message("working");
        let (ended_tx, ended_rx) = tokio::sync::watch::channel(None);
        let expired = Arc::new(AtomicBool::new(false));
        let flag = expired.clone();
        let mut task = self.manager.spawn(options, move |tctx| {
            let work = work(tctx.clone());
            Box::pin(run(
                tctx,
                work,
                stop,
                Duration::from_millis(ttl),
                flag,
                ended_tx,
            ))
        });
        task.ttl_ms = Some(ttl);
        let seq = entries.next;
        entries.next += 1;
        entries.by_id.insert(
            task.task_id.clone(),
            Entry {
                owner,
                action,
                ttl_ms: ttl,
                seq,
                expired,
                ended: ended_rx,
            },
        );
        Ok(task)
    }

    /// Whether task `id` was stopped by its TTL (its call's audit line then says `expired`).
    pub fn expired(&self, id: &str) -> bool {
        self.lock()
            .by_id
            .get(id)
            .is_some_and(|e| e.expired.load(Ordering::Acquire))
    }

    /// The task `id` as `asker` may see it (its TTL the one it was given); a task of another
    /// caller is as unknown as one that never existed, so that its existence says nothing.
    pub fn get(&self, asker: &Asker, id: &str) -> Result<DetailedTask, McpError> {
        let ttl = self.check(asker, id)?;
        let mut task = self.manager.get_task(id)?;
        task.task.ttl_ms = Some(ttl);
        Ok(task)
    }

    /// The tasks of `asker`, oldest first, a page from `cursor` on (the cursor of the next
    /// page, when there is one).
    pub fn list(
        &self,
        asker: &Asker,
        cursor: Option<&str>,
    ) -> Result<(Vec<DetailedTask>, Option<String>), McpError> {
        let from = match cursor {
            None => 0,
            Some(c) => c.parse::<u64>().map_err(|_| {
                McpError::invalid_params(
                    format!(
                        "invalid cursor {}: pass the nextCursor of the previous tasks/list \
                         answer as it was, or none for the first page",
                        serde_json::Value::from(arcane_markdown::clip(c, 100))
                    ),
                    None,
                )
            })?,
        };
        let mut mine: Vec<(u64, String, u64)> = self
            .lock()
            .by_id
            .iter()
            .filter(|(_, e)| asker.may(e) && e.seq >= from)
            .map(|(id, e)| (e.seq, id.clone(), e.ttl_ms))
            .collect();
        mine.sort();
        let next = mine.get(PAGE).map(|(seq, _, _)| seq.to_string());
        let page = mine
            .into_iter()
            .take(PAGE)
            .filter_map(|(_, id, ttl)| {
                let mut t = self.manager.get_task(&id).ok()?;
                t.task.ttl_ms = Some(ttl);
                Some(t)
            })
            .collect();
        Ok((page, next))
    }

    /// Waits until the task `id` of `asker` has ended, and how: what `tasks/result` answers.
    pub async fn result(&self, asker: &Asker, id: &str) -> Result<Ended, McpError> {
        self.check(asker, id)?;
        let mut ended = match self.lock().by_id.get(id) {
            Some(e) => e.ended.clone(),
            None => return Err(unknown(id)),
        };
        let got = ended.wait_for(Option::is_some).await.map(|v| v.clone());
        match got {
            Ok(Some(how)) => Ok(how),
            // The task's future was dropped unfinished (rmcp's sweep): its state says why.
            _ => {
                let t = self.manager.get_task(id)?;
                let message = match &t.payload {
                    rmcp::model::TaskPayload::Failed { error } => error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("the task ended without a result")
                        .to_string(),
                    _ => "the task ended without a result".to_string(),
                };
                Ok(Ended::Error(McpError::internal_error(message, None)))
            }
        }
    }

    /// Waits until the task `id` has ended (after a cancel) and rmcp's state says so, for at
    /// most `limit`.
    pub async fn settled(&self, id: &str, limit: Duration) {
        let ended = self.lock().by_id.get(id).map(|e| e.ended.clone());
        let Some(mut ended) = ended else { return };
        let _ = tokio::time::timeout(limit, async {
            let _ = ended.wait_for(Option::is_some).await;
            // rmcp records the end once the task's future has returned, just after.
            while self
                .manager
                .get_task(id)
                .is_ok_and(|t| !t.status().is_terminal())
            {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
    }

    /// Asks the task `id` of `asker` to stop (the running call closes its request to Arcane
    /// and the task ends `cancelled`).
    pub fn cancel(&self, asker: &Asker, id: &str) -> Result<(), McpError> {
        self.check(asker, id)?;
        self.manager.cancel_task(id)
    }

    /// Delivers `tasks/update` answers to the task `id` of `asker`.
    pub fn update(
        &self,
        asker: &Asker,
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        self.check(asker, id)?;
        self.manager.update_task(id, responses)
    }

    /// The TTL of task `id` when `asker` may see it.
    fn check(&self, asker: &Asker, id: &str) -> Result<u64, McpError> {
        match self.lock().by_id.get(id) {
            Some(e) if asker.may(e) => Ok(e.ttl_ms),
            _ => Err(unknown(id)),
        }
    }
}

/// rmcp's words for an unknown task (-32602).
fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!("unknown task: {}", arcane_markdown::clip(id, 100)),
        None,
    )
}

/// A task's future: the call's work until it ends, `tasks/cancel` or the TTL stopping it (its
/// request to Arcane closed, as a plain call's cancellation does); then how it ended, for both
/// forms: `completed` with the very result a plain call returns; `cancelled` when cancelled
/// (the status message says what may already have happened and how to check); `failed` with
/// the result's text as the error's message (the whole result its data) when the call failed
/// or the TTL stopped it.
async fn run(
    tctx: TaskContext,
    work: Work,
    stop: CancellationToken,
    ttl: Duration,
    expired: Arc<AtomicBool>,
    ended: tokio::sync::watch::Sender<Option<Ended>>,
) -> Result<CallToolResult, TaskExit> {
    let _stop = StopOnDrop(stop.clone());
    let deadline = tokio::time::sleep(ttl);
    tokio::pin!(deadline, work);
    let (mut cancelled, mut timed_out) = (false, false);
    let done = loop {
        tokio::select! {
            done = &mut work => break done,
            _ = tctx.cancelled(), if !cancelled => {
                cancelled = true;
                stop.cancel();
            }
            _ = &mut deadline, if !timed_out => {
                timed_out = true;
                expired.store(true, Ordering::Release);
                stop.cancel();
            }
        }
    };
    let result = match done {
        Ok(result) => result,
        Err(e) => {
            ended.send_replace(Some(Ended::Error(e.clone())));
            return Err(TaskExit::Error(e));
        }
    };
    let text = crate::present::result_text(&result);
    if timed_out {
        let message = format!(
            "task expired: it ran longer than its TTL ({} s) and was stopped; its request to \
             Arcane was closed. {text}",
            ttl.as_secs()
        );
        let data = serde_json::to_value(&result).ok();
        let error = McpError::internal_error(message, data);
        tctx.set_status_message(error.message.to_string());
        ended.send_replace(Some(Ended::Error(error.clone())));
        return Err(TaskExit::Error(error));
    }
    ended.send_replace(Some(Ended::Result(result.clone())));
    if cancelled || tctx.is_cancel_requested() {
        tctx.set_status_message(if result.is_error == Some(true) {
            text
        } else {
            format!(
                "Cancelled after the call had finished; tasks/result has its result. {}",
                arcane_markdown::clip(&text, 500)
            )
        });
        return Err(TaskExit::Cancelled);
    }
    if result.is_error != Some(true) {
        return Ok(result);
    }
    // The failure's text is the task's status message too (2025-11-25 `tasks/get` shows it).
    tctx.set_status_message(text.clone());
    let data = serde_json::to_value(&result).ok();
    Err(TaskExit::Error(McpError::internal_error(text, data)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forever(_: TaskContext) -> Work {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(CallToolResult::success(vec![]))
        })
    }

    fn start(tasks: &Tasks, owner: &[u8]) -> Result<Task, Refused> {
        tasks.start(
            owner.to_vec(),
            "image.pull".into(),
            None,
            CancellationToken::new(),
            forever,
        )
    }

    /// `owner`, asking with a view that serves every action.
    fn asker(owner: &[u8]) -> Asker {
        Asker {
            owner: owner.to_vec(),
            serves: Box::new(|_| true),
        }
    }

    #[tokio::test]
    async fn limits_count_running_tasks_per_caller_and_in_all() {
        let tasks = Tasks::new(1, 2, Duration::from_secs(60));
        let a = start(&tasks, b"a").unwrap();
        let refused = start(&tasks, b"a").unwrap_err();
        assert!(refused.0.contains("--max-tasks 1"), "{}", refused.0);
        start(&tasks, b"b").unwrap();
        let refused = start(&tasks, b"c").unwrap_err();
        assert!(refused.0.contains("--max-tasks-total 2"), "{}", refused.0);
        // Another caller neither sees, lists nor cancels a's task.
        assert!(tasks.get(&asker(b"b"), &a.task_id).is_err());
        assert!(tasks.cancel(&asker(b"b"), &a.task_id).is_err());
        assert!(tasks.get(&asker(b"a"), &a.task_id).is_ok());
        let (listed, next) = tasks.list(&asker(b"a"), None).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].task.task_id, a.task_id);
        assert!(next.is_none());
        assert!(tasks.list(&asker(b"a"), Some("nope")).is_err());
        // Its owner, with a view that no longer serves the task's action, neither.
        let narrowed = Asker {
            owner: b"a".to_vec(),
            serves: Box::new(|id| id != "image.pull"),
        };
        assert!(tasks.get(&narrowed, &a.task_id).is_err());
        assert!(tasks.cancel(&narrowed, &a.task_id).is_err());
        assert!(tasks.list(&narrowed, None).unwrap().0.is_empty());
    }

    /// One owner keeps at most its share of the finished tasks kept (a quarter of them here):
    /// it is refused past it, and another owner still gets tasks. Before, one owner filled the
    /// whole table and nobody got a task until its tasks' TTL passed.
    #[tokio::test]
    async fn one_owner_keeps_only_its_share_of_finished_tasks() {
        let tasks = Tasks::new(2, 4, Duration::from_secs(3600));
        let instant =
            |_: TaskContext| -> Work { Box::pin(async { Ok(CallToolResult::success(vec![])) }) };
        let run = |owner: &[u8]| {
            tasks.start(
                owner.to_vec(),
                "image.pull".into(),
                None,
                CancellationToken::new(),
                instant,
            )
        };
        let mut made = 0;
        let refused = loop {
            match run(b"a") {
                Ok(t) => {
                    made += 1;
                    tasks.result(&asker(b"a"), &t.task_id).await.unwrap();
                    tasks.settled(&t.task_id, Duration::from_secs(10)).await;
                }
                Err(refused) => break refused,
            }
            assert!(made <= 4 * KEPT_PER_RUNNING, "never refused");
        };
        assert_eq!(made, tasks.share(), "{}", refused.0);
        assert!(made < 4 * KEPT_PER_RUNNING);
        assert!(refused.0.contains("your share"), "{}", refused.0);
        let b = run(b"b").expect("another owner still gets a task");
        tasks.result(&asker(b"b"), &b.task_id).await.unwrap();
    }

    #[tokio::test]
    async fn a_requested_ttl_is_capped_and_floored() {
        let tasks = Tasks::new(1, 2, Duration::from_secs(60));
        assert_eq!(tasks.ttl_ms(None), 60_000);
        assert_eq!(tasks.ttl_ms(Some(5_000)), 5_000);
        assert_eq!(tasks.ttl_ms(Some(10_000_000)), 60_000);
        assert_eq!(tasks.ttl_ms(Some(0)), MIN_TTL_MS);
    }

    #[tokio::test]
    async fn the_ttl_stops_a_running_task_and_it_ends_failed() {
        let tasks = Tasks::new(4, 4, Duration::from_millis(50));
        let stop = CancellationToken::new();
        let seen = stop.clone();
        let t = tasks
            .start(b"a".to_vec(), "image.pull".into(), None, stop, move |_| {
                Box::pin(async move {
                    seen.cancelled().await;
                    Ok(crate::present::error_result("the call was cancelled"))
                })
            })
            .unwrap();
        assert_eq!(t.ttl_ms, Some(50));
        let ended = tasks.result(&asker(b"a"), &t.task_id).await.unwrap();
        let Ended::Error(e) = ended else {
            panic!("expired: {ended:?}")
        };
        assert!(e.message.contains("task expired"), "{e:?}");
        assert!(tasks.expired(&t.task_id));
        let got = tasks.get(&asker(b"a"), &t.task_id).unwrap();
        assert_eq!(got.status(), rmcp::model::TaskStatus::Failed);
    }
}
