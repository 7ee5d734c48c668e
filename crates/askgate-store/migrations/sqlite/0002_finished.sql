-- Whether an ended question's message was edited into its summary. A
-- question that ended (say, answered) just before a crash still has its
-- buttons; on start the engine finishes every ended, delivered question
-- whose message is not finished yet.
ALTER TABLE questions ADD COLUMN finished INTEGER NOT NULL DEFAULT 0;

-- Questions that ended before this column existed count as finished.
UPDATE questions SET finished = 1 WHERE status <> 'pending';

CREATE INDEX questions_unfinished ON questions (finished, status) WHERE finished = 0;
