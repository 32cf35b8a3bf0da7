-- One queued run per (agent, task): a wake for the same agent and task folds
-- into the run already waiting, a wake for another task gets a run of its
-- own. A run with no task is keyed by ''.
--
-- A database written by an older build can already hold several queued runs
-- of one agent and task (concurrent wakes on Postgres). They are folded into
-- the oldest: its wake requests point to it as `coalesced`, its
-- coalesced_count grows, and the later runs are kept as `cancelled` with
-- error_code `coalesced` and a reason that says so. Nothing is deleted.

UPDATE agent_wakeup_requests
SET status = 'coalesced',
    run_id = (
        SELECT MIN(k.id) FROM heartbeat_runs k JOIN heartbeat_runs d
            ON k.agent_id = d.agent_id AND COALESCE(k.issue_id, '') = COALESCE(d.issue_id, '')
        WHERE d.id = agent_wakeup_requests.run_id AND k.status = 'queued'
    )
WHERE run_id IN (
    SELECT d.id FROM heartbeat_runs d
    WHERE d.status = 'queued' AND EXISTS (
        SELECT 1 FROM heartbeat_runs k
        WHERE k.status = 'queued' AND k.agent_id = d.agent_id
          AND COALESCE(k.issue_id, '') = COALESCE(d.issue_id, '') AND k.id < d.id
    )
);

UPDATE heartbeat_runs
SET coalesced_count = coalesced_count + (
    SELECT COUNT(*) FROM heartbeat_runs d
    WHERE d.status = 'queued' AND d.agent_id = heartbeat_runs.agent_id
      AND COALESCE(d.issue_id, '') = COALESCE(heartbeat_runs.issue_id, '')
      AND d.id > heartbeat_runs.id
)
WHERE status = 'queued' AND NOT EXISTS (
    SELECT 1 FROM heartbeat_runs k
    WHERE k.status = 'queued' AND k.agent_id = heartbeat_runs.agent_id
      AND COALESCE(k.issue_id, '') = COALESCE(heartbeat_runs.issue_id, '')
      AND k.id < heartbeat_runs.id
);

UPDATE heartbeat_runs
SET status = 'cancelled',
    error_code = 'coalesced',
    error = 'Folded into the older queued run of the same agent and task on upgrade (one queued run per agent and task)',
    finished_at = updated_at
WHERE status = 'queued' AND EXISTS (
    SELECT 1 FROM heartbeat_runs k
    WHERE k.status = 'queued' AND k.agent_id = heartbeat_runs.agent_id
      AND COALESCE(k.issue_id, '') = COALESCE(heartbeat_runs.issue_id, '')
      AND k.id < heartbeat_runs.id
);

CREATE UNIQUE INDEX heartbeat_runs_one_queued
    ON heartbeat_runs (agent_id, COALESCE(issue_id, '')) WHERE status = 'queued';
