-- Inbox items a person has dismissed or snoozed (upstream's inbox
-- dismissals): one row per person and item key (`run:<id>`,
-- `approval:<id>`, ...). The failed-runs inbox and its badge leave out what
-- is dismissed here; deleting the row restores the item.
CREATE TABLE inbox_dismissals (
    company_id TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    item_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    snoozed_until TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (company_id, user_id, item_key)
);
