-- A routine's activity gate (upstream's activityGatePolicy and
-- activityGateScope): existing routines keep firing on every tick.
ALTER TABLE routines ADD COLUMN activity_gate_policy TEXT NOT NULL DEFAULT 'always';
ALTER TABLE routines ADD COLUMN activity_gate_scope TEXT NOT NULL DEFAULT 'company';
