-- Issue 40: routines as the original has them. Folders group a company's
-- routines (upstream's `folders`, nested up to four deep, a slug unique
-- among its siblings); a routine gains its folder, where it came from
-- (`origin_kind`, `origin_id`: 'manual' for every routine made here), an env
-- merged into the runs it starts (secrets by reference only) and the person
-- responsible for it. Revisions and runs record that person too, and a run
-- the fingerprint of what it dispatched (a live execution is coalesced into
-- only by a run that would have made the same task).
CREATE TABLE folders (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    parent_id TEXT REFERENCES folders (id),
    name TEXT NOT NULL,
    slug TEXT NOT NULL,
    system_key TEXT,
    color TEXT,
    position BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX folders_company_kind_parent_position_idx
    ON folders (company_id, kind, parent_id, position, name);
CREATE UNIQUE INDEX folders_company_kind_root_slug_uq
    ON folders (company_id, kind, slug) WHERE parent_id IS NULL;
CREATE UNIQUE INDEX folders_company_kind_parent_slug_uq
    ON folders (company_id, kind, parent_id, slug) WHERE parent_id IS NOT NULL;
-- No foreign key on SQLite (a column in one cannot be dropped again): a
-- folder's deletion files its routines back as unfiled itself.
ALTER TABLE routines ADD COLUMN folder_id TEXT;
ALTER TABLE routines ADD COLUMN origin_kind TEXT NOT NULL DEFAULT 'manual';
ALTER TABLE routines ADD COLUMN origin_id TEXT;
ALTER TABLE routines ADD COLUMN env TEXT;
ALTER TABLE routines ADD COLUMN responsible_user_id TEXT;
CREATE INDEX routines_company_folder_idx ON routines (company_id, folder_id);
ALTER TABLE routine_revisions ADD COLUMN responsible_user_id TEXT;
ALTER TABLE routine_runs ADD COLUMN responsible_user_id TEXT;
ALTER TABLE routine_runs ADD COLUMN dispatch_fingerprint TEXT;
CREATE INDEX routine_runs_dispatch_fingerprint_idx ON routine_runs (routine_id, dispatch_fingerprint);
-- The original's upgrade of existing rows: the routine's creator, else its
-- parent task's responsible person, else the company's default; a revision
-- its author, else the routine's. A run its task's, else the routine's.
UPDATE routines SET responsible_user_id = COALESCE(created_by_user_id,
    (SELECT i.responsible_user_id FROM issues i
     WHERE i.id = routines.parent_issue_id AND i.company_id = routines.company_id),
    (SELECT c.default_responsible_user_id FROM companies c WHERE c.id = routines.company_id))
WHERE responsible_user_id IS NULL;
UPDATE routine_revisions SET responsible_user_id = COALESCE(created_by_user_id,
    (SELECT r.responsible_user_id FROM routines r WHERE r.id = routine_revisions.routine_id),
    (SELECT c.default_responsible_user_id FROM companies c
     WHERE c.id = routine_revisions.company_id))
WHERE responsible_user_id IS NULL;
UPDATE routine_runs SET responsible_user_id = COALESCE(
    (SELECT i.responsible_user_id FROM issues i WHERE i.id = routine_runs.linked_issue_id),
    (SELECT r.responsible_user_id FROM routines r WHERE r.id = routine_runs.routine_id),
    (SELECT c.default_responsible_user_id FROM companies c WHERE c.id = routine_runs.company_id))
WHERE responsible_user_id IS NULL;
