-- Result callbacks (askgate-store's `callbacks`): where a question's result
-- is POSTed when it ends, and each attempt so far ({attempt, status,
-- httpStatus, at} as JSON). A row is added while the question is pending;
-- the trigger below arms it (`due_at`, and `until`: the last moment an
-- attempt is made, the end plus `window_ms`) in the very statement that
-- ends the question, whichever write that is, so a question never ends
-- without its callback recorded. `due_at` NULL: not yet ended, or delivery
-- is over (delivered, or given up). `leased_until`: an attempt under way,
-- taken again by the sweep after it has passed (a process that died
-- sending it). Older askgate binaries read and write around the table.
CREATE TABLE callbacks (
    question_id  TEXT    NOT NULL PRIMARY KEY,
    url          TEXT    NOT NULL,
    window_ms    INTEGER NOT NULL,
    due_at       INTEGER,
    until        INTEGER,
    leased_until INTEGER,
    attempts     TEXT    NOT NULL DEFAULT '[]'
);
CREATE INDEX callbacks_due ON callbacks (due_at) WHERE due_at IS NOT NULL;

CREATE TRIGGER callbacks_armed AFTER UPDATE OF status ON questions
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending'
BEGIN
    UPDATE callbacks SET due_at = NEW.resolved_at, until = NEW.resolved_at + window_ms
        WHERE question_id = NEW.id AND until IS NULL;
END;

-- A question pruned takes its callback with it.
CREATE TRIGGER callbacks_pruned AFTER DELETE ON questions
BEGIN
    DELETE FROM callbacks WHERE question_id = OLD.id;
END;
