-- Tells the other replicas which question changed (`Store::changes`): a
-- notification on the schema's own channel, `askgate:<schema>` (another
-- askgate in another schema of the same database hears nothing of it),
-- carrying the writer's application name (each store has its own, so that
-- it can tell its own changes from the others') and the question's id.
-- PostgreSQL sends it when the transaction commits, never before.
CREATE FUNCTION questions_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('askgate:' || current_schema(), current_setting('application_name') || ' ' || NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER questions_notify_change AFTER INSERT OR UPDATE OF status, progress, delivery ON questions
    FOR EACH ROW EXECUTE FUNCTION questions_notify_change();
