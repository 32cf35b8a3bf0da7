-- A label's tasks by number: a page of one label's tasks, newest first, is
-- read from this index alone (the next `limit` numbers below the cursor),
-- where a walk of the company's tasks probed each one for the label (a page
-- of 500 among a million tasks, one in nineteen labelled: ~70 ms).
-- Task numbers never change, so the copy cannot go stale; a row written
-- without it (a bulk import) gets it from its task.
ALTER TABLE issue_labels ADD COLUMN task_number INTEGER;

UPDATE issue_labels SET task_number = (SELECT issue_number FROM issues WHERE issues.id = issue_labels.issue_id);

CREATE INDEX issue_labels_label_number ON issue_labels (label_id, task_number);
DROP INDEX issue_labels_label;

CREATE TRIGGER issue_labels_number AFTER INSERT ON issue_labels WHEN new.task_number IS NULL BEGIN
    UPDATE issue_labels SET task_number = (SELECT issue_number FROM issues WHERE id = new.issue_id)
    WHERE issue_id = new.issue_id AND label_id = new.label_id;
END;
