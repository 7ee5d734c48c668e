-- Leases (`Store::try_lease`): which process holds something only one may
-- hold at a time (a platform connection), until when (milliseconds since the
-- epoch, the holder's clock). A lease past its `until` is free to take.
CREATE TABLE leases (
    name  TEXT    NOT NULL PRIMARY KEY,
    owner TEXT    NOT NULL,
    until INTEGER NOT NULL
) STRICT;
