//! The statements that find questions by id (reads of several, resolutions,
//! saving progress, the questions a conversation's messages lead to),
//! written so that every plan PostgreSQL may keep for them finds each
//! question by its primary key.
//!
//! Why it needs saying: sqlx prepares a statement once per connection (a
//! connection of the pool lives up to 30 minutes), and PostgreSQL keeps a
//! generic plan (made without the parameters' values) after five
//! executions, until the table is analyzed again. Two shapes made plans
//! that went wrong:
//! - `id = ANY($1)` and a join to an array of ids: planned while the table
//!   held a few pages (a new deployment), a sequential scan is cheaper than
//!   ten index probes, and the plan stayed one as the table grew (a batched
//!   read took 5 ms at 10,000 rows in the replicas benchmark);
//! - `id = … AND status = 'pending'`: the literal matches the predicate of
//!   the partial indexes of pending questions, and a plan may scan one of
//!   them whole for the id, its second column, which looks cheap whatever
//!   the table's size; but such an index keeps an entry for every question
//!   resolved since the last `VACUUM` (a resolution read 80-90 pages, a
//!   batch of them took 2-3 ms, at 25,000 rows).
//!
//! So: several ids are read one index probe each (an array unnested, each
//! id looked up in a subquery that cannot be flattened into a join), a
//! status is compared to a parameter (no plan can then prove a partial
//! index's predicate), and resolutions made together go through
//! `askgate_resolve_all` (migration 0010), one `UPDATE … WHERE id = …` per
//! question. The test below makes every plan on an empty table, generic,
//! and checks that `questions` was read through its primary key alone.

use askgate_core::QuestionId;
use sqlx::postgres::PgExecutor;

use crate::row::{QuestionRow, encode, question_columns};
use crate::{QuestionStatus, Resolution, StoreError};

/// Selects the question columns of the ids in `$1` that exist (an id named
/// twice, twice), then the rest of the statement: each id one probe of the
/// primary key (`OFFSET 0` keeps the subquery from being flattened into a
/// join, which a plan could make a scan).
macro_rules! select_by_ids {
    ($rest:literal) => {
        concat!(
            "SELECT ",
            question_columns!(),
            " FROM unnest($1::text[]) AS wanted (wanted_id) \
             CROSS JOIN LATERAL (SELECT * FROM questions WHERE id = wanted.wanted_id OFFSET 0) AS q ",
            $rest
        )
    };
}

/// The rows of the questions `ids` names (those that exist).
pub(super) async fn read_rows<'c>(conn: impl PgExecutor<'c>, ids: &[&str]) -> Result<Vec<QuestionRow>, sqlx::Error> {
    sqlx::query_as::<_, QuestionRow>(select_by_ids!(""))
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// The rows of the questions `ids` names that have ended.
pub(super) async fn ended_rows<'c>(conn: impl PgExecutor<'c>, ids: &[&str]) -> Result<Vec<QuestionRow>, sqlx::Error> {
    // Outside the subquery: a filter on its rows, not a predicate an index
    // could be chosen by.
    sqlx::query_as::<_, QuestionRow>(select_by_ids!("WHERE status <> 'pending'"))
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// The id of the newest pending question of those whose messages are in
/// `conversation` of `channel`: the conversation's messages (a range of
/// their primary key), each question probed by its own.
pub(super) async fn newest_pending_in<'c>(
    conn: impl PgExecutor<'c>,
    channel: &str,
    conversation: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT q.id FROM messages m \
         CROSS JOIN LATERAL (SELECT id, status, created_at, seq FROM questions WHERE id = m.question_id OFFSET 0) AS q \
         WHERE m.channel = $1 AND m.conversation = $2 AND q.status = 'pending' \
         ORDER BY q.created_at DESC, q.seq DESC LIMIT 1",
    )
    .bind(channel)
    .bind(conversation)
    .fetch_optional(conn)
    .await
}

/// The compare-and-set from `pending`: only the first resolution finds the
/// question pending, and a person's only while it is not yet due. The row
/// as it is now when this call resolved it, not read yet: inside a
/// transaction, a row that cannot be read back rolls it back; on its own,
/// it is undone (`batch`).
pub(super) async fn resolve_row<'c>(
    conn: impl PgExecutor<'c>,
    id: &QuestionId,
    resolution: &Resolution,
) -> Result<Option<QuestionRow>, StoreError> {
    Ok(sqlx::query_as::<_, QuestionRow>(concat!(
        "UPDATE questions SET status = $1, resolution = $2, resolved_at = $3 \
         WHERE id = $4 AND status = $6 AND (NOT $5 OR expires_at > $3) RETURNING ",
        question_columns!()
    ))
    .bind(resolution.status.as_str())
    .bind(encode(resolution)?)
    .bind(resolution.at)
    .bind(id.as_str())
    .bind(resolution.status.is_by_person())
    .bind(QuestionStatus::Pending.as_str())
    .fetch_optional(conn)
    .await?)
}

/// What [`resolve_rows`] resolves: one entry per question, none twice.
#[derive(Debug)]
pub(super) struct Resolutions<'a> {
    ids: Vec<&'a str>,
    statuses: Vec<&'static str>,
    texts: Vec<String>,
    times: Vec<i64>,
    by_person: Vec<bool>,
}

impl<'a> Resolutions<'a> {
    /// Room for `count` resolutions.
    pub(super) fn with_capacity(count: usize) -> Self {
        Self {
            ids: Vec::with_capacity(count),
            statuses: Vec::with_capacity(count),
            texts: Vec::with_capacity(count),
            times: Vec::with_capacity(count),
            by_person: Vec::with_capacity(count),
        }
    }

    /// Question `id` to be resolved with `resolution`.
    pub(super) fn push(&mut self, id: &'a QuestionId, resolution: &Resolution) -> Result<(), StoreError> {
        self.texts.push(encode(resolution)?);
        self.ids.push(id.as_str());
        self.statuses.push(resolution.status.as_str());
        self.times.push(resolution.at);
        self.by_person.push(resolution.status.is_by_person());
        Ok(())
    }
}

/// Every resolution of `resolutions` in one statement, each the
/// compare-and-set of [`resolve_row`], rows locked in id order: the rows
/// resolved.
pub(super) async fn resolve_rows<'c>(
    conn: impl PgExecutor<'c>,
    resolutions: &Resolutions<'_>,
) -> Result<Vec<QuestionRow>, sqlx::Error> {
    sqlx::query_as::<_, QuestionRow>(concat!(
        "SELECT ",
        question_columns!(),
        " FROM askgate_resolve_all($1, $2, $3, $4, $5)"
    ))
    .bind(&resolutions.ids)
    .bind(&resolutions.statuses)
    .bind(&resolutions.texts)
    .bind(&resolutions.times)
    .bind(&resolutions.by_person)
    .fetch_all(conn)
    .await
}

/// Saves `progress` (JSON) if the question is pending and its progress is
/// still `read` (compared as JSON values: `jsonb` equality ignores key
/// order and spacing, and PostgreSQL compares against the row a concurrent
/// save left); the question's deadline when it did.
pub(super) async fn save_progress_row<'c>(
    conn: impl PgExecutor<'c>,
    id: &QuestionId,
    read: &str,
    progress: &str,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE questions SET progress = $1 WHERE id = $2 AND status = $4 AND progress::jsonb = $3::jsonb \
         RETURNING expires_at",
    )
    .bind(progress)
    .bind(id.as_str())
    .bind(read)
    .bind(QuestionStatus::Pending.as_str())
    .fetch_optional(conn)
    .await
}

#[cfg(test)]
pub(super) mod tests {
    use askgate_core::QuestionId;
    use askgate_testkit::postgres::Schema;
    use sqlx::{Connection as _, PgConnection};

    use super::{Resolutions, ended_rows, newest_pending_in, read_rows, resolve_row, resolve_rows, save_progress_row};
    use crate::postgres::PgStore;
    use crate::row::QuestionRow;
    use crate::{QuestionStatus, Resolution};

    /// Scans of `questions` in this transaction: sequential ones under
    /// `"(table)"`, then each index's, by name.
    async fn scans(conn: &mut PgConnection) -> Vec<(String, i64)> {
        sqlx::query_as(
            "SELECT '(table)', pg_stat_get_xact_numscans('questions'::regclass) \
             UNION ALL \
             SELECT c.relname::text, pg_stat_get_xact_numscans(i.indexrelid) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = 'questions'::regclass ORDER BY 1",
        )
        .fetch_all(conn)
        .await
        .unwrap()
    }

    pub(in crate::postgres) fn id(text: &str) -> QuestionId {
        QuestionId::parse(text).unwrap()
    }

    /// A resolution with `status` at time 2, and nothing else.
    pub(in crate::postgres) fn resolution(status: QuestionStatus) -> Resolution {
        Resolution {
            status,
            at: 2,
            by: None,
            answers: None,
            reason: None,
            via: None,
            surface: None,
        }
    }

    /// Every statement of this module, planned on a table of a few rows as
    /// PostgreSQL plans a statement it keeps (generic, without the
    /// parameters' values), reads `questions` through its primary key and
    /// nothing else, so the plan stays right however the table grows, and
    /// each still does what it says. (With the statements this replaced,
    /// the batched read scanned the table and the resolutions a partial
    /// index of pending questions.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plans_kept_from_a_small_table_find_each_question_by_its_primary_key() {
        let schema = Schema::create().await;
        // Opening the store migrates the schema.
        PgStore::connect_with(schema.options(), 1).await.unwrap().close().await;
        let mut conn = PgConnection::connect_with(&schema.options()).await.unwrap();
        sqlx::query(
            "INSERT INTO questions (id, status, agent, recipient, locale, request, created_at, expires_at) \
             SELECT 'q' || n, 'pending', 'agent', 'person', 'en', '{}', 1, 1000 FROM generate_series(0, 5) AS n",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO messages (channel, conversation, message, question_id) \
             SELECT 'telegram', 'chat', 'm' || n, 'q' || n FROM generate_series(0, 5) AS n",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        sqlx::query("SET plan_cache_mode = force_generic_plan")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
        let before = scans(&mut conn).await;

        let ids: Vec<QuestionId> = (0..6).map(|n| id(&format!("q{n}"))).collect();
        let raw: Vec<&str> = ids.iter().map(QuestionId::as_str).collect();
        assert_eq!(read_rows(&mut conn, &raw).await.unwrap().len(), 6);
        assert!(ended_rows(&mut conn, &raw).await.unwrap().is_empty());
        let newest = newest_pending_in(&mut conn, "telegram", "chat").await.unwrap();
        assert_eq!(
            newest.as_deref(),
            Some("q5"),
            "the last asked (created_at ties broken by seq)"
        );
        let saved = save_progress_row(&mut conn, &ids[0], "{}", r#"{"notify":["Team"]}"#).await;
        assert_eq!(saved.unwrap(), Some(1000));
        let answered = resolution(QuestionStatus::Answered);
        assert!(resolve_row(&mut conn, &ids[0], &answered).await.unwrap().is_some());
        assert!(
            resolve_row(&mut conn, &ids[0], &answered).await.unwrap().is_none(),
            "ended already"
        );
        // Out of order, one ended already and one that does not exist.
        let missing = id("q9");
        let mut together = Resolutions::with_capacity(5);
        for id in [&ids[3], &ids[1], &ids[0], &missing, &ids[2]] {
            together.push(id, &resolution(QuestionStatus::Skipped)).unwrap();
        }
        let resolved = resolve_rows(&mut conn, &together).await.unwrap();
        let mut resolved: Vec<&str> = resolved.iter().map(QuestionRow::raw_id).collect();
        resolved.sort_unstable();
        assert_eq!(resolved, ["q1", "q2", "q3"], "all but the ended and the missing one");
        assert_eq!(ended_rows(&mut conn, &raw).await.unwrap().len(), 4);

        let after = scans(&mut conn).await;
        let used: Vec<(String, i64)> = after
            .iter()
            .zip(&before)
            .map(|((name, now), (_, then))| (name.clone(), now - then))
            .filter(|(_, count)| *count > 0)
            .collect();
        assert_eq!(
            used.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(),
            ["questions_pkey"],
            "questions read other than by its primary key: {used:?}"
        );
        sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
    }
}
