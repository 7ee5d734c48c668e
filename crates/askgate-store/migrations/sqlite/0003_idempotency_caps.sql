-- Agents' idempotency keys: a retried request with the same key finds the
-- question its first attempt stored. `fingerprint` is the engine's digest of
-- what the key came with (recipient, request, session, run), so that a key
-- reused for another request is told apart from a retry. Keys are per agent.
CREATE TABLE idempotency_keys (
    agent       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    question_id TEXT NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
    PRIMARY KEY (agent, key)
) STRICT;

-- The caps on pending questions per agent and per recipient count these.
CREATE INDEX questions_pending_agent ON questions (agent) WHERE status = 'pending';
CREATE INDEX questions_pending_recipient ON questions (recipient) WHERE status = 'pending';
