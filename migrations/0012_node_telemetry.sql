-- What the agents report about their GPUs, kept for the admin views: the latest telemetry
-- of each node, a history of the few values people chart, and the node's health history.
--
-- Heartbeats come every 10 s but a sample is kept once a minute per node (the agent module
-- decides, `agent_telemetry_interval`): at 10,000 nodes that is ~170 rows a second written
-- in the heartbeat batches, and a day of history is ~14 million small rows, deleted after
-- `agent_telemetry_retention`. The capacity triggers (0010) watch other columns, so
-- writing telemetry announces nothing.

-- The whole telemetry of the node's GPUs from its latest sample, as the heartbeat carried it
-- (agent_proto/telemetry.h, one object per GPU).
ALTER TABLE nodes ADD COLUMN telemetry jsonb, ADD COLUMN telemetry_at timestamptz;

-- One row per node and sample; the arrays are parallel, one element per GPU in gpu_index
-- order, NULL where the GPU did not report the value.
CREATE TABLE node_telemetry_samples (
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  gpu_index smallint[] NOT NULL,
  temperature_c real[] NOT NULL,
  power_w real[] NOT NULL,
  utilization_pct smallint[] NOT NULL,
  memory_used_mib integer[] NOT NULL,
  PRIMARY KEY (node_id, at),
  CHECK (cardinality(gpu_index) <= 64
    AND cardinality(temperature_c) = cardinality(gpu_index)
    AND cardinality(power_w) = cardinality(gpu_index)
    AND cardinality(utilization_pct) = cardinality(gpu_index)
    AND cardinality(memory_used_mib) = cardinality(gpu_index))
);
-- For the retention's delete.
CREATE INDEX node_telemetry_samples_at ON node_telemetry_samples (at);

-- The node's health history: every XID event an agent reported (with the health rules'
-- severity, `info` included) and every change of a node's or a GPU's health, with why.
-- Appended only.
CREATE TABLE health_events (
  id bigserial PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  gpu_index integer CHECK (gpu_index >= 0),  -- NULL: the node as a whole
  kind text NOT NULL CHECK (kind IN ('xid', 'health')),
  severity text NOT NULL CHECK (severity IN ('ok', 'info', 'warning', 'critical')),
  xid integer CHECK (xid >= 0),
  reason text NOT NULL CHECK (length(reason) <= 2000),
  CHECK ((kind = 'xid') = (xid IS NOT NULL))
);
CREATE INDEX health_events_by_node ON health_events (node_id, id DESC);
