-- askgate's embedded store: questions, the platform messages that show them,
-- inbound events already seen, and a few named settings.
--
-- Tables are STRICT so that a column always holds the type the code decodes
-- (a value of another type is refused on write instead of surfacing later as
-- a decoding failure). Timestamps are milliseconds since the Unix epoch, UTC,
-- as the engine's clock produced them. JSON columns hold askgate-core's serde
-- form of the value named in the comment.

CREATE TABLE questions (
    id           TEXT    NOT NULL PRIMARY KEY,
    -- QuestionStatus::as_str: pending, answered, expired, skipped, cancelled,
    -- delivery_failed. No CHECK: a status added later must not need a table
    -- rebuild, and the code refuses a name it does not know when reading.
    status       TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    session_id   TEXT,
    run_id       TEXT,
    recipient    TEXT    NOT NULL,
    channel      TEXT    NOT NULL,
    conversation TEXT    NOT NULL,
    -- Locale::as_str: en or zh-CN.
    locale       TEXT    NOT NULL,
    -- JSON: AskRequest (normalized).
    request      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    -- JSON: Delivery, once delivered.
    delivery     TEXT,
    -- JSON: Answers so far (an object by question id).
    progress     TEXT    NOT NULL DEFAULT '{}',
    -- JSON: Resolution, once ended.
    resolution   TEXT,
    -- Resolution.at, as a column for queries over ended questions.
    resolved_at  INTEGER
) STRICT;

-- One pending question per agent session (spec §2), enforced by the
-- database itself so that two concurrent asks cannot both pass a check.
CREATE UNIQUE INDEX questions_one_pending_per_session
    ON questions (agent, session_id)
    WHERE status = 'pending' AND session_id IS NOT NULL;

-- Timers on start and expiry sweeps.
CREATE INDEX questions_status_expires ON questions (status, expires_at);
-- A recipient's questions, newest or oldest first.
CREATE INDEX questions_recipient_created ON questions (recipient, created_at);
-- Run aborts.
CREATE INDEX questions_agent_run_status ON questions (agent, run_id, status);
-- The newest pending question in a direct conversation.
CREATE INDEX questions_conversation_pending
    ON questions (channel, conversation, status, created_at);

-- Platform messages that show a question, so that a reply to one of them (or
-- a tap on its buttons) finds the question. `channel` is the question's.
CREATE TABLE messages (
    channel      TEXT NOT NULL,
    conversation TEXT NOT NULL,
    message      TEXT NOT NULL,
    question_id  TEXT NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
    PRIMARY KEY (channel, conversation, message)
) STRICT;

CREATE INDEX messages_question ON messages (question_id);

-- Inbound platform events already handled, so that a redelivery is known.
-- `received_at` is the database's clock, kept only so that old rows can be
-- pruned later; nothing reads it as question data.
CREATE TABLE inbound_events (
    channel     TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    received_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)),
    PRIMARY KEY (channel, event_id)
) STRICT;

-- Small named values askgate keeps: generated secrets, a polling offset.
CREATE TABLE settings (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
