//! Group commit on PostgreSQL: the inserts ([`crate::Store::insert_with`],
//! those without an idempotency key or a callback), the reads by id
//! ([`crate::Store::get`]) and the resolutions ([`crate::Store::resolve`])
//! that arrive together run as one statement each, in one round trip, and
//! for writes one commit.
//!
//! Each is a queue and a few workers. A worker takes whatever is waiting
//! (up to a batch's size) and runs it while the next worker gathers what
//! arrives meanwhile: under load a batch holds everything that arrived
//! during the last one, and a caller that finds nothing running runs its
//! job itself, as a batch of one, without a worker's hop. The replicas benchmark measured why: a resolution's
//! round trips (then `BEGIN` / `UPDATE … RETURNING` / `COMMIT`) and a read's cost
//! PostgreSQL and askgate more than the work itself, and sixteen rows in
//! one `UPDATE` commit about five times as many resolutions a second as
//! sixteen statements do (pgbench, one database, ten connections).
//!
//! A batch keeps every rule of the statement it replaces:
//! - a resolution is the same compare-and-set from `pending`, and a
//!   question named twice in one batch is resolved by the first and given
//!   to the second afterwards, alone (so the second finds it ended);
//! - rows are locked in id order (`askgate_resolve_all`, migration 10,
//!   one `UPDATE` by primary key per question: [`super::by_id`]), so two
//!   batches (on two replicas, say) never wait for each other in a circle;
//! - a resolution, alone or in a batch, is one statement committed on its
//!   own (no `BEGIN` and `COMMIT` round trips); a row it returns that
//!   cannot be read back is put back as it was ([`undo`]) and only its
//!   caller told, so an unreadable row is undone, not half applied;
//! - a batch whose statement fails changes nothing, and each of its
//!   resolutions is made again alone, so that only a resolution that fails
//!   alone fails, with its own error;
//! - a batch of one is the plain statement of one question, so that one
//!   caller alone waits as long as without batches;
//! - a batch of inserts checks the caps exactly, under the exclusive lock
//!   of every capped scope it writes to (`askgate_pending_room_all`,
//!   migration 0009), counting its own rows; when one would not fit, or a
//!   unique index refuses a row (a session's second question, an id
//!   taken), it inserts nothing and each insert is made alone
//!   ([`super::insert`]), which names the cap or the collision; a batch of
//!   one is made alone from the start (far from the caps it needs no
//!   exclusive lock);
//! - a read gets its row, or its own decoding error; a failed statement
//!   gives each caller the error, read again alone.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use askgate_core::QuestionId;
use sqlx::postgres::PgPool;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;

use super::by_id;
use super::insert::Columns;
use super::notify::{self, Notifier};
use crate::row::{QuestionRow, encode};
use crate::{InsertRules, Inserted, QuestionRecord, QuestionStatus, Resolution, StoreError};

/// Jobs waiting for a worker; a caller beyond them waits to be queued.
const QUEUE: usize = 4096;

/// Workers of each queue: one runs a batch while another gathers the next.
const WORKERS: usize = 2;

/// The most resolutions in one statement.
const RESOLVE_BATCH: usize = 64;

/// The most reads in one statement.
const READ_BATCH: usize = 128;

/// The most inserts in one statement.
const INSERT_BATCH: usize = 64;

/// A caller's result, sent back by whoever ran its job.
type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// What runs a batch of jobs `J`.
type Run<J> = Arc<dyn Fn(Vec<J>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A queue of jobs `J` and the workers that run them in batches; dropping
/// it stops the workers (a caller waiting then hears the store closed).
struct Queue<J> {
    sender: mpsc::Sender<J>,
    workers: Vec<JoinHandle<()>>,
    run: Run<J>,
    /// Batches being run, a caller's own included: while none is, a caller
    /// runs its job itself rather than hand it to a worker and wait to be
    /// woken (two task switches a call, measured in the replicas bench at
    /// one call in flight).
    running: Arc<AtomicUsize>,
}

impl<J> std::fmt::Debug for Queue<J> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Queue")
            .field("waiting", &(QUEUE - self.sender.capacity()))
            .field("running", &self.running.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<J> Drop for Queue<J> {
    fn drop(&mut self) {
        for worker in &self.workers {
            worker.abort();
        }
    }
}

/// One batch counted in [`Queue::running`] until dropped (a cancelled
/// caller's included).
struct Running(Arc<AtomicUsize>);

impl Running {
    fn start(running: &Arc<AtomicUsize>) -> Self {
        running.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(running))
    }

    /// Counted only if nothing else is running.
    fn alone(running: &Arc<AtomicUsize>) -> Option<Self> {
        running
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Self(Arc::clone(running)))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<J: Send + 'static> Queue<J> {
    /// Workers that each take up to `max` waiting jobs and `run` them.
    fn start<F, Fut>(max: usize, run: F) -> Self
    where
        F: Fn(Vec<J>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let receiver = Arc::new(Mutex::new(receiver));
        let run: Run<J> = Arc::new(move |jobs| Box::pin(run(jobs)));
        let running = Arc::new(AtomicUsize::new(0));
        let workers = (0..WORKERS)
            .map(|_| {
                let receiver = Arc::clone(&receiver);
                let run = Arc::clone(&run);
                let running = Arc::clone(&running);
                tokio::spawn(async move {
                    let mut jobs = Vec::with_capacity(max);
                    loop {
                        // The lock only while gathering: the other worker
                        // gathers while this one runs.
                        let taken = receiver.lock().await.recv_many(&mut jobs, max).await;
                        if taken == 0 {
                            return;
                        }
                        let _running = Running::start(&running);
                        run(std::mem::take(&mut jobs)).await;
                    }
                })
            })
            .collect();
        Self {
            sender,
            workers,
            run,
            running,
        }
    }

    /// Runs a job and waits for its result: at once, as a batch of its
    /// own, when nothing else is running; otherwise queued for the next
    /// batch.
    async fn submit<T>(&self, job: impl FnOnce(Reply<T>) -> J) -> Result<T, StoreError> {
        let (reply, result) = oneshot::channel();
        if let Some(_running) = Running::alone(&self.running) {
            (self.run)(vec![job(reply)]).await;
        } else if self.sender.send(job(reply)).await.is_err() {
            return Err(closed());
        }
        result.await.unwrap_or_else(|_| Err(closed()))
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the store is closed".to_owned())
}

/// One resolution waiting for its batch.
#[derive(Debug)]
struct Resolve {
    id: QuestionId,
    resolution: Resolution,
    reply: Reply<Option<QuestionRecord>>,
}

/// One insert waiting for its batch.
#[derive(Debug)]
struct Insert {
    question: QuestionRecord,
    /// The caps only ([`batched`]).
    rules: InsertRules,
    reply: Reply<Inserted>,
}

/// One read waiting for its batch.
#[derive(Debug)]
struct Read {
    id: QuestionId,
    reply: Reply<Option<QuestionRecord>>,
}

/// The three queues of a store.
#[derive(Debug)]
pub(super) struct Batches {
    inserts: Queue<Insert>,
    resolves: Queue<Resolve>,
    reads: Queue<Read>,
}

impl Batches {
    /// Queues working on `pool`, telling the other replicas of the
    /// questions they resolve through `notifier`.
    pub(super) fn start(pool: &PgPool, notifier: Arc<Notifier>) -> Self {
        let inserting = pool.clone();
        let resolving = pool.clone();
        let reading = pool.clone();
        Self {
            inserts: Queue::start(INSERT_BATCH, move |jobs| insert_all(inserting.clone(), jobs)),
            resolves: Queue::start(RESOLVE_BATCH, move |jobs| {
                resolve_all(resolving.clone(), Arc::clone(&notifier), jobs)
            }),
            reads: Queue::start(READ_BATCH, move |jobs| read_all(reading.clone(), jobs)),
        }
    }

    /// The insert of a pending question with no idempotency key and no
    /// callback ([`batched`]), in a batch.
    pub(super) async fn insert(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        self.inserts
            .submit(|reply| Insert {
                question: question.clone(),
                rules: rules.clone(),
                reply,
            })
            .await
    }

    /// The compare-and-set from `pending` of [`super::resolve_in`], in a
    /// batch: the record as it is now when this call resolved it. The other
    /// replicas are told before the call returns, every resolution of a
    /// batch in one message to the notifier ([`Notifier::changed_together`]).
    pub(super) async fn resolve(
        &self,
        id: &QuestionId,
        resolution: &Resolution,
    ) -> Result<Option<QuestionRecord>, StoreError> {
        self.resolves
            .submit(|reply| Resolve {
                id: id.clone(),
                resolution: resolution.clone(),
                reply,
            })
            .await
    }

    /// The question, read in a batch.
    pub(super) async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
        self.reads.submit(|reply| Read { id: id.clone(), reply }).await
    }
}

/// Whether an insert can join a batch: a pending question (one stored
/// ended counts under no cap) with no idempotency key to look up and no
/// callback to record. The others are made alone ([`super::insert`]).
pub(super) fn batched(question: &QuestionRecord, rules: &InsertRules) -> bool {
    question.status == QuestionStatus::Pending && rules.idempotency.is_none() && rules.callback.is_none()
}

/// The batch's inserts in one statement; when it inserts nothing (a cap
/// near, a collision, a failure), each alone.
async fn insert_all(pool: PgPool, jobs: Vec<Insert>) {
    if jobs.len() > 1 && matches!(insert_batch(&pool, &jobs).await, Ok(true)) {
        for job in jobs {
            let _ = job.reply.send(Ok(Inserted::New));
        }
        return;
    }
    for job in jobs {
        let _ = job
            .reply
            .send(super::insert::insert(&pool, &job.question, &job.rules).await);
    }
}

/// Every insert of `jobs` in one statement, or none: whether they were.
async fn insert_batch(pool: &PgPool, jobs: &[Insert]) -> Result<bool, StoreError> {
    let count = jobs.len();
    let mut agents = Vec::with_capacity(count);
    let mut recipients = Vec::with_capacity(count);
    let mut agent_limits = Vec::with_capacity(count);
    let mut recipient_limits = Vec::with_capacity(count);
    let mut ids = Vec::with_capacity(count);
    let mut sessions = Vec::with_capacity(count);
    let mut runs = Vec::with_capacity(count);
    let mut surfaces = Vec::with_capacity(count);
    let mut locales = Vec::with_capacity(count);
    let mut requests = Vec::with_capacity(count);
    let mut created = Vec::with_capacity(count);
    let mut expires = Vec::with_capacity(count);
    let mut progress = Vec::with_capacity(count);
    let mut finished = Vec::with_capacity(count);
    let mut steps = Vec::with_capacity(count);
    let mut next_steps = Vec::with_capacity(count);
    for Insert { question, rules, .. } in jobs {
        let columns = Columns::of(question)?;
        agents.push(question.agent.as_str());
        recipients.push(question.recipient.as_str());
        agent_limits.push(rules.max_pending_per_agent.map(i64::from));
        recipient_limits.push(rules.max_pending_per_recipient.map(i64::from));
        ids.push(question.id.as_str());
        sessions.push(question.session_id.as_deref());
        runs.push(question.run_id.as_deref());
        surfaces.push(columns.surfaces);
        locales.push(question.locale.as_str());
        requests.push(columns.request);
        created.push(question.created_at);
        expires.push(question.expires_at);
        progress.push(columns.progress);
        finished.push(crate::surfaces::all_finished(&question.surfaces));
        steps.push(columns.steps);
        next_steps.push(question.next_step_at());
    }
    let (fits, inserted): (bool, i64) = sqlx::query_as(
        "WITH room AS MATERIALIZED (SELECT askgate_pending_room_all($1, $2, $3, $4) AS fits), \
         inserted AS ( \
             INSERT INTO questions (id, status, agent, session_id, run_id, recipient, surfaces, locale, \
                 request, created_at, expires_at, progress, finished, steps, next_step_at) \
             SELECT v.id, 'pending', v.agent, v.session_id, v.run_id, v.recipient, v.surfaces, v.locale, \
                 v.request, v.created_at, v.expires_at, v.progress, v.finished, v.steps, v.next_step_at \
             FROM unnest($1::text[], $2::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], \
                 $10::text[], $11::int8[], $12::int8[], $13::text[], $14::bool[], $15::text[], $16::int8[]) \
                 AS v (agent, recipient, id, session_id, run_id, surfaces, locale, request, created_at, \
                     expires_at, progress, finished, steps, next_step_at) \
             WHERE (SELECT fits FROM room) \
             RETURNING 1) \
         SELECT (SELECT fits FROM room), (SELECT count(*) FROM inserted)",
    )
    .bind(&agents)
    .bind(&recipients)
    .bind(&agent_limits)
    .bind(&recipient_limits)
    .bind(&ids)
    .bind(&sessions)
    .bind(&runs)
    .bind(&surfaces)
    .bind(&locales)
    .bind(&requests)
    .bind(&created)
    .bind(&expires)
    .bind(&progress)
    .bind(&finished)
    .bind(&steps)
    .bind(&next_steps)
    .fetch_one(pool)
    .await?;
    Ok(fits && usize::try_from(inserted).is_ok_and(|inserted| inserted == count))
}

/// The batch's resolutions, each question's first in one statement, the
/// others after it, alone; the other replicas told of each that resolved
/// before its caller is.
async fn resolve_all(pool: PgPool, notifier: Arc<Notifier>, jobs: Vec<Resolve>) {
    let mut named = HashSet::new();
    let (mut first, again): (Vec<Resolve>, Vec<Resolve>) =
        jobs.into_iter().partition(|job| named.insert(job.id.clone()));
    // One alone is the plain statement (a single caller's latency is what
    // it was without batches).
    if first.len() == 1 && again.is_empty() {
        if let Some(job) = first.pop() {
            resolve_alone(&pool, &notifier, job).await;
        }
        return;
    }
    match resolve_batch(&pool, &first).await {
        Ok(mut resolved) => {
            notifier.changed_together(
                resolved
                    .values()
                    .filter_map(|read| read.as_ref().ok())
                    .map(notify::about),
            );
            for job in first {
                let _ = job.reply.send(resolved.remove(job.id.as_str()).transpose());
            }
        }
        Err(_) => {
            for job in first {
                resolve_alone(&pool, &notifier, job).await;
            }
        }
    }
    for job in again {
        resolve_alone(&pool, &notifier, job).await;
    }
}

/// The resolution made alone, with its own error: one statement, committed
/// on its own.
async fn resolve_alone(pool: &PgPool, notifier: &Notifier, job: Resolve) {
    let result = match by_id::resolve_row(pool, &job.id, &job.resolution).await {
        Ok(Some(row)) => read_back(pool, job.id.as_str(), row, &job.resolution).await.map(Some),
        Ok(None) => Ok(None),
        Err(error) => Err(error),
    };
    if let Ok(Some(record)) = &result {
        notifier.changed_record(record);
    }
    let _ = job.reply.send(result);
}

/// The row question `id`'s resolution returned, read back; one that cannot
/// be is undone.
async fn read_back(
    pool: &PgPool,
    id: &str,
    row: QuestionRow,
    resolution: &Resolution,
) -> Result<QuestionRecord, StoreError> {
    match row.decode() {
        Ok(record) => Ok(record),
        Err(error) => {
            undo(pool, id, resolution).await;
            Err(error)
        }
    }
}

/// Puts question `id` back as it was before `resolution` ended it: pending,
/// with its callback unarmed (what `callbacks_armed`, migration 7, did in
/// the same write), and counted pending again (its `pending_counts`
/// trigger). For a row that cannot be read back only: nobody can act on a
/// question they cannot read, so while it was ended nobody did, and the
/// caller is told it failed. Only this resolution is undone (its status,
/// time and text must still be the row's).
///
/// Why not a transaction that a row which cannot be read back rolls back,
/// as before: its `BEGIN` and `COMMIT` were two more round trips on every
/// resolution, the most frequent write, for a row that is never unreadable
/// unless something outside askgate wrote it.
async fn undo(pool: &PgPool, id: &str, resolution: &Resolution) {
    let undone = async {
        sqlx::query(
            "WITH undone AS ( \
                 UPDATE questions SET status = 'pending', resolution = NULL, resolved_at = NULL \
                 WHERE id = $1 AND status = $2 AND resolved_at = $3 AND resolution = $4 \
                 RETURNING id) \
             UPDATE callbacks SET due_at = NULL, until = NULL, leased_until = NULL \
             FROM undone WHERE callbacks.question_id = undone.id AND callbacks.until = $3 + callbacks.window_ms",
        )
        .bind(id)
        .bind(resolution.status.as_str())
        .bind(resolution.at)
        .bind(encode(resolution)?)
        .execute(pool)
        .await?;
        Ok::<_, StoreError>(())
    }
    .await;
    if let Err(error) = undone {
        tracing::error!(channel = "postgres", question = id, %error, "a resolution whose question cannot be read back could not be undone: the question stays ended");
    }
}

/// Every resolution of `jobs` (no question twice) in one statement,
/// committed on its own: the records resolved, by id, and the error of each
/// that cannot be read back (undone). An error of the statement changes
/// nothing.
async fn resolve_batch(
    pool: &PgPool,
    jobs: &[Resolve],
) -> Result<HashMap<String, Result<QuestionRecord, StoreError>>, StoreError> {
    let mut resolutions = by_id::Resolutions::with_capacity(jobs.len());
    for job in jobs {
        resolutions.push(&job.id, &job.resolution)?;
    }
    let rows = by_id::resolve_rows(pool, &resolutions).await?;
    let asked: HashMap<&str, &Resolve> = jobs.iter().map(|job| (job.id.as_str(), job)).collect();
    let mut resolved = HashMap::with_capacity(rows.len());
    for row in rows {
        let id = row.raw_id().to_owned();
        let read = match asked.get(id.as_str()) {
            Some(job) => read_back(pool, &id, row, &job.resolution).await,
            // Not asked for: cannot happen (the statement updates the ids given).
            None => continue,
        };
        resolved.insert(id, read);
    }
    Ok(resolved)
}

/// The batch's reads in one statement; each caller gets its row, or the
/// error of its own row. When the statement fails, each is read alone.
async fn read_all(pool: PgPool, mut jobs: Vec<Read>) {
    // One alone is the plain statement.
    if jobs.len() == 1 {
        if let Some(job) = jobs.pop() {
            let _ = job.reply.send(super::get_alone(&pool, &job.id).await);
        }
        return;
    }
    let ids: Vec<&str> = jobs.iter().map(|job| job.id.as_str()).collect();
    let rows = by_id::read_rows(&pool, &ids).await;
    let Ok(rows) = rows else {
        for job in jobs {
            let _ = job.reply.send(super::get_alone(&pool, &job.id).await);
        }
        return;
    };
    // Decoded once per row: a question read twice in one batch gives both
    // callers the same record (or the same error).
    let found: HashMap<String, Result<QuestionRecord, String>> = rows
        .into_iter()
        .map(|row| {
            let id = row.raw_id().to_owned();
            let decoded = row.decode().map_err(|error| match error {
                StoreError::Corrupt(what) => what,
                other => other.to_string(),
            });
            (id, decoded)
        })
        .collect();
    for job in jobs {
        let result = match found.get(job.id.as_str()) {
            Some(Ok(record)) => Ok(Some(record.clone())),
            Some(Err(what)) => Err(StoreError::Corrupt(what.clone())),
            None => Ok(None),
        };
        let _ = job.reply.send(result);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use askgate_testkit::postgres::Schema;
    use sqlx::postgres::{PgPool, PgPoolOptions};
    use tokio::sync::oneshot;

    use super::{Resolve, by_id, resolve_all};
    use crate::postgres::PgStore;
    use crate::postgres::notify::{Note, Notifier};
    use crate::{QuestionRecord, QuestionStatus, StoreError};

    /// A schema with questions `q0`…`q4` pending (deadline 1000) and `q5`
    /// answered, and a pool on it.
    async fn questions() -> (Schema, PgPool) {
        let schema = Schema::create().await;
        // Opening the store migrates the schema.
        PgStore::connect_with(schema.options(), 1).await.unwrap().close().await;
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_lazy_with(schema.options());
        let request = askgate_core::validate_json(
            r#"{"questions": [{"id": "go", "header": "Go", "question": "Go?",
                "options": [{"label": "Yes"}, {"label": "No"}], "multiSelect": false}]}"#,
        )
        .unwrap();
        sqlx::query(
            "INSERT INTO questions (id, status, agent, recipient, locale, request, created_at, expires_at) \
             SELECT 'q' || n, CASE WHEN n = 5 THEN 'answered' ELSE 'pending' END, 'agent', 'person', 'en', \
                 $1, 1, 1000 \
             FROM generate_series(0, 5) AS n",
        )
        .bind(crate::row::encode(&request).unwrap())
        .execute(&pool)
        .await
        .unwrap();
        (schema, pool)
    }

    type Result = oneshot::Receiver<std::result::Result<Option<QuestionRecord>, StoreError>>;

    /// A skip of each of `ids`, with what each caller will be told.
    fn skips(ids: &[&str]) -> (Vec<Resolve>, Vec<Result>) {
        ids.iter()
            .map(|id| {
                let (reply, result) = oneshot::channel();
                let job = Resolve {
                    id: by_id::tests::id(id),
                    resolution: by_id::tests::resolution(QuestionStatus::Skipped),
                    reply,
                };
                (job, result)
            })
            .unzip()
    }

    fn payloads(message: &[Note]) -> Vec<&str> {
        message.iter().map(Note::payload).collect()
    }

    /// The resolutions a batch made reach the notifier as one message (the
    /// notifier sends what one message holds in one statement), and only
    /// those it made: not the question that had ended, nor the second
    /// resolution of a question named twice. A batch of one is one message
    /// too. Each caller has its result.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batchs_resolutions_reach_the_notifier_as_one_message() {
        let (_schema, pool) = questions().await;
        let (notifier, mut notes) = Notifier::capturing("me");
        let notifier = Arc::new(notifier);

        let (jobs, results) = skips(&["q2", "q0", "q5", "q1", "q0"]);
        resolve_all(pool.clone(), Arc::clone(&notifier), jobs).await;
        let message = notes.try_recv().expect("the batch's resolutions");
        let mut told = payloads(&message);
        told.sort_unstable();
        assert_eq!(told, ["me q0 skipped 1000", "me q1 skipped 1000", "me q2 skipped 1000"]);
        assert!(notes.try_recv().is_err(), "nothing else: {:?}", notes.try_recv());
        let mut resolved = Vec::new();
        for result in results {
            resolved.push(
                result
                    .await
                    .unwrap()
                    .unwrap()
                    .map(|record| record.id.as_str().to_owned()),
            );
        }
        let some = |id: &str| Some(id.to_owned());
        assert_eq!(resolved, [some("q2"), some("q0"), None, some("q1"), None]);

        let (jobs, _results) = skips(&["q3"]);
        resolve_all(pool.clone(), Arc::clone(&notifier), jobs).await;
        assert_eq!(payloads(&notes.try_recv().unwrap()), ["me q3 skipped 1000"]);
        let (jobs, _results) = skips(&["q3"]);
        resolve_all(pool, notifier, jobs).await;
        assert!(notes.try_recv().is_err(), "ended already: nothing to tell");
    }
}
