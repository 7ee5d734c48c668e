//! The other half of the change feed ([`super::feed`]): telling the other
//! replicas which question changed, after the write that changed it has
//! committed.
//!
//! A `NOTIFY` inside the writing transaction would be simplest, but
//! PostgreSQL serialises the commits of every transaction that notifies (one
//! lock for the whole cluster, held until the commit is on disk): writes
//! that notify then commit one disk flush at a time, whatever the number of
//! connections, which capped askgate at about 600 cycles/s. So each write
//! commits on its own, and a task of the store sends its notifications after
//! it, in batches, on a connection of its own, in transactions that write
//! nothing and commit without waiting for the disk.
//!
//! A notification of a question still pending (asked, or its partial
//! answers saved) sets the other replicas' timers and refreshes the pages
//! they serve: nothing waits on it by the millisecond. It waits up to
//! [`LINGER`] for others to share its statement, and goes out at once with
//! the next notification of a question that ended, which wakes a waiting
//! agent and never waits. With two replicas, one asking and one answering,
//! the asking one sent a statement for every few questions asked, each
//! waking every replica's listener: 0.76 notifying statements a cycle
//! against 0.44–0.58 with one replica (`pg_stat_statements`, 32 in flight).
//! Lingering took two replicas at 32 in flight from 714–768 to 786–992
//! cycles/s, PostgreSQL's write transactions from 1.66–1.71 to 1.25–1.32 a
//! cycle (the replicas bench, three alternating runs on 2 cores).
//!
//! The notifications of one write go out together: a batch of resolutions
//! ([`super::batch`]) hands all of its ended questions over in one message
//! ([`Notifier::changed_together`]), which the task takes whole. Handed
//! over one by one, by each caller once it had its result, the first woke
//! the task and went out alone: two replicas at 256 in flight sent 0.19
//! notifying statements a cycle (write transactions 0.31–0.38 a cycle
//! against one replica's 0.15–0.17); together, 0.06 (0.19–0.21).
//!
//! The price: a process killed between a commit and its notification
//! leaves the other replicas unaware of that change. What depends on
//! notifications has a fallback: every replica's sweep expires questions
//! and takes up undelivered ones from the table, and an engine re-reads the
//! questions its agents wait on now and then (`Store::ended_among`).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection as _, PgPool};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::{QuestionRecord, QuestionStatus, Timestamp};

/// The most notifications sent in one statement.
const BATCH: usize = 256;

/// The longest a notification of a pending question waits for others.
const LINGER: Duration = Duration::from_millis(20);

/// Attempts at sending one batch before it is given up.
const ATTEMPTS: u32 = 4;

/// The notifications to send and the task sending them; dropping it stops
/// the task.
#[derive(Debug)]
pub(super) struct Notifier {
    /// Each message the notes of one write, taken whole.
    sender: mpsc::UnboundedSender<Vec<Note>>,
    me: String,
    task: JoinHandle<()>,
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Notifier {
    /// Sends on the channel `askgate:<schema>` as the store named `me`,
    /// connecting as `pool` does.
    pub(super) fn start(pool: &PgPool, schema: &str, me: String) -> Self {
        Self::start_lingering(pool, schema, me, LINGER)
    }

    /// Like [`Notifier::start`], a pending question's notification waiting
    /// up to `linger` for an ended one.
    pub(super) fn start_lingering(pool: &PgPool, schema: &str, me: String, linger: Duration) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        let options = (*pool.connect_options()).clone();
        let task = tokio::spawn(run(options, super::channel(schema), receiver, linger));
        Self { sender, me, task }
    }

    /// Tells the other replicas that question `id` changed: its status and
    /// deadline now (the payload the feed reads: `<store> <id> <status>
    /// <expires_at>`). Call it after the write committed.
    pub(super) fn changed(&self, id: &str, status: QuestionStatus, expires_at: Timestamp) {
        self.changed_together([(id, status, expires_at)]);
    }

    /// [`Notifier::changed`] for every question one write changed (a
    /// batch of resolutions), handed over as one message: the task takes
    /// them all when it wakes, and sends them in one statement (see the
    /// module's doc for what handing them over one by one cost).
    pub(super) fn changed_together<'a>(&self, changes: impl IntoIterator<Item = (&'a str, QuestionStatus, Timestamp)>) {
        let notes: Vec<Note> = changes
            .into_iter()
            .map(|(id, status, expires_at)| Note {
                payload: format!("{} {id} {} {expires_at}", self.me, status.as_str()),
                ended: status.is_final(),
            })
            .collect();
        if !notes.is_empty() {
            // The task is gone only when the store is dropped.
            let _ = self.sender.send(notes);
        }
    }

    /// Tells the other replicas that `record` changed (its write made
    /// alone; call it after the write committed).
    pub(super) fn changed_record(&self, record: &QuestionRecord) {
        self.changed_together([about(record)]);
    }
}

/// What a notification says of `record`, for [`Notifier::changed_together`].
pub(super) fn about(record: &QuestionRecord) -> (&str, QuestionStatus, Timestamp) {
    (record.id.as_str(), record.status, record.expires_at)
}

/// One notification to send.
#[derive(Debug)]
pub(super) struct Note {
    payload: String,
    /// Of a question that ended: sent at once.
    ended: bool,
}

#[cfg(test)]
impl Notifier {
    /// A notifier that sends nothing, and what it is handed, message by
    /// message.
    pub(super) fn capturing(me: &str) -> (Self, mpsc::UnboundedReceiver<Vec<Note>>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let notifier = Self {
            sender,
            me: me.to_owned(),
            task: tokio::spawn(async {}),
        };
        (notifier, receiver)
    }
}

#[cfg(test)]
impl Note {
    pub(super) fn payload(&self) -> &str {
        &self.payload
    }
}

async fn run(
    options: PgConnectOptions,
    channel: String,
    mut receiver: mpsc::UnboundedReceiver<Vec<Note>>,
    linger: Duration,
) {
    let mut conn: Option<PgConnection> = None;
    let mut writes = Vec::new();
    while receiver.recv_many(&mut writes, BATCH).await > 0 {
        gather(&mut receiver, &mut writes, linger).await;
        let payloads: Vec<String> = writes.drain(..).flatten().map(|note| note.payload).collect();
        for batch in payloads.chunks(BATCH) {
            send_batch(&mut conn, &options, &channel, batch).await;
        }
    }
}

/// Sends one batch, trying again [`ATTEMPTS`] times.
async fn send_batch(conn: &mut Option<PgConnection>, options: &PgConnectOptions, channel: &str, batch: &[String]) {
    for attempt in 1..=ATTEMPTS {
        match send(conn, options, channel, batch).await {
            Ok(()) => return,
            Err(error) if attempt == ATTEMPTS => {
                warn!(channel = "postgres", %error, lost = batch.len(), "could not tell the other replicas of changes; they find them at their next re-read");
            }
            Err(error) => {
                warn!(channel = "postgres", %error, "could not tell the other replicas of changes; trying again");
                *conn = None;
                tokio::time::sleep(super::pause(attempt)).await;
            }
        }
    }
}

/// Adds to `writes` what comes while their notes are all of pending
/// questions and fewer than [`BATCH`], for at most `linger`: returns at
/// once when one of them is of a question that ended, or the store is
/// gone.
async fn gather(receiver: &mut mpsc::UnboundedReceiver<Vec<Note>>, writes: &mut Vec<Vec<Note>>, linger: Duration) {
    let deadline = tokio::time::Instant::now() + linger;
    let (mut seen, mut notes) = (0, 0);
    loop {
        for write in &writes[seen..] {
            if write.iter().any(|note| note.ended) {
                return;
            }
            notes += write.len();
        }
        seen = writes.len();
        if notes >= BATCH {
            return;
        }
        match tokio::time::timeout_at(deadline, receiver.recv_many(writes, BATCH)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// One statement notifying every payload of `batch`, on the notifier's
/// connection (made when missing).
async fn send(
    conn: &mut Option<PgConnection>,
    options: &PgConnectOptions,
    channel: &str,
    batch: &[String],
) -> Result<(), sqlx::Error> {
    let connection = match conn {
        Some(connection) => connection,
        None => conn.insert(PgConnection::connect_with(options).await?),
    };
    let sent = sqlx::query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload")
        .bind(channel)
        .bind(batch)
        .execute(&mut *connection)
        .await;
    if sent.is_err() {
        *conn = None;
    }
    sent.map(drop)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use askgate_testkit::postgres::Schema;
    use sqlx::postgres::{PgListener, PgPoolOptions};

    use super::Notifier;
    use crate::QuestionStatus;

    /// A notifier lingering `linger`, on a schema of its own, and a
    /// listener on the channel it sends on (with what they need kept alive).
    struct Lingering {
        _schema: Schema,
        _pool: sqlx::PgPool,
        listener: PgListener,
        notifier: Notifier,
    }

    async fn lingering(linger: Duration) -> Lingering {
        let schema = Schema::create().await;
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_lazy_with(schema.options());
        let mut listener = PgListener::connect_with(&pool).await.unwrap();
        listener.listen(&super::super::channel(schema.name())).await.unwrap();
        let notifier = Notifier::start_lingering(&pool, schema.name(), "me".to_owned(), linger);
        Lingering {
            _schema: schema,
            _pool: pool,
            listener,
            notifier,
        }
    }

    /// How long a notification that must come may take.
    const WITHIN: Duration = Duration::from_secs(30);

    impl Lingering {
        /// The next payload heard within `within`, if any.
        async fn next(&mut self, within: Duration) -> Option<String> {
            tokio::time::timeout(within, self.listener.recv())
                .await
                .ok()
                .map(|received| received.unwrap().payload().to_owned())
        }
    }

    /// A pending question's notification waits for an ended one (here, with
    /// an hour to wait, nothing else could send it) and goes out with it,
    /// first; the ended one is not held back, and goes out alone too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pending_questions_notification_goes_out_with_the_next_ended_ones() {
        let mut on = lingering(Duration::from_secs(3600)).await;
        on.notifier.changed("q1", QuestionStatus::Pending, 5);
        assert_eq!(on.next(Duration::from_millis(500)).await, None);
        on.notifier.changed("q2", QuestionStatus::Answered, 6);
        assert_eq!(on.next(WITHIN).await.as_deref(), Some("me q1 pending 5"));
        assert_eq!(on.next(WITHIN).await.as_deref(), Some("me q2 answered 6"));
        on.notifier.changed("q3", QuestionStatus::Expired, 7);
        assert_eq!(on.next(WITHIN).await.as_deref(), Some("me q3 expired 7"));
    }

    /// The notes of one write go out, however many, each once and in
    /// order, in statements of at most `BATCH`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writes_notes_beyond_a_statements_go_out_all_in_order() {
        let mut on = lingering(Duration::from_secs(3600)).await;
        let count = super::BATCH + 44;
        let ids: Vec<String> = (0..count).map(|n| format!("q{n}")).collect();
        on.notifier
            .changed_together(ids.iter().map(|id| (id.as_str(), QuestionStatus::Answered, 9)));
        for id in &ids {
            let heard = on.next(WITHIN).await;
            assert_eq!(heard, Some(format!("me {id} answered 9")));
        }
        assert_eq!(on.next(Duration::from_millis(200)).await, None, "each once");
    }

    /// Without an ended one, pending questions' notifications go out once
    /// they have waited their time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pending_questions_notification_goes_out_alone_once_it_has_waited() {
        let mut on = lingering(Duration::from_millis(50)).await;
        on.notifier.changed("q1", QuestionStatus::Pending, 5);
        on.notifier.changed("q2", QuestionStatus::Pending, 6);
        assert_eq!(on.next(WITHIN).await.as_deref(), Some("me q1 pending 5"));
        assert_eq!(on.next(WITHIN).await.as_deref(), Some("me q2 pending 6"));
    }
}
