-- Burn-ins (agent_proto/burn_in/figures.h, inventory/burn_in_rules.h): the agent's burn_in
-- task measures a node's GPUs and links before a rental's handover and after its release;
-- the server judges the figures and keeps them with the verdict. A tenant's `doctor` runs the
-- non-destructive part on a live rental's node. The fleet's medians per
-- model come from each node's latest passed burn-in.
ALTER TABLE agent_tasks DROP CONSTRAINT agent_tasks_kind_check;
ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_kind_check
  CHECK (kind IN ('provision', 'install_access', 'revoke_access', 'wipe', 'burn_in', 'doctor'))
  NOT VALID;
-- What a doctor task found (its figures), read back by the request that is waiting for it.
ALTER TABLE agent_tasks ADD COLUMN result jsonb;

CREATE TABLE burn_ins (
  task_id text PRIMARY KEY REFERENCES agent_tasks (id),
  node_id text NOT NULL REFERENCES nodes (id),
  rental_id text REFERENCES rentals (id) ON DELETE SET NULL,
  phase text NOT NULL CHECK (phase IN ('handover', 'release', 'enrolment', 'admin')),
  gpu_model text NOT NULL REFERENCES gpu_models (name),
  passed boolean NOT NULL,
  figures jsonb NOT NULL CHECK (jsonb_typeof(figures) = 'object'),
  findings jsonb NOT NULL CHECK (jsonb_typeof(findings) = 'array'),
  -- The node's latest telemetry when the figures were judged (its ECC counters are part of
  -- the handover report); NULL when the node had reported none.
  telemetry jsonb,
  finished_at timestamptz NOT NULL
);
-- The fleet's medians: each node's latest burn-in of a model, when it passed.
CREATE INDEX burn_ins_model_idx ON burn_ins (gpu_model, node_id, finished_at DESC);
CREATE INDEX burn_ins_rental_idx ON burn_ins (rental_id, finished_at) WHERE rental_id IS NOT NULL;
CREATE INDEX burn_ins_node_idx ON burn_ins (node_id, finished_at DESC);

-- Every replica's copy of the models' measured figures (the offers') forgets them when a
-- burn-in is recorded.
CREATE FUNCTION notify_burn_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_burn_ins', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER burn_ins_recorded AFTER INSERT ON burn_ins
  FOR EACH STATEMENT EXECUTE FUNCTION notify_burn_ins();

-- The tenant's own telemetry, kept with the rental for its life and 30 days after (the node's
-- history keeps only agent_telemetry_retention): each sample of the node while the rental
-- runs on it, copied by the lifecycle's job (scheduler/rental_telemetry.h). The arrays are the
-- node's, whole: the reader picks the rental's GPUs.
CREATE TABLE rental_telemetry_samples (
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  gpu_index smallint[] NOT NULL,
  temperature_c real[] NOT NULL,
  power_w real[] NOT NULL,
  utilization_pct smallint[] NOT NULL,
  memory_used_mib integer[] NOT NULL,
  throttle_reasons jsonb,
  PRIMARY KEY (rental_id, at)
);

-- Each sample's active clock throttle reasons, by GPU index ({"0": ["hw_thermal_slowdown"]}),
-- taken from the sample's telemetry as it is written; NULL in rows written before.
ALTER TABLE node_telemetry_samples ADD COLUMN throttle_reasons jsonb;
