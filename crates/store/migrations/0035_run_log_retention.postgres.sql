-- Run log retention: a company may keep its runs' logs for a number of days
-- (NULL: kept for good, as before); the sweep that deletes an older log
-- records when on its run, so the run says its log was removed rather than
-- empty. Existing rows keep everything they had. Times are timestamptz here
-- like every other `*_at` column (migration 24).
ALTER TABLE companies ADD COLUMN run_log_retention_days BIGINT;
ALTER TABLE heartbeat_runs ADD COLUMN log_removed_at TIMESTAMPTZ;
