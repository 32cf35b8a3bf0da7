-- A goal's page lists its tasks newest first with a count, like a project's:
-- without this index a sparse goal walked the company's tasks (0.7 s at a
-- million tasks, found by the scale bench).
CREATE INDEX issues_company_goal_number ON issues (company_id, goal_id, issue_number);
