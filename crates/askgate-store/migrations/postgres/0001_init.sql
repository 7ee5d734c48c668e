-- askgate's shared store on PostgreSQL: the same tables as the embedded
-- SQLite store (migrations/sqlite, 0001 to 0004, as they stand after the
-- last of them), in one migration, for several replicas sharing one database.
--
-- Timestamps are milliseconds since the Unix epoch, UTC, as the engine's
-- clock produced them (BIGINT). JSON columns are TEXT holding askgate-core's
-- serde form, exactly as written: the order of an answer's keys is the
-- order the agent gets them in, which jsonb would not keep. Question ids
-- compare byte by byte (COLLATE "C"): paging by id must not depend on the
-- database's locale.

CREATE TABLE questions (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    -- The insert order, to break ties in created_at (SQLite's rowid).
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY,
    -- QuestionStatus::as_str. No CHECK: a status added later must not need a
    -- table rewrite, and the code refuses a name it does not know.
    status       TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    session_id   TEXT,
    run_id       TEXT,
    recipient    TEXT    NOT NULL,
    channel      TEXT    NOT NULL,
    conversation TEXT    NOT NULL,
    locale       TEXT    NOT NULL,
    -- JSON: AskRequest (normalized).
    request      TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    -- JSON: Delivery, once delivered.
    delivery     TEXT,
    -- JSON: Answers so far.
    progress     TEXT    NOT NULL DEFAULT '{}',
    -- JSON: Resolution, once ended.
    resolution   TEXT,
    -- Resolution.at, as a column for queries over ended questions.
    resolved_at  BIGINT,
    -- Whether an ended question's messages were edited into its summary.
    finished     BOOLEAN NOT NULL DEFAULT FALSE
);

-- One pending question per agent session (spec §2), enforced by the
-- database so that two replicas asking at once cannot both pass a check.
CREATE UNIQUE INDEX questions_one_pending_per_session
    ON questions (agent, session_id)
    WHERE status = 'pending' AND session_id IS NOT NULL;

-- Timers (start-up pages pending deadlines in this order).
CREATE INDEX questions_pending_expires ON questions (expires_at, id) WHERE status = 'pending';
-- Run aborts.
CREATE INDEX questions_agent_run_pending ON questions (agent, run_id) WHERE status = 'pending';
-- The newest pending question in a direct conversation.
CREATE INDEX questions_conversation_pending
    ON questions (channel, conversation, created_at, seq) WHERE status = 'pending';
-- Ended questions whose messages still show their buttons.
CREATE INDEX questions_unfinished ON questions (created_at, seq) WHERE NOT finished AND status <> 'pending';
-- The web page's lists: a recipient's pending questions as asked, and the
-- latest to end.
CREATE INDEX questions_pending_recipient_created
    ON questions (recipient, created_at, seq) WHERE status = 'pending';
CREATE INDEX questions_ended_recipient
    ON questions (recipient, resolved_at, seq) WHERE status <> 'pending';
-- Retention: what ended before a time, oldest first.
CREATE INDEX questions_ended_before ON questions (resolved_at) WHERE status <> 'pending';

-- Platform messages that show a question, so that a reply to one of them
-- (or a tap on its buttons) finds the question.
CREATE TABLE messages (
    channel      TEXT NOT NULL,
    conversation TEXT NOT NULL,
    message      TEXT NOT NULL,
    question_id  TEXT COLLATE "C" NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
    PRIMARY KEY (channel, conversation, message)
);
-- PostgreSQL does not index a foreign key by itself: without these, every
-- question pruned would scan both tables for its rows.
CREATE INDEX messages_question ON messages (question_id);

-- Inbound platform events already handled. `received_at` is the database's
-- clock, kept only so that old rows can be pruned.
CREATE TABLE inbound_events (
    channel     TEXT   NOT NULL,
    event_id    TEXT   NOT NULL,
    received_at BIGINT NOT NULL DEFAULT (floor(extract(epoch FROM clock_timestamp()) * 1000))::BIGINT,
    PRIMARY KEY (channel, event_id)
);
CREATE INDEX inbound_events_received ON inbound_events (received_at);

-- Small named values askgate keeps: generated secrets, a polling offset.
CREATE TABLE settings (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);

-- Agents' idempotency keys (see migrations/sqlite/0003).
CREATE TABLE idempotency_keys (
    agent       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    question_id TEXT COLLATE "C" NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
    PRIMARY KEY (agent, key)
);
CREATE INDEX idempotency_keys_question ON idempotency_keys (question_id);

-- How many questions each agent and each recipient has pending, kept by the
-- trigger below in the same transaction as the change that moves it (see
-- migrations/sqlite/0004). A row is also the lock that makes a cap exact
-- across replicas: an insert under a cap locks its row first.
CREATE TABLE pending_counts (
    scope   TEXT   NOT NULL, -- 'agent' or 'recipient'
    who     TEXT   NOT NULL,
    pending BIGINT NOT NULL,
    PRIMARY KEY (scope, who)
);

-- Always the agent's row first, then the recipient's, as an insert under a
-- cap locks them: two transactions never wait for each other in a circle.
CREATE FUNCTION pending_counts_add(agent_name TEXT, recipient_name TEXT, delta BIGINT) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pending_counts (scope, who, pending) VALUES ('agent', agent_name, delta)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending_counts.pending + delta;
    INSERT INTO pending_counts (scope, who, pending) VALUES ('recipient', recipient_name, delta)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending_counts.pending + delta;
$$;

CREATE FUNCTION questions_pending_counts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status = 'pending' THEN
            PERFORM pending_counts_add(NEW.agent, NEW.recipient, 1);
        END IF;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.status = 'pending' AND NEW.status <> 'pending' THEN
            PERFORM pending_counts_add(OLD.agent, OLD.recipient, -1);
        ELSIF OLD.status <> 'pending' AND NEW.status = 'pending' THEN
            PERFORM pending_counts_add(NEW.agent, NEW.recipient, 1);
        END IF;
    ELSIF OLD.status = 'pending' THEN -- DELETE
        PERFORM pending_counts_add(OLD.agent, OLD.recipient, -1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER questions_pending_counts AFTER INSERT OR UPDATE OF status OR DELETE ON questions
    FOR EACH ROW EXECUTE FUNCTION questions_pending_counts();
