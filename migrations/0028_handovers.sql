-- Operations that respect the tenant (scheduler/handovers.h, scheduler/maintenance.h): a
-- running rental handed over again — to a spare node when its own failed or a maintenance
-- window takes it (a swap), or on the same node after a reboot or a power action — keeps its
-- id and its billing; each such handover is a row, and the minutes it cost the tenant are
-- credited once when it ends (the ledger's idempotency key names the row).
CREATE TABLE rental_handovers (
  id text PRIMARY KEY,
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  cause text NOT NULL CHECK (cause IN ('fault', 'maintenance', 'reboot', 'power')),
  reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
  from_node_id text NOT NULL,
  to_node_id text NOT NULL,
  -- The rental's attempt count when it began: its provisioning tries count from here.
  attempt_base int NOT NULL,
  started_at timestamptz NOT NULL,
  ended_at timestamptz,
  outcome text CHECK (outcome IN ('active', 'interrupted', 'ended')),
  credited_minor bigint,
  CHECK ((ended_at IS NULL) = (outcome IS NULL))
);
-- At most one open handover per rental.
CREATE UNIQUE INDEX rental_handovers_open ON rental_handovers (rental_id) WHERE ended_at IS NULL;
CREATE INDEX rental_handovers_by_rental ON rental_handovers (rental_id, started_at);

-- A maintenance notice the tenant answers: what it may choose, by when, what it chose, and
-- when the lifecycle applied the answer (or the default at the window's start).
ALTER TABLE rental_notices ADD COLUMN choices text[] NOT NULL DEFAULT '{}';
-- When what it announces is over (a window's end), for the node's notice file.
ALTER TABLE rental_notices ADD COLUMN ends_at timestamptz;
ALTER TABLE rental_notices ADD COLUMN respond_by timestamptz;
ALTER TABLE rental_notices ADD COLUMN choice text
  CHECK (choice IN ('other_node', 'shift', 'cancel'));
ALTER TABLE rental_notices ADD COLUMN chosen_at timestamptz;
ALTER TABLE rental_notices ADD COLUMN applied_at timestamptz;
CREATE INDEX rental_notices_unapplied ON rental_notices (respond_by)
  WHERE kind = 'maintenance' AND applied_at IS NULL;

-- What the agent runs as the rental's login when a notice reaches the node, so a training job
-- can save before the node goes (agent/checkpoint_runner.h), and its time limit.
ALTER TABLE rentals ADD COLUMN checkpoint_command text
  CHECK (length(checkpoint_command) BETWEEN 1 AND 4096);
ALTER TABLE rentals ADD COLUMN checkpoint_timeout_s int NOT NULL DEFAULT 600
  CHECK (checkpoint_timeout_s BETWEEN 1 AND 86400);

ALTER TABLE agent_tasks DROP CONSTRAINT agent_tasks_kind_check;
ALTER TABLE agent_tasks ADD CONSTRAINT agent_tasks_kind_check
  CHECK (kind IN ('provision', 'install_access', 'revoke_access', 'wipe', 'burn_in', 'doctor',
                  'notice', 'reboot'))
  NOT VALID;
