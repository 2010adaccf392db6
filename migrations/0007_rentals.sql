-- Rentals: what a tenant booked and where it runs, the GPU allocations through which the
-- database itself forbids double booking, every state change of a rental as an event row,
-- and the tasks the control plane hands to node agents (DESIGN.md "Data model", "State
-- machines", "Scheduling").

-- Installed by 0001 already; stated again because allocations_no_overlap below cannot exist
-- without it (equality on a bigint inside a GiST index).
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE rentals (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id),
  created_by text NOT NULL REFERENCES users (id),
  -- The API token the booking came through (CI pipelines), if any; the rental outlives it.
  created_by_token text REFERENCES api_tokens (id) ON DELETE SET NULL,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  state text NOT NULL CHECK (state IN ('pending', 'scheduled', 'provisioning', 'active',
    'releasing', 'ended', 'cancelled', 'failed', 'interrupted')),
  -- The request, kept as asked: a waiting (pending) rental is placed from it later, and a
  -- replacement after an interruption asks for the same shape.
  gpu_model text NOT NULL REFERENCES gpu_models (name),
  gpu_count integer NOT NULL CHECK (gpu_count BETWEEN 1 AND 64),
  link_need text NOT NULL CHECK (link_need IN ('nvlink', 'any')),
  -- Where it runs: no node and no GPUs until placed (a pending rental, or one cancelled
  -- while it waited); every other state has both. The allocations below are what reserve
  -- the GPUs; these columns say which ones without a join.
  node_id text REFERENCES nodes (id),
  gpu_indices integer[] NOT NULL DEFAULT '{}',
  -- The rental's own period, half-open, without the cleaning window its allocations add.
  -- For a pending rental the period asked for; it moves when the rental is placed later.
  period tstzrange NOT NULL CHECK (NOT isempty(period) AND lower_inc(period)
    AND NOT upper_inc(period) AND NOT lower_inf(period) AND NOT upper_inf(period)),
  days integer NOT NULL CHECK (days >= 1),
  image_id text NOT NULL REFERENCES images (id),
  ssh_key_ids text[] NOT NULL DEFAULT '{}',
  -- The price snapshot: what a day costs this rental, whatever the price list says later,
  -- and the price-list row it came from.
  price_per_day_minor bigint NOT NULL CHECK (price_per_day_minor >= 0),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  price_id bigint NOT NULL REFERENCES prices (id),
  wait_for_capacity boolean NOT NULL DEFAULT false,
  -- A pending rental gives up (cancelled) at this time if no capacity was found.
  pending_expires_at timestamptz,
  created_at timestamptz NOT NULL,
  state_changed_at timestamptz NOT NULL,
  -- Provisioning retries so far; the lifecycle fails the rental after a bounded number.
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- When the lifecycle worker looks at a provisioning or releasing rental again (a task's
  -- deadline, a retry's backoff). A check time belongs to one state: a transition clears it.
  next_check_at timestamptz,
  -- When the rental's next lifecycle step is due: its start while scheduled, its end while
  -- active, its check time while provisioning or releasing; NULL when nothing is due (the
  -- waitlist and final states). Derived, so no code path can forget to keep it, and one
  -- partial index serves the worker that every replica runs.
  due_at timestamptz GENERATED ALWAYS AS (CASE state
    WHEN 'scheduled' THEN lower(period)
    WHEN 'active' THEN upper(period)
    WHEN 'provisioning' THEN next_check_at
    WHEN 'releasing' THEN next_check_at
  END) STORED,
  CHECK ((node_id IS NULL) = (cardinality(gpu_indices) = 0)),
  CHECK (node_id IS NULL OR cardinality(gpu_indices) = gpu_count),
  CHECK (node_id IS NOT NULL OR state IN ('pending', 'cancelled'))
);
-- A tenant's listing, newest first by (created_at, id), with or without a state filter.
CREATE INDEX rentals_org_created_idx ON rentals (org_id, created_at DESC, id DESC);
-- The admin listing across orgs, same order.
CREATE INDEX rentals_created_idx ON rentals (created_at DESC, id DESC);
-- A node's rentals (the admin node view, the admin listing filtered by node).
CREATE INDEX rentals_node_created_idx ON rentals (node_id, created_at DESC, id DESC)
  WHERE node_id IS NOT NULL;
-- The lifecycle worker: rentals whose step is due, earliest first.
CREATE INDEX rentals_due_idx ON rentals (due_at) WHERE due_at IS NOT NULL;
-- The waitlist, served in the order it was joined, and its expiry.
CREATE INDEX rentals_pending_idx ON rentals (created_at, id) WHERE state = 'pending';
CREATE INDEX rentals_pending_expiry_idx ON rentals (pending_expires_at)
  WHERE state = 'pending' AND pending_expires_at IS NOT NULL;
-- The max_concurrent_gpus guardrail: GPUs an org holds or has booked.
CREATE INDEX rentals_org_live_idx ON rentals (org_id) INCLUDE (gpu_count)
  WHERE state IN ('scheduled', 'provisioning', 'active');
-- Placement's "least recent failures", read for every candidate node on every booking.
CREATE INDEX rentals_node_failures_idx ON rentals (node_id, state_changed_at)
  WHERE state IN ('failed', 'interrupted');

-- One row per GPU a rental holds. The period is the rental's plus the cleaning window after
-- it (the node is wiped before the next tenant), so the constraint enforces the window too;
-- the window is configuration, applied by the code that writes these rows. Two bookings that
-- race for one GPU cannot both commit, whatever the application does: the loser gets an
-- exclusion violation and tries its next candidate.
CREATE TABLE allocations (
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  gpu_id bigint NOT NULL REFERENCES gpus (id),
  period tstzrange NOT NULL CHECK (NOT isempty(period) AND lower_inc(period)
    AND NOT upper_inc(period) AND NOT lower_inf(period) AND NOT upper_inf(period)),
  PRIMARY KEY (rental_id, gpu_id),
  -- Its GiST index also serves "this GPU's allocations over this window" (placement).
  CONSTRAINT allocations_no_overlap EXCLUDE USING gist (gpu_id WITH =, period WITH &&)
);

-- Every state change of a rental, with why and, for people's actions, who (API "events").
CREATE TABLE rental_events (
  id bigserial PRIMARY KEY,
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  from_state text,  -- NULL on the row that records the rental's creation
  to_state text NOT NULL,
  reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
  actor_user_id text
);
CREATE INDEX rental_events_rental_idx ON rental_events (rental_id, id);

-- Work for a node's agent. Delivered at least once (again after a reconnect until the agent
-- reports the outcome); the agent executes each id once.
CREATE TABLE agent_tasks (
  id text PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id),
  rental_id text REFERENCES rentals (id) ON DELETE SET NULL,  -- NULL: node housekeeping
  kind text NOT NULL CHECK (kind IN ('provision', 'install_access', 'revoke_access', 'wipe')),
  payload jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
  state text NOT NULL CHECK (state IN ('queued', 'delivered', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),  -- deliveries so far
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  result_message text
);
-- What to send a node when its agent connects: its unfinished tasks, oldest first.
CREATE INDEX agent_tasks_node_open_idx ON agent_tasks (node_id, created_at, id)
  WHERE state IN ('queued', 'delivered');
CREATE INDEX agent_tasks_rental_idx ON agent_tasks (rental_id, created_at)
  WHERE rental_id IS NOT NULL;

-- The candidate nodes of a booking: available, healthy nodes of one model.
CREATE INDEX nodes_bookable_idx ON nodes (gpu_model) WHERE state = 'available' AND health = 'ok';
