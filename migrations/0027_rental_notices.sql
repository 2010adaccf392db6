-- What the platform tells a tenant about a rental ahead of, or as, something happens to it
-- (scheduler/notices.h): a maintenance window moved it, a window or a fault is coming. Read by
-- GET /v1/notices and GET /v1/rentals/{id}/notices, sent as the rental.notice webhook.
CREATE TABLE rental_notices (
  id text PRIMARY KEY,
  rental_id text NOT NULL REFERENCES rentals (id) ON DELETE CASCADE,
  org_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('moved', 'maintenance', 'fault')),
  message text NOT NULL CHECK (length(message) BETWEEN 1 AND 1000),
  -- When what it announces happens (a move: when the rental starts on the new node).
  effective_at timestamptz NOT NULL,
  maintenance_id text REFERENCES maintenance_windows (id),
  created_at timestamptz NOT NULL
);
CREATE INDEX rental_notices_by_org ON rental_notices (org_id, created_at DESC, id DESC);
CREATE INDEX rental_notices_by_rental ON rental_notices (rental_id, created_at);
