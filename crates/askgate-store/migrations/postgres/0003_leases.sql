-- Leases (`Store::try_lease`): which replica holds something only one may
-- hold at a time (a platform connection: Telegram long polling, a Discord
-- gateway, Slack Socket Mode), until when (milliseconds since the epoch, the
-- holder's clock). A lease past its `until` is free to take.
CREATE TABLE leases (
    name  TEXT   NOT NULL PRIMARY KEY,
    owner TEXT   NOT NULL,
    until BIGINT NOT NULL
);
