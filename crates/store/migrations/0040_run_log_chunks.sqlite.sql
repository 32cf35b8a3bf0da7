-- Run logs in the database (issue 38): used with Postgres, where several
-- instances share one database; on SQLite (one instance) run logs stay
-- files under the data dir and these tables stay empty. They exist so both
-- engines have one schema; without foreign keys, as nothing writes them here.
CREATE TABLE run_log_chunks (
    run_id TEXT NOT NULL,
    start_offset BIGINT NOT NULL,
    end_offset BIGINT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, start_offset)
);

CREATE TABLE run_log_cuts (
    run_id TEXT PRIMARY KEY,
    head_bytes BIGINT NOT NULL,
    tail_start BIGINT NOT NULL,
    max_bytes BIGINT NOT NULL,
    marker TEXT
);
