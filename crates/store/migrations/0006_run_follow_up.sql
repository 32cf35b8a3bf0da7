-- What a run continues and who started its process.
--
-- retry_of_run_id / continuation_attempt: a run started to carry on the work
-- of a run lost to a restart (a continuation) or retried from the board
-- names that run; continuation_attempt counts consecutive continuations of
-- one task, which restart recovery bounds.
-- process_started_at / process_start_ticks: when the run's process leader
-- started (kernel start time in clock ticks since boot), so that recovery
-- signals a stored process group only if its leader is still that process
-- and not an unrelated one that reused the id.
ALTER TABLE heartbeat_runs ADD COLUMN retry_of_run_id TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN continuation_attempt BIGINT NOT NULL DEFAULT 0;
ALTER TABLE heartbeat_runs ADD COLUMN process_started_at TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN process_start_ticks BIGINT;
-- An asynchronous run handed off to a remote worker waits for its callback
-- until callback_deadline_at; after it, the run is timed out. Restart
-- recovery leaves such runs alone: no local process of theirs was lost.
ALTER TABLE heartbeat_runs ADD COLUMN callback_deadline_at TEXT;
