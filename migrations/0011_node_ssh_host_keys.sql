-- The node's sshd host keys, as its agent reports them in each hello: what the rental shows
-- (fingerprints, a known_hosts line) so that nobody has to trust a host key on first use,
-- and what the platform will sign host certificates for. One row per key algorithm; each
-- hello replaces the node's set.
CREATE TABLE node_ssh_host_keys (
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  algorithm text NOT NULL CHECK (algorithm ~ '^[a-z0-9@.-]{1,64}$'),
  public_key text NOT NULL CHECK (length(public_key) <= 4096),
  fingerprint text NOT NULL CHECK (fingerprint ~ '^SHA256:[A-Za-z0-9+/]{43}$'),
  reported_at timestamptz NOT NULL,
  PRIMARY KEY (node_id, algorithm)
);
