-- Writes that no longer take turns: pending counts in stripes, the cap
-- check that reads them (src/postgres/insert.rs), and change notifications
-- sent after the commit instead of from a trigger (src/postgres/notify.rs).
--
-- Until now each agent and each recipient had one row in `pending_counts`,
-- which every insert and every resolution of theirs updated: the row stayed
-- locked until the transaction's commit was on disk, so all writes for one
-- recipient (or agent) took turns, one disk flush each, whatever the
-- number of replicas or connections. Now each scope's count is the sum of
-- up to 32 rows (`stripe`: the writing connection's backend pid modulo 32),
-- so concurrent writers rarely touch the same row; a stripe may go below
-- zero (a question counted up on one connection and down on another), the
-- sum is exact.
--
-- The caps are exact across replicas without locking a row:
-- `askgate_pending_room` takes a shared advisory lock per capped scope,
-- then reads the sums in a snapshot of its own (a VOLATILE function's
-- statements each take one, after the locks); the insert goes ahead while
-- the sum plus `max_connections` (more inserts than connections cannot be
-- under way at once) is within the cap. Near the cap it says `near`, and the
-- insert is made again in `exact` mode: exclusive locks (every shared holder
-- has committed, no new one starts) and the exact sum. Locks are always
-- taken agent first, then recipient, so two inserts never wait for each
-- other in a circle.
--
-- The trigger `questions_notify_change` goes: a NOTIFY in the writing
-- transaction makes PostgreSQL commit every notifying transaction of the
-- cluster one after the other, one disk flush each. Each store now notifies
-- after its write has committed, in a transaction that writes nothing.
--
-- An older askgate locks and upserts the one row per scope (`ON CONFLICT
-- (scope, who)`), which this primary key no longer allows, and relies on the
-- trigger to hear of other replicas' changes: this migration breaks
-- compatibility with every askgate before it.
DROP TRIGGER questions_notify_change ON questions;
DROP FUNCTION questions_notify_change();

ALTER TABLE pending_counts ADD COLUMN stripe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_counts DROP CONSTRAINT pending_counts_pkey;
ALTER TABLE pending_counts ADD PRIMARY KEY (scope, who, stripe);

-- The trigger's upserts, now on the writer's stripe, written in PL/pgSQL
-- (its statements' plans are kept for the session; the SQL function
-- `pending_counts_add` was planned again at every call, about a third of an
-- insert's time in the database).
CREATE OR REPLACE FUNCTION questions_pending_counts() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    delta BIGINT := 0;
    agent_name TEXT;
    recipient_name TEXT;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status = 'pending' THEN
            delta := 1;
        END IF;
        agent_name := NEW.agent;
        recipient_name := NEW.recipient;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.status = 'pending' AND NEW.status <> 'pending' THEN
            delta := -1;
        ELSIF OLD.status <> 'pending' AND NEW.status = 'pending' THEN
            delta := 1;
        END IF;
        agent_name := NEW.agent;
        recipient_name := NEW.recipient;
    ELSIF OLD.status = 'pending' THEN -- DELETE
        delta := -1;
        agent_name := OLD.agent;
        recipient_name := OLD.recipient;
    END IF;
    IF delta <> 0 THEN
        -- The agent's stripe before the recipient's, always.
        INSERT INTO pending_counts (scope, who, stripe, pending)
            VALUES ('agent', agent_name, pg_backend_pid() % 32, delta)
            ON CONFLICT (scope, who, stripe) DO UPDATE SET pending = pending_counts.pending + EXCLUDED.pending;
        INSERT INTO pending_counts (scope, who, stripe, pending)
            VALUES ('recipient', recipient_name, pg_backend_pid() % 32, delta)
            ON CONFLICT (scope, who, stripe) DO UPDATE SET pending = pending_counts.pending + EXCLUDED.pending;
    END IF;
    RETURN NULL;
END
$$;
DROP FUNCTION pending_counts_add(TEXT, TEXT, BIGINT);

-- 'ok': room for one more under both caps (a NULL limit is no cap);
-- 'near': not sure without the exact check (only when NOT exact);
-- 'agent' or 'recipient': that cap is reached (only when exact).
CREATE FUNCTION askgate_pending_room(agent_name TEXT, recipient_name TEXT, agent_limit BIGINT,
                                     recipient_limit BIGINT, exact BOOLEAN) RETURNS TEXT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    margin BIGINT := CASE WHEN exact THEN 1 ELSE current_setting('max_connections')::BIGINT END;
    counted BIGINT;
BEGIN
    IF agent_limit IS NOT NULL THEN
        IF exact THEN
            PERFORM pg_advisory_xact_lock(1, hashtext(agent_name));
        ELSE
            PERFORM pg_advisory_xact_lock_shared(1, hashtext(agent_name));
        END IF;
    END IF;
    IF recipient_limit IS NOT NULL THEN
        IF exact THEN
            PERFORM pg_advisory_xact_lock(2, hashtext(recipient_name));
        ELSE
            PERFORM pg_advisory_xact_lock_shared(2, hashtext(recipient_name));
        END IF;
    END IF;
    IF agent_limit IS NOT NULL THEN
        SELECT coalesce(sum(pending), 0) INTO counted FROM pending_counts
            WHERE scope = 'agent' AND who = agent_name;
        IF counted + margin > agent_limit THEN
            RETURN CASE WHEN exact THEN 'agent' ELSE 'near' END;
        END IF;
    END IF;
    IF recipient_limit IS NOT NULL THEN
        SELECT coalesce(sum(pending), 0) INTO counted FROM pending_counts
            WHERE scope = 'recipient' AND who = recipient_name;
        IF counted + margin > recipient_limit THEN
            RETURN CASE WHEN exact THEN 'recipient' ELSE 'near' END;
        END IF;
    END IF;
    RETURN 'ok';
END
$$;

INSERT INTO settings (key, value) VALUES ('schema.oldest_compatible', '8')
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
