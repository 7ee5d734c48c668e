-- A question's plan: its reminders and escalations, and the failure notice
-- taken when a surface fails (askgate-store's `Step`: {kind, at, heldFrom,
-- to, done}), as JSON. A step is marked `done` in the write that takes it,
-- before anything is sent for it, so it is sent at most once. An escalated
-- surface joins `surfaces` in the same write. `next_step_at` is when the
-- next step still waiting is due (NULL: none), so that the sweep finds the
-- questions with a step due through an index. Older askgate binaries read
-- and write around both columns.
ALTER TABLE questions ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN next_step_at INTEGER;
CREATE INDEX questions_next_step ON questions (next_step_at)
    WHERE status = 'pending' AND next_step_at IS NOT NULL;
