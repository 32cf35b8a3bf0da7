-- Idempotent comments (upstream's clientRequestId): a client that retries a
-- comment it is not sure was saved sends the same id and gets the first one
-- back; nobody is woken twice. Unique per task, enforced by the database so
-- two racing retries cannot both insert.
ALTER TABLE issue_comments ADD COLUMN client_request_id TEXT;
CREATE UNIQUE INDEX issue_comments_client_request ON issue_comments (issue_id, client_request_id)
    WHERE client_request_id IS NOT NULL;
