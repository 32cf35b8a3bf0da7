-- Run logs in the database (issue 38): with several instances on one
-- Postgres, a run's output is written here as it comes, so any instance
-- reads it, live or finished. A chunk is a batch of whole NDJSON lines at
-- its byte offset in the run's whole output; a log cut for its size
-- (--run-log-max-bytes) keeps its head, a rolling tail, and one cut row
-- saying where the head ends, where the tail starts and, once the run has
-- ended, the marker line standing for the bytes left out. New tables only:
-- runs written before keep `logStore = local_file` and their files.
CREATE TABLE run_log_chunks (
    run_id UUID NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    start_offset BIGINT NOT NULL,
    end_offset BIGINT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, start_offset)
);

CREATE TABLE run_log_cuts (
    run_id UUID PRIMARY KEY REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    head_bytes BIGINT NOT NULL,
    tail_start BIGINT NOT NULL,
    max_bytes BIGINT NOT NULL,
    marker TEXT
);
