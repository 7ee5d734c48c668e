-- A question is shown on every surface of its recipient (a Telegram chat,
-- a Slack DM, askgate's page...), each delivered, failed and edited into
-- the summary on its own. `surfaces` holds them, in the recipient's order,
-- as JSON: a list of askgate-store's `Surface` ({channel, kind,
-- conversation, state, delivery, reason, finished}). A write to one surface
-- reads and rewrites the list on the one writer thread, so two surfaces'
-- writes never lose each other's.
--
-- It replaces the question's one channel, conversation and delivery. What
-- was stored before becomes one surface; its kind was never recorded
-- (empty). `finished` now says that no surface has messages left to edit.
ALTER TABLE questions ADD COLUMN surfaces TEXT NOT NULL DEFAULT '[]';

UPDATE questions SET surfaces = json_array(json_object(
    'channel', channel,
    'kind', '',
    'conversation', conversation,
    'state', CASE
        WHEN delivery IS NOT NULL AND coalesce(json_extract(delivery, '$.complete'), 1) = 1 THEN 'delivered'
        WHEN status = 'delivery_failed' THEN 'failed'
        ELSE 'sending'
    END,
    'delivery', json(delivery),
    'finished', json(CASE WHEN finished = 1 THEN 'true' ELSE 'false' END)
));

-- A typed message finds the newest pending question with a message in its
-- conversation through the message index (`messages`), which every
-- surface's delivery fills.
DROP INDEX questions_conversation_pending;
ALTER TABLE questions DROP COLUMN delivery;
ALTER TABLE questions DROP COLUMN conversation;
ALTER TABLE questions DROP COLUMN channel;
