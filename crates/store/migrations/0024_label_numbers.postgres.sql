-- A label's tasks by number: see 0024_label_numbers.sqlite.sql.
ALTER TABLE issue_labels ADD COLUMN task_number BIGINT;

UPDATE issue_labels l SET task_number = i.issue_number FROM issues i WHERE i.id = l.issue_id;

CREATE FUNCTION issue_labels_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.task_number IS NULL THEN
        SELECT issue_number INTO NEW.task_number FROM issues WHERE id = NEW.issue_id;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER issue_labels_number BEFORE INSERT ON issue_labels
    FOR EACH ROW EXECUTE FUNCTION issue_labels_number();

ALTER TABLE issue_labels ALTER COLUMN task_number SET NOT NULL;

CREATE INDEX issue_labels_label_number ON issue_labels (label_id, task_number);
DROP INDEX issue_labels_label;
