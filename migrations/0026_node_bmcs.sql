-- Each node's BMC (bmc/node_power.h): where its Redfish service is, which system is the node,
-- the credentials (the password sealed under bmc_secret_key, the node's id as the additional
-- data, so a sealed password copied to another node does not open) and how its certificate
-- is trusted. Power actions go through it; the password is never shown again.
CREATE TABLE node_bmcs (
  node_id text PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) BETWEEN 8 AND 300),
  system_id text CHECK (length(system_id) BETWEEN 1 AND 128),
  username text NOT NULL CHECK (length(username) BETWEEN 1 AND 128),
  password_sealed text NOT NULL,
  pinned_sha256 text CHECK (pinned_sha256 ~ '^[0-9a-f]{64}$'),
  updated_at timestamptz NOT NULL,
  updated_by text
);
