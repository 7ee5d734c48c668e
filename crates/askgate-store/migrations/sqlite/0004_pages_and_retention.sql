-- The web page's lists at any size: its recipient's pending questions in
-- the order they were asked, and the latest to end, each one index range
-- however many of the other kind there are.
CREATE INDEX questions_pending_recipient_created
    ON questions (recipient, created_at) WHERE status = 'pending';
CREATE INDEX questions_ended_recipient
    ON questions (recipient, resolved_at) WHERE status <> 'pending';

-- What the two above replace: every index is one more B-tree each insert
-- and each resolution writes.
DROP INDEX questions_recipient_created;
DROP INDEX questions_pending_recipient;

-- Retention (`Store::prune`): what ended or arrived before a time, oldest
-- first, without reading the whole table.
CREATE INDEX questions_ended_before ON questions (resolved_at) WHERE status <> 'pending';
CREATE INDEX inbound_events_received ON inbound_events (received_at);

-- How many questions each agent and each recipient has pending, kept by the
-- triggers below in the same transaction as the change that moves it: the
-- caps (`InsertRules::max_pending_*`), the web page's count and the pending
-- gauge read one row instead of counting up to every pending question on
-- each insert (an agent with 10,000 pending made each of its inserts count
-- 10,000 index entries). A row stays at 0 once its last question ends: a
-- few rows per agent or recipient ever configured.
CREATE TABLE pending_counts (
    scope   TEXT    NOT NULL, -- 'agent' or 'recipient'
    who     TEXT    NOT NULL,
    pending INTEGER NOT NULL,
    PRIMARY KEY (scope, who)
) STRICT, WITHOUT ROWID;

INSERT INTO pending_counts (scope, who, pending)
    SELECT 'agent', agent, count(*) FROM questions WHERE status = 'pending' GROUP BY agent;
INSERT INTO pending_counts (scope, who, pending)
    SELECT 'recipient', recipient, count(*) FROM questions WHERE status = 'pending' GROUP BY recipient;

CREATE TRIGGER pending_counts_insert AFTER INSERT ON questions WHEN NEW.status = 'pending'
BEGIN
    INSERT INTO pending_counts (scope, who, pending) VALUES ('agent', NEW.agent, 1)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending + 1;
    INSERT INTO pending_counts (scope, who, pending) VALUES ('recipient', NEW.recipient, 1)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending + 1;
END;

-- A question leaves `pending` once (its first resolution); agent and
-- recipient never change. Written for either direction all the same.
CREATE TRIGGER pending_counts_end AFTER UPDATE OF status ON questions
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending'
BEGIN
    UPDATE pending_counts SET pending = pending - 1
        WHERE (scope = 'agent' AND who = OLD.agent) OR (scope = 'recipient' AND who = OLD.recipient);
END;

CREATE TRIGGER pending_counts_reopen AFTER UPDATE OF status ON questions
    WHEN OLD.status <> 'pending' AND NEW.status = 'pending'
BEGIN
    INSERT INTO pending_counts (scope, who, pending) VALUES ('agent', NEW.agent, 1)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending + 1;
    INSERT INTO pending_counts (scope, who, pending) VALUES ('recipient', NEW.recipient, 1)
        ON CONFLICT (scope, who) DO UPDATE SET pending = pending + 1;
END;

CREATE TRIGGER pending_counts_delete AFTER DELETE ON questions WHEN OLD.status = 'pending'
BEGIN
    UPDATE pending_counts SET pending = pending - 1
        WHERE (scope = 'agent' AND who = OLD.agent) OR (scope = 'recipient' AND who = OLD.recipient);
END;

-- The cap per agent counted this index; it reads its row above now.
DROP INDEX questions_pending_agent;
