-- Idempotency keys reworked, and an index for the audit listings.
-- Idempotency keys, reworked before any code used the table of 0002: a key now belongs to
-- the caller (org and user), not only the org, so one user cannot replay another's
-- response; the client's key is stored only as a hash; the stored response is sealed with
-- a key derived from the client's key, so a database reader cannot read the secrets some
-- responses carry (a new API token is shown once, in its creation response).
DROP TABLE idempotency_keys;

CREATE TABLE idempotency_keys (
  scope text NOT NULL,          -- '<org id or ->/<user id>': whose key this is
  key_hash text NOT NULL,       -- SHA-256 of the client's Idempotency-Key
  org_id text REFERENCES orgs (id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  request_hash text NOT NULL,   -- SHA-256 of method, target and body
  state text NOT NULL CHECK (state IN ('running', 'done')),
  status integer CHECK (state = 'running' OR status BETWEEN 100 AND 599),
  response bytea CHECK (state = 'running' OR response IS NOT NULL),
  created_at timestamptz NOT NULL,
  running_until timestamptz NOT NULL,  -- a running row past this was abandoned (crash)
  PRIMARY KEY (scope, key_hash)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- The audit listings page newest first by id, per org (GET /v1/audit) and across orgs.
CREATE INDEX audit_log_org_id_idx ON audit_log (org_id, id DESC);
