-- Resolutions made together (src/postgres/batch.rs): each question found
-- by its primary key, whatever the table's size when the plan was made.
--
-- The statement this replaces joined the batch's ids to `questions` and
-- compared `status = 'pending'`. sqlx prepares a statement once per
-- connection and PostgreSQL keeps a generic plan after five executions:
-- the plan it kept scanned a partial index of pending questions whole (the
-- literal matched the index's predicate), an index that keeps an entry for
-- every question resolved since the last VACUUM: 2-3 ms a batch at 25,000
-- rows in the replicas benchmark; and a join to the ids, planned on a
-- table of a few pages, can be a scan of the whole table. Here each
-- question is one `UPDATE … WHERE id = …`, its status compared to a
-- variable (a plan can then prove no partial index's predicate), in id
-- order so that two batches lock their rows alike
-- (src/postgres/by_id.rs). Older releases do not call it: nothing else
-- changes.
CREATE FUNCTION askgate_resolve_all(ids TEXT[], statuses TEXT[], resolutions TEXT[], ats BIGINT[],
                                    by_person BOOLEAN[]) RETURNS SETOF questions
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    still CONSTANT TEXT := 'pending';
    i BIGINT;
    resolved questions;
BEGIN
    FOR i IN SELECT t.n FROM unnest(ids) WITH ORDINALITY AS t (id, n) ORDER BY t.id COLLATE "C" LOOP
        UPDATE questions SET status = statuses[i], resolution = resolutions[i], resolved_at = ats[i]
            WHERE id = ids[i] AND status = still AND (NOT by_person[i] OR expires_at > ats[i])
            RETURNING * INTO resolved;
        IF FOUND THEN
            RETURN NEXT resolved;
        END IF;
    END LOOP;
END
$$;
