-- A run's last output (upstream's lastOutput* fields): when its process last
-- wrote, the chunk's seq and stream, and the log's size then. Kept while the
-- run goes (throttled) so a silent run shows how long it has been silent.
ALTER TABLE heartbeat_runs ADD COLUMN last_output_at TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_seq BIGINT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_stream TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_bytes BIGINT;
-- A finished run's verdict on whether it moved its work forward (upstream's
-- livenessState / livenessReason / lastUsefulActionAt), and the index that
-- finds what a run did from the activity log without a scan.
ALTER TABLE heartbeat_runs ADD COLUMN liveness_state TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN liveness_reason TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN last_useful_action_at TEXT;
CREATE INDEX activity_run ON activity_log (run_id, created_at) WHERE run_id IS NOT NULL;
