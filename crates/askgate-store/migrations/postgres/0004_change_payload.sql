-- The change notification also carries the question's status and deadline
-- (`<application name> <id> <status> <expires_at>`): a replica keeps its
-- timers and ends its waits' bookkeeping from them, and reads the question
-- only when someone there waits on it or watches.
CREATE OR REPLACE FUNCTION questions_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(
        'askgate:' || current_schema(),
        current_setting('application_name') || ' ' || NEW.id || ' ' || NEW.status || ' ' || NEW.expires_at
    );
    RETURN NULL;
END
$$;
