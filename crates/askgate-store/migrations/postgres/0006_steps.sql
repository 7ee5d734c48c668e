-- A question's plan: its reminders and escalations, and the failure notice
-- taken when a surface fails (askgate-store's `Step`: {kind, at, heldFrom,
-- to, done}), as JSON (TEXT, like the other JSON columns). A step is marked
-- `done` in the write that takes it (the question's row held `FOR UPDATE`),
-- before anything is sent for it, so only one replica sends it, once. An
-- escalated surface joins `surfaces` in the same write, which notifies the
-- other replicas. `next_step_at` is when the next step still waiting is due
-- (NULL: none), found by every replica's sweep through an index. The same
-- as migrations/sqlite/0007.
ALTER TABLE questions ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN next_step_at BIGINT;
CREATE INDEX questions_next_step ON questions (next_step_at)
    WHERE status = 'pending' AND next_step_at IS NOT NULL;
