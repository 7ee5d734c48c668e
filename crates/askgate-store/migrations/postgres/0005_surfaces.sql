-- A question is shown on every surface of its recipient: `surfaces` holds
-- them, in the recipient's order, as JSON (TEXT, like the other JSON
-- columns): a list of askgate-store's `Surface` ({channel, kind,
-- conversation, state, delivery, reason, finished}). A write to one
-- surface locks the question's row (`FOR UPDATE`), reads and rewrites the
-- list, so two surfaces' writes never lose each other's. It replaces the
-- question's one channel, conversation and delivery; what was stored
-- before becomes one surface whose kind was never recorded (empty).
-- `finished` now says that no surface has messages left to edit. The same
-- as migrations/sqlite/0006.
ALTER TABLE questions ADD COLUMN surfaces TEXT NOT NULL DEFAULT '[]';

UPDATE questions SET surfaces = json_build_array(json_build_object(
    'channel', channel,
    'kind', '',
    'conversation', conversation,
    'state', CASE
        WHEN delivery IS NOT NULL AND coalesce((delivery::jsonb ->> 'complete')::boolean, TRUE) THEN 'delivered'
        WHEN status = 'delivery_failed' THEN 'failed'
        ELSE 'sending'
    END,
    'delivery', delivery::json,
    'finished', finished
))::text;

-- Other replicas hear of a change to a surface as they heard of one to
-- the delivery.
DROP TRIGGER questions_notify_change ON questions;
CREATE TRIGGER questions_notify_change AFTER INSERT OR UPDATE OF status, progress, surfaces ON questions
    FOR EACH ROW EXECUTE FUNCTION questions_notify_change();

-- A typed message finds the newest pending question with a message in its
-- conversation through the message index (`messages`).
DROP INDEX questions_conversation_pending;
ALTER TABLE questions DROP COLUMN delivery;
ALTER TABLE questions DROP COLUMN conversation;
ALTER TABLE questions DROP COLUMN channel;
