-- statusVersion, as upstream counts it: how many times the task's status has
-- changed since it was created (0 for a new task, 1 after its first
-- checkout). A trigger keeps it, so every path that moves a status (update,
-- checkout, release, a run's end) counts alike. Tasks that exist when this
-- migration runs start at 0: their earlier changes were never counted.
ALTER TABLE issues ADD COLUMN status_version BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION issues_status_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.status_version := OLD.status_version + 1;
    RETURN NEW;
END
$$;
-- BEFORE, so the statement's own RETURNING already sees the new count.
CREATE TRIGGER issues_status_version BEFORE UPDATE OF status ON issues
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION issues_status_version_bump();
