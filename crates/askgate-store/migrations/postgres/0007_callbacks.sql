-- Result callbacks: the same as migrations/sqlite/0008 (read it there).
-- Every replica's sweep takes the due ones `FOR UPDATE SKIP LOCKED` and
-- leases them (`leased_until`), so one replica sends each attempt.
CREATE TABLE callbacks (
    question_id  TEXT COLLATE "C" NOT NULL PRIMARY KEY
                 REFERENCES questions (id) ON DELETE CASCADE,
    url          TEXT   NOT NULL,
    window_ms    BIGINT NOT NULL,
    due_at       BIGINT,
    until        BIGINT,
    leased_until BIGINT,
    attempts     TEXT   NOT NULL DEFAULT '[]'
);
CREATE INDEX callbacks_due ON callbacks (due_at) WHERE due_at IS NOT NULL;

-- Arms the callback in the statement that ends the question (any write).
CREATE FUNCTION askgate_callbacks_armed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE callbacks SET due_at = NEW.resolved_at, until = NEW.resolved_at + window_ms
        WHERE question_id = NEW.id AND until IS NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER callbacks_armed AFTER UPDATE OF status ON questions
    FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending')
    EXECUTE FUNCTION askgate_callbacks_armed();
