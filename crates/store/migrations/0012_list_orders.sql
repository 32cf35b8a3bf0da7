-- The task list's orders besides newest/oldest (which walk the company's
-- number index): recently updated, and priority highest first. Each index
-- ends in the issue number, the tie-breaker of the order and its cursor, so
-- a page is an index walk at any size. The priority expression is the one
-- the list query orders by (issue_list.rs PRIORITY_RANK), exactly.
CREATE INDEX issues_company_updated_number ON issues (company_id, updated_at, issue_number);
CREATE INDEX issues_company_priority_number ON issues (company_id, (CASE priority WHEN 'critical' THEN 3 WHEN 'high' THEN 2 WHEN 'medium' THEN 1 ELSE 0 END), issue_number);
