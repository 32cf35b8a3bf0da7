-- Issue 40: an agent's config revision also snapshots who the agent is
-- (name, role, title, icon, manager, capabilities, budget, metadata), as
-- the original's revisions do. A nullable column: revisions written before
-- it read as they always did, with their config only.
ALTER TABLE agent_config_revisions ADD COLUMN identity TEXT;
