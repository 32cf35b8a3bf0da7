-- A run's last output (upstream's lastOutput* fields): when its process last
-- wrote, the chunk's seq and stream, and the log's size then. Kept while the
-- run goes (throttled) so a silent run shows how long it has been silent.
ALTER TABLE heartbeat_runs ADD COLUMN last_output_at TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_seq BIGINT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_stream TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN last_output_bytes BIGINT;
