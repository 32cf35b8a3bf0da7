-- Issue 40: a routine's description kept as the original keeps it, a
-- document (key `description`, markdown) with a revision for each change of
-- the text, written with the routine's revisions. Existing routines get
-- their document at revision 1 from the description they have.
CREATE TABLE routine_documents (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    routine_id TEXT NOT NULL REFERENCES routines (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    body TEXT NOT NULL,
    latest_revision_id TEXT,
    latest_revision_number BIGINT NOT NULL,
    created_by_agent_id TEXT,
    created_by_user_id TEXT,
    updated_by_agent_id TEXT,
    updated_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX routine_documents_routine_key_uq ON routine_documents (routine_id, key);
CREATE TABLE routine_document_revisions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    document_id TEXT NOT NULL REFERENCES routine_documents (id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    body TEXT NOT NULL,
    change_summary TEXT,
    created_by_agent_id TEXT,
    created_by_user_id TEXT,
    created_by_run_id TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX routine_document_revisions_number_uq
    ON routine_document_revisions (document_id, revision_number);
INSERT INTO routine_documents (id, company_id, routine_id, key, title, format, body,
    latest_revision_id, latest_revision_number, created_by_agent_id, created_by_user_id,
    updated_by_agent_id, updated_by_user_id, created_at, updated_at)
SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
        || substr(lower(hex(randomblob(2))), 2) || '-'
        || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2)
        || '-' || lower(hex(randomblob(6))), r.company_id, r.id, 'description', 'Routine description', 'markdown',
    COALESCE(r.description, ''), NULL, 1, r.created_by_agent_id, r.created_by_user_id,
    r.updated_by_agent_id, r.updated_by_user_id, r.created_at, r.updated_at
FROM routines r;
INSERT INTO routine_document_revisions (id, company_id, document_id, revision_number, title,
    format, body, change_summary, created_by_agent_id, created_by_user_id, created_by_run_id,
    created_at)
SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
        || substr(lower(hex(randomblob(2))), 2) || '-'
        || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2)
        || '-' || lower(hex(randomblob(6))), d.company_id, d.id, 1, d.title, d.format, d.body, NULL,
    d.created_by_agent_id, d.created_by_user_id, NULL, d.created_at
FROM routine_documents d;
UPDATE routine_documents SET latest_revision_id = (SELECT v.id FROM routine_document_revisions v
    WHERE v.document_id = routine_documents.id AND v.revision_number = 1);
