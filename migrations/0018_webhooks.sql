-- Webhooks (docs/webhooks.md): endpoints per org, an outbox of events written in the
-- transaction of the change that causes them, one delivery per endpoint and event, and
-- the log of every attempt.

CREATE TABLE webhooks (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  events text[] NOT NULL CHECK (cardinality(events) >= 1),
  -- The signing secret. The server must sign with it, so it is kept as is (not hashed); it
  -- is returned only by the create call and never logged.
  secret text NOT NULL,
  created_by text REFERENCES users (id),
  created_at timestamptz NOT NULL,
  -- Deleting a webhook disables it: its delivery log stays for the record.
  disabled_at timestamptz
);
CREATE INDEX webhooks_by_org ON webhooks (org_id, created_at, id) WHERE disabled_at IS NULL;

-- The outbox. `payload` is the event's `data` object. `dedup_key` names events that must be
-- written once (a rental's expiry warning per period end): a second replica's scan writes
-- nothing.
CREATE TABLE webhook_events (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id),
  type text NOT NULL CHECK (type ~ '^[a-z_]+\.[a-z_]+$'),
  payload jsonb NOT NULL,
  dedup_key text,
  created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX webhook_events_dedup ON webhook_events (org_id, dedup_key)
  WHERE dedup_key IS NOT NULL;

-- One per endpoint and event. A pending delivery is due at next_attempt_at; claiming it
-- moves next_attempt_at one lease ahead, so a replica that dies mid-delivery leaves it due
-- again when the lease ends (at-least-once).
CREATE TABLE webhook_deliveries (
  id bigserial PRIMARY KEY,
  webhook_id text NOT NULL REFERENCES webhooks (id),
  event_id text NOT NULL REFERENCES webhook_events (id),
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL,
  last_status integer,
  last_error text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id)
  WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at, id);

-- Every attempt: when, how long, the receiver's status or the error.
CREATE TABLE webhook_attempts (
  delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id),
  attempt integer NOT NULL CHECK (attempt >= 1),
  at timestamptz NOT NULL,
  duration_ms integer NOT NULL CHECK (duration_ms >= 0),
  status integer,
  error text,
  PRIMARY KEY (delivery_id, attempt)
);

-- Whether an org's available balance was last seen below the low-balance threshold, so
-- billing.low_balance is written once per crossing, not once per posting.
CREATE TABLE webhook_low_balance (
  org_id text PRIMARY KEY REFERENCES orgs (id),
  below boolean NOT NULL,
  changed_at timestamptz NOT NULL
);
