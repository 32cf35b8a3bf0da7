-- statusVersion, as upstream counts it: how many times the task's status has
-- changed since it was created (0 for a new task, 1 after its first
-- checkout). A trigger keeps it, so every path that moves a status (update,
-- checkout, release, a run's end) counts alike. Tasks that exist when this
-- migration runs start at 0: their earlier changes were never counted.
ALTER TABLE issues ADD COLUMN status_version BIGINT NOT NULL DEFAULT 0;
CREATE TRIGGER issues_status_version AFTER UPDATE OF status ON issues
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE issues SET status_version = OLD.status_version + 1 WHERE id = NEW.id;
END;
