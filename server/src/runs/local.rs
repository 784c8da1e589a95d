//! [`LocalRuns`]: runs of one server process, for the JSON session list —
//! records and events in memory and, beside the sessions, in files
//! (`<sessions>/.runs/<id>.json`, `<id>.events.jsonl`), so runs left queued
//! or running by a process that was killed are queued again when the
//! server starts next.
//!
//! ```text
//!  create ─▶ record file + active map (one run per session) ─▶ queue (VecDeque + Notify)
//!  claim  ─▶ pop the queue            renew / reclaim / ack: nothing to do in one process
//!  open(dir) ─▶ read the records: queued and running ones are queued again, waiting ones wait
//! ```
//!
//! `lc-agent runs cancel` writes `<id>.cancel` next to the record; the
//! server running the run sees it within a second. A session's inbox
//! (messages sent while it runs) is `inbox/<session>.json`, written
//! before the message is acknowledged.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::Notify;
use uuid::Uuid;

use lc_agent::SteerMessage;

use super::event::NumberedEvent;
use super::record::{Run, RunStatus};
use super::store::{Delivery, RunError, RunResult, RunStore, Steer};

/// Runs of one process, kept in files under a directory when it has one
/// (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct LocalRuns {
    dir: Option<PathBuf>,
    inner: Mutex<Inner>,
    /// Held while a record is written (see `write`).
    writing: Mutex<()>,
    queued: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<Uuid, Run>,
    cancel: HashSet<Uuid>,
    active: HashMap<Uuid, Uuid>,
    events: HashMap<Uuid, Vec<NumberedEvent>>,
    queue: VecDeque<Uuid>,
    keys: HashMap<(String, String), (Uuid, Instant)>,
    expires: HashMap<Uuid, Instant>,
    /// Each session's inbox (messages sent while it runs), also in
    /// `inbox/<session>.json`.
    inboxes: HashMap<Uuid, Vec<SteerMessage>>,
    /// Runs about to end: no message is kept for them.
    closing: HashSet<Uuid>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> RunError {
    RunError::store(format!("{what} {}", path.display()), e)
}

impl LocalRuns {
    /// Runs kept in memory only (lost when the process ends).
    pub(crate) fn in_memory() -> Self {
        Self {
            dir: None,
            inner: Mutex::new(Inner::default()),
            writing: Mutex::new(()),
            queued: Notify::new(),
        }
    }

    /// Runs kept in `dir` too: reads the runs there; those left queued or
    /// running are queued again, finished ones older than `keep` are
    /// removed.
    pub(crate) fn open(dir: impl Into<PathBuf>, keep: Duration) -> RunResult<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        let mut inner = Inner::default();
        let entries = std::fs::read_dir(&dir).map_err(|e| io("read", &dir, e))?;
        let mut requeue = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let is_record = path.extension().is_some_and(|e| e == "json")
                && !path.to_string_lossy().ends_with(".tmp.json");
            if !is_record {
                continue;
            }
            let run: Run = match std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
            {
                Some(run) => run,
                None => {
                    tracing::warn!(path = %path.display(), "an unreadable run record is skipped");
                    continue;
                }
            };
            if run.status.is_final() {
                let ended = run.finished_at.unwrap_or(run.created_at);
                let age = (chrono::Utc::now() - ended).to_std().unwrap_or_default();
                if age >= keep {
                    remove_files(&dir, run.id);
                    continue;
                }
                inner.expires.insert(run.id, Instant::now() + (keep - age));
            }
            if run.status.is_active() {
                inner.active.insert(run.session, run.id);
            }
            if matches!(run.status, RunStatus::Queued | RunStatus::Running) {
                requeue.push((run.created_at, run.id));
            }
            if dir.join(format!("{}.cancel", run.id)).exists() {
                inner.cancel.insert(run.id);
            }
            inner.runs.insert(run.id, run);
        }
        inner.inboxes = read_inboxes(&dir.join(INBOX_DIR));
        requeue.sort();
        if !requeue.is_empty() {
            tracing::info!(runs = requeue.len(), dir = %dir.display(), "runs left by the last process are queued again");
        }
        inner.queue = requeue.into_iter().map(|(_, id)| id).collect();
        Ok(Self {
            dir: Some(dir),
            inner: Mutex::new(inner),
            writing: Mutex::new(()),
            queued: Notify::new(),
        })
    }

    /// Writes `run`'s record: the one in memory now, when there is one.
    ///
    /// One write at a time: two writes of one run (the submit marking it
    /// prepared while the worker marks it running) once shared a
    /// temporary file, so one renamed it away under the other, which then
    /// failed (`No such file or directory`: the 500 under load), or left
    /// the older record on disk. Now each write writes the newest record.
    fn write(&self, run: &Run) -> RunResult<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let _one_at_a_time = self.writing.lock();
        let newest = self.inner.lock().runs.get(&run.id).cloned();
        let run = newest.as_ref().unwrap_or(run);
        let path = dir.join(format!("{}.json", run.id));
        let tmp = dir.join(format!("{}.tmp.json", run.id));
        let bytes =
            serde_json::to_vec(run).map_err(|e| RunError::store("write a run record", e))?;
        std::fs::write(&tmp, bytes).map_err(|e| io("write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io("write", &path, e))
    }

    fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Uuid> = {
            let mut inner = self.inner.lock();
            let gone: Vec<Uuid> = inner
                .expires
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(id, _)| *id)
                .collect();
            for id in &gone {
                inner.expires.remove(id);
                inner.runs.remove(id);
                inner.events.remove(id);
                inner.cancel.remove(id);
                inner.closing.remove(id);
            }
            inner.keys.retain(|_, (_, until)| *until > now);
            gone
        };
        if let Some(dir) = &self.dir {
            for id in expired {
                remove_files(dir, id);
            }
        }
    }
}

/// The folder of the sessions' inboxes, under the runs' directory.
const INBOX_DIR: &str = "inbox";

/// The inboxes kept in `dir` (`<session>.json`: a JSON list).
fn read_inboxes(dir: &Path) -> HashMap<Uuid, Vec<SteerMessage>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    let mut inboxes = HashMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let session = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<Uuid>().ok());
        let Some(session) = session else { continue };
        match std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Vec<SteerMessage>>(&b).ok())
        {
            Some(list) if !list.is_empty() => {
                inboxes.insert(session, list);
            }
            Some(_) => {}
            None => tracing::warn!(path = %path.display(), "an unreadable inbox is skipped"),
        }
    }
    inboxes
}

impl LocalRuns {
    /// Writes `session`'s inbox as it is in memory now (removed when
    /// empty): a temporary file, synced, renamed over it, so a process
    /// killed at any point leaves the old list or the new one.
    fn write_inbox(&self, session: Uuid) -> RunResult<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let _one_at_a_time = self.writing.lock();
        let list = self.inner.lock().inboxes.get(&session).cloned();
        let dir = dir.join(INBOX_DIR);
        let path = dir.join(format!("{session}.json"));
        let Some(list) = list.filter(|l| !l.is_empty()) else {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", &path, e)),
                _ => Ok(()),
            };
        };
        std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        let tmp = dir.join(format!("{session}.tmp"));
        let bytes = serde_json::to_vec(&list).map_err(|e| RunError::store("write an inbox", e))?;
        std::fs::File::create(&tmp)
            .and_then(|mut f| {
                f.write_all(&bytes)?;
                f.sync_all()
            })
            .map_err(|e| io("write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io("write", &path, e))
    }
}

fn remove_files(dir: &Path, id: Uuid) {
    for name in [
        format!("{id}.json"),
        format!("{id}.events.jsonl"),
        format!("{id}.cancel"),
    ] {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

#[async_trait]
impl RunStore for LocalRuns {
    async fn create(&self, run: &Run, per_user: usize) -> RunResult<()> {
        self.sweep();
        {
            let mut inner = self.inner.lock();
            if let Some(holder) = inner.active.get(&run.session) {
                return Err(RunError::Busy {
                    session: run.session,
                    run: *holder,
                });
            }
            let mine = inner
                .runs
                .values()
                .filter(|r| {
                    r.user == run.user && matches!(r.status, RunStatus::Queued | RunStatus::Running)
                })
                .count();
            if mine >= per_user {
                return Err(RunError::UserFull {
                    user: run.user.clone(),
                    limit: per_user,
                });
            }
            inner.active.insert(run.session, run.id);
            inner.runs.insert(run.id, run.clone());
            inner.queue.push_back(run.id);
        }
        if let Err(e) = self.write(run) {
            // Not written (a full disk): not queued either, so no run that
            // never started holds the session.
            let mut inner = self.inner.lock();
            inner.active.remove(&run.session);
            inner.runs.remove(&run.id);
            inner.queue.retain(|id| *id != run.id);
            return Err(e);
        }
        self.queued.notify_one();
        Ok(())
    }

    async fn prepared(&self, id: Uuid) -> RunResult<()> {
        let run = {
            let mut inner = self.inner.lock();
            let Some(run) = inner.runs.get_mut(&id) else {
                return Err(RunError::NotFound(id));
            };
            run.prepared = true;
            run.prepared_at = Some(chrono::Utc::now());
            run.clone()
        };
        self.write(&run)
    }

    async fn abandon(&self, run: &Run) -> RunResult<()> {
        {
            let mut inner = self.inner.lock();
            inner.runs.remove(&run.id);
            if inner.active.get(&run.session) == Some(&run.id) {
                inner.active.remove(&run.session);
            }
        }
        if let Some(dir) = &self.dir {
            remove_files(dir, run.id);
        }
        Ok(())
    }

    async fn get(&self, id: Uuid) -> RunResult<Option<Run>> {
        Ok(self.inner.lock().runs.get(&id).cloned())
    }

    async fn active_of(&self, session: Uuid) -> RunResult<Option<Uuid>> {
        Ok(self.inner.lock().active.get(&session).copied())
    }

    async fn of_session(&self, session: Uuid, limit: usize) -> RunResult<Vec<Run>> {
        let mut runs: Vec<Run> = (self.inner.lock().runs.values())
            .filter(|r| r.session == session)
            .cloned()
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn of_user(&self, user: &str, limit: usize) -> RunResult<Vec<Run>> {
        let mut runs: Vec<Run> = (self.inner.lock().runs.values())
            .filter(|r| r.user == user)
            .cloned()
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.created_at));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn put(&self, run: &Run) -> RunResult<()> {
        self.inner.lock().runs.insert(run.id, run.clone());
        self.write(run)
    }

    async fn transition(
        &self,
        id: Uuid,
        from: &[RunStatus],
        to: RunStatus,
    ) -> RunResult<Option<Run>> {
        let run = {
            let mut inner = self.inner.lock();
            let Some(run) = inner.runs.get_mut(&id) else {
                return Err(RunError::NotFound(id));
            };
            if !from.contains(&run.status) {
                return Ok(None);
            }
            if to == RunStatus::Running && !run.prepared {
                return Err(RunError::NotPrepared(id));
            }
            run.status = to;
            let run = run.clone();
            if to == RunStatus::Queued {
                inner.queue.push_back(id);
            }
            run
        };
        if to == RunStatus::Queued {
            self.queued.notify_one();
        }
        if to != RunStatus::Running {
            // (A run taken is written by its server right after.)
            self.write(&run)?;
        }
        Ok(Some(run))
    }

    async fn settle(&self, run: &Run, keep: Duration) -> RunResult<()> {
        {
            let mut inner = self.inner.lock();
            inner.runs.insert(run.id, run.clone());
            if run.status.is_final() {
                if inner.active.get(&run.session) == Some(&run.id) {
                    inner.active.remove(&run.session);
                }
                inner.expires.insert(run.id, Instant::now() + keep);
            }
        }
        self.write(run)
    }

    async fn sweep(&self) {
        LocalRuns::sweep(self);
    }

    async fn request_cancel(&self, id: Uuid) -> RunResult<()> {
        self.inner.lock().cancel.insert(id);
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{id}.cancel"));
            std::fs::write(&path, b"").map_err(|e| io("write", &path, e))?;
        }
        Ok(())
    }

    async fn cancel_requested(&self, id: Uuid) -> RunResult<bool> {
        if self.inner.lock().cancel.contains(&id) {
            return Ok(true);
        }
        // `lc-agent runs cancel` (another process) leaves a file.
        let asked = self
            .dir
            .as_ref()
            .is_some_and(|dir| dir.join(format!("{id}.cancel")).exists());
        if asked {
            self.inner.lock().cancel.insert(id);
        }
        Ok(asked)
    }

    async fn steer(&self, session: Uuid, run: Uuid, message: &SteerMessage) -> RunResult<Steer> {
        {
            let mut inner = self.inner.lock();
            if inner.active.get(&session) != Some(&run) || inner.closing.contains(&run) {
                return Ok(Steer::Ending);
            }
            match inner.runs.get(&run).map(|r| r.status) {
                Some(RunStatus::Queued | RunStatus::Running) => {}
                Some(RunStatus::Waiting) => return Ok(Steer::Waiting),
                _ => return Ok(Steer::Ending),
            }
            let list = inner.inboxes.entry(session).or_default();
            if !list.iter().any(|m| m.id == message.id) {
                list.push(message.clone());
            }
        }
        if let Err(e) = self.write_inbox(session) {
            // Not kept on disk: not kept at all (the client is told).
            let mut inner = self.inner.lock();
            if let Some(list) = inner.inboxes.get_mut(&session) {
                list.retain(|m| m.id != message.id);
            }
            return Err(e);
        }
        Ok(Steer::Kept)
    }

    async fn inbox(&self, session: Uuid) -> RunResult<Vec<SteerMessage>> {
        Ok(self
            .inner
            .lock()
            .inboxes
            .get(&session)
            .cloned()
            .unwrap_or_default())
    }

    async fn inbox_drop(&self, session: Uuid, ids: &[Uuid]) -> RunResult<()> {
        {
            let mut inner = self.inner.lock();
            let Some(list) = inner.inboxes.get_mut(&session) else {
                return Ok(());
            };
            let before = list.len();
            list.retain(|m| !ids.contains(&m.id));
            if list.len() == before {
                return Ok(());
            }
            if list.is_empty() {
                inner.inboxes.remove(&session);
            }
        }
        self.write_inbox(session)
    }

    async fn close_inbox(&self, session: Uuid, run: Uuid) -> RunResult<bool> {
        let mut inner = self.inner.lock();
        if inner.inboxes.get(&session).is_some_and(|l| !l.is_empty()) {
            return Ok(false);
        }
        inner.closing.insert(run);
        Ok(true)
    }

    async fn open_inbox(&self, run: Uuid) -> RunResult<()> {
        self.inner.lock().closing.remove(&run);
        Ok(())
    }

    async fn append(&self, id: Uuid, events: &[NumberedEvent]) -> RunResult<()> {
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{id}.events.jsonl"));
            let mut lines = Vec::new();
            for e in events {
                serde_json::to_writer(&mut lines, e)
                    .map_err(|e| RunError::store("write a run's events", e))?;
                lines.push(b'\n');
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(&lines))
                .map_err(|e| io("write", &path, e))?;
        }
        let mut inner = self.inner.lock();
        let list = inner.events.entry(id).or_default();
        list.extend(events.iter().cloned());
        Ok(())
    }

    async fn events(&self, id: Uuid, after: u64, max: usize) -> RunResult<Vec<NumberedEvent>> {
        {
            let inner = self.inner.lock();
            if let Some(list) = inner.events.get(&id) {
                return Ok(list
                    .iter()
                    .filter(|e| e.seq > after)
                    .take(max)
                    .cloned()
                    .collect());
            }
        }
        // After a restart: read them back from the file.
        let Some(dir) = &self.dir else {
            return Ok(Vec::new());
        };
        let path = dir.join(format!("{id}.events.jsonl"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(Vec::new());
        };
        let list: Vec<NumberedEvent> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let out = list
            .iter()
            .filter(|e| e.seq > after)
            .take(max)
            .cloned()
            .collect();
        self.inner.lock().events.entry(id).or_insert(list);
        Ok(out)
    }

    async fn last_seq(&self, id: Uuid) -> RunResult<u64> {
        let _ = self.events(id, u64::MAX, 0).await?;
        Ok(self
            .inner
            .lock()
            .events
            .get(&id)
            .and_then(|l| l.last())
            .map_or(0, |e| e.seq))
    }

    async fn remember(
        &self,
        user: &str,
        key: &str,
        run: Uuid,
        ttl: Duration,
    ) -> RunResult<Option<Uuid>> {
        let mut inner = self.inner.lock();
        let now = Instant::now();
        let slot = (user.to_string(), key.to_string());
        match inner.keys.get(&slot) {
            Some((id, until)) if *until > now => Ok(Some(*id)),
            _ => {
                inner.keys.insert(slot, (run, now + ttl));
                Ok(None)
            }
        }
    }

    async fn forget(&self, user: &str, key: &str) -> RunResult<()> {
        self.inner
            .lock()
            .keys
            .remove(&(user.to_string(), key.to_string()));
        Ok(())
    }

    async fn queue_depth(&self) -> RunResult<Option<u64>> {
        Ok(Some(self.inner.lock().queue.len() as u64))
    }

    async fn enqueue(&self, id: Uuid) -> RunResult<()> {
        self.inner.lock().queue.push_back(id);
        self.queued.notify_one();
        Ok(())
    }

    async fn claim(&self, _consumer: &str, wait: Duration) -> RunResult<Option<Delivery>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.queued.notified();
            if let Some(run) = self.inner.lock().queue.pop_front() {
                return Ok(Some(Delivery {
                    run,
                    tag: run.to_string(),
                }));
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(None);
            }
        }
    }

    async fn reclaim(&self, _consumer: &str, _idle: Duration) -> RunResult<Option<Delivery>> {
        Ok(None)
    }

    async fn renew(&self, _consumer: &str, _delivery: &Delivery) -> RunResult<()> {
        Ok(())
    }

    async fn ack(&self, _delivery: &Delivery) -> RunResult<()> {
        Ok(())
    }
}
