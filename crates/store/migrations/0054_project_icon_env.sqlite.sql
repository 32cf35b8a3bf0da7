-- A project's icon (one of upstream's icon names) and env (variables merged
-- into the runs of its tasks; secrets as references). Its pause is not
-- stored: it is the project's open budget hard stop (budget_incidents).
ALTER TABLE projects ADD COLUMN icon TEXT;
ALTER TABLE projects ADD COLUMN env TEXT;
