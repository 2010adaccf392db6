-- Identity and tenancy: organisations (tenants), users, memberships with roles, browser
-- sessions, API tokens, SSH public keys, the audit log and stored idempotent responses.
-- Every tenant-owned row carries org_id; secrets are stored only as SHA-256 hashes.

CREATE TABLE orgs (
  id text PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- Guardrails set by platform admins; NULL means no limit.
  max_concurrent_gpus integer CHECK (max_concurrent_gpus >= 0),
  max_days integer CHECK (max_days >= 1),
  spend_limit_minor bigint CHECK (spend_limit_minor >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  password_hash text NOT NULL,
  is_platform_admin boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE memberships (
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'billing', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE sessions (
  id_hash text PRIMARY KEY,  -- SHA-256 of the cookie value; the value itself is never stored
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  current_org_id text REFERENCES orgs (id) ON DELETE SET NULL,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,  -- absolute expiry; idle expiry is last_seen_at + config
  ip text
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE api_tokens (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  created_by text NOT NULL REFERENCES users (id),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  prefix text NOT NULL,               -- the token's first characters, shown in lists
  secret_hash text NOT NULL UNIQUE,   -- SHA-256 of the whole token
  scopes text[] NOT NULL,
  max_concurrent_gpus integer CHECK (max_concurrent_gpus >= 0),
  max_days integer CHECK (max_days >= 1),
  spend_limit_minor bigint CHECK (spend_limit_minor >= 0),
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_tokens_org_idx ON api_tokens (org_id);

CREATE TABLE ssh_keys (
  id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  type text NOT NULL,
  bits integer NOT NULL,
  public_key text NOT NULL,
  fingerprint text NOT NULL,
  created_by text REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (org_id, fingerprint)
);

CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  org_id text,
  actor_user_id text,
  actor_token_id text,
  action text NOT NULL,
  target text,
  ip text,
  request_id text,
  details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_org_at_idx ON audit_log (org_id, at DESC);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC);

CREATE TABLE idempotency_keys (
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_hash text NOT NULL,  -- SHA-256 of method, path and body
  state text NOT NULL CHECK (state IN ('running', 'done')),
  status integer,
  response_body text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
