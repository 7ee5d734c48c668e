-- Batched writes (src/postgres/batch.rs), and what they need.
--
-- Nothing here changes what an older askgate reads or writes: it runs
-- against this schema as before (`schema.oldest_compatible` stays), and
-- the counts stay exact whichever askgate writes.
--
-- First, the cap check of a batch of inserts: whether every row fits
-- under its caps, counted exactly.
--
-- A batch takes the exclusive advisory lock of every capped scope it
-- writes to (agents first, then recipients, each in lock-key order, as
-- `askgate_pending_room` takes agent before recipient: two transactions
-- never wait for each other in a circle), so every insert that held a
-- shared lock has committed and none starts until the batch commits: the
-- sums are exact, and a single insert's margin (`max_connections`
-- uncommitted inserts at most) still holds, since a batch's rows are never
-- uncommitted while a single insert reads the count. Each scope's rows in
-- the batch are counted with it, against the lowest limit any of them was
-- given. FALSE when one does not fit: the batch inserts nothing and its
-- inserts are made one by one, where the caps are checked row by row.

-- A batch's capped scopes: kind 1 for an agent, 2 for a recipient (the
-- advisory lock's first key, as in `askgate_pending_room`), the scope's
-- name in `pending_counts`, and the cap each row was given.
CREATE FUNCTION askgate_capped_scopes(agents TEXT[], recipients TEXT[], agent_limits BIGINT[],
                                      recipient_limits BIGINT[])
RETURNS TABLE (kind INTEGER, scope TEXT, who TEXT, cap BIGINT)
LANGUAGE sql IMMUTABLE AS $$
    SELECT 1, 'agent', t.who, t.cap FROM unnest(agents, agent_limits) AS t (who, cap) WHERE t.cap IS NOT NULL
    UNION ALL
    SELECT 2, 'recipient', t.who, t.cap FROM unnest(recipients, recipient_limits) AS t (who, cap) WHERE t.cap IS NOT NULL
$$;

CREATE FUNCTION askgate_pending_room_all(agents TEXT[], recipients TEXT[], agent_limits BIGINT[],
                                         recipient_limits BIGINT[]) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    s RECORD;
    counted BIGINT;
BEGIN
    FOR s IN
        SELECT DISTINCT c.kind, hashtext(c.who) AS key
        FROM askgate_capped_scopes(agents, recipients, agent_limits, recipient_limits) AS c ORDER BY 1, 2
    LOOP
        PERFORM pg_advisory_xact_lock(s.kind, s.key);
    END LOOP;
    FOR s IN
        SELECT c.scope, c.who, min(c.cap) AS cap, count(*) AS added
        FROM askgate_capped_scopes(agents, recipients, agent_limits, recipient_limits) AS c GROUP BY 1, 2
    LOOP
        SELECT coalesce(sum(pending), 0) INTO counted FROM pending_counts
            WHERE pending_counts.scope = s.scope AND pending_counts.who = s.who;
        IF counted + s.added > s.cap THEN
            RETURN FALSE;
        END IF;
    END LOOP;
    RETURN TRUE;
END
$$;

-- Then the pending counts, kept once per statement for inserts and
-- deletes: a batch of 64 inserts upserted the same two stripe rows 64
-- times each (a new row version every time, in one transaction), which
-- halved the throughput of batched writes (pgbench here: 32-row inserts
-- and resolutions, 429 batches/s with the row trigger, 808 without). A
-- statement trigger reads the rows the statement inserted or deleted (its
-- transition table, `changed`) and adds each agent's and each recipient's
-- count once, agents first, each in name order (two statements never wait
-- for each other in a circle). A status change stays counted row by row
-- (`questions_pending_counts`, now for updates only): PostgreSQL gives no
-- transition table to a trigger on `UPDATE OF status`, and one on every
-- update would cost each surface and progress write.
CREATE FUNCTION questions_pending_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pending_counts (scope, who, stripe, pending)
        SELECT counted.scope, counted.who, pg_backend_pid() % 32,
               CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END
        FROM (SELECT 'agent' AS scope, agent AS who FROM changed WHERE status = 'pending'
              UNION ALL
              SELECT 'recipient', recipient FROM changed WHERE status = 'pending') AS counted
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (scope, who, stripe) DO UPDATE SET pending = pending_counts.pending + EXCLUDED.pending;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION questions_pending_counts() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    delta BIGINT := 0;
BEGIN
    IF OLD.status = 'pending' AND NEW.status <> 'pending' THEN
        delta := -1;
    ELSIF OLD.status <> 'pending' AND NEW.status = 'pending' THEN
        delta := 1;
    END IF;
    IF delta <> 0 THEN
        -- The agent's stripe before the recipient's, always.
        INSERT INTO pending_counts (scope, who, stripe, pending)
            VALUES ('agent', NEW.agent, pg_backend_pid() % 32, delta)
            ON CONFLICT (scope, who, stripe) DO UPDATE SET pending = pending_counts.pending + EXCLUDED.pending;
        INSERT INTO pending_counts (scope, who, stripe, pending)
            VALUES ('recipient', NEW.recipient, pg_backend_pid() % 32, delta)
            ON CONFLICT (scope, who, stripe) DO UPDATE SET pending = pending_counts.pending + EXCLUDED.pending;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER questions_pending_counts ON questions;
CREATE TRIGGER questions_pending_counts AFTER UPDATE OF status ON questions
    FOR EACH ROW EXECUTE FUNCTION questions_pending_counts();
CREATE TRIGGER questions_pending_counts_added AFTER INSERT ON questions
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION questions_pending_counts_changed();
CREATE TRIGGER questions_pending_counts_removed AFTER DELETE ON questions
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION questions_pending_counts_changed();
