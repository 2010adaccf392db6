-- Inventory: the GPU model catalog (seeded from the reference spec table), sites, nodes with
-- their state machine and event history, GPUs, the GPU link matrix, single-use enrolment
-- tokens, images and the price list. Caches of the catalog on every replica are told about
-- changes by triggers (LISTEN gpurent_catalog), whoever makes the change.

CREATE TABLE gpu_models (
  name text PRIMARY KEY,
  vendor text NOT NULL DEFAULT 'NVIDIA',
  architecture text NOT NULL
    CHECK (architecture IN ('Volta', 'Turing', 'Ampere', 'Ada', 'Hopper', 'Blackwell')),
  compute_capability text NOT NULL CHECK (compute_capability ~ '^[0-9]{1,2}\.[0-9]$'),
  vram_gb integer NOT NULL CHECK (vram_gb > 0),
  memory_type text NOT NULL,
  memory_bandwidth_gbps integer CHECK (memory_bandwidth_gbps > 0),  -- GB/s; NULL: unverified
  -- How GPUs of this model link to each other: through NVSwitch (HGX boards), NVLink
  -- bridges between pairs, a direct NVLink mesh, or not at all.
  nvlink_connection text NOT NULL CHECK (nvlink_connection IN ('nvswitch', 'bridge', 'mesh', 'none')),
  nvlink_generation integer CHECK (nvlink_generation > 0),
  nvlink_bandwidth_gbps integer CHECK (nvlink_bandwidth_gbps > 0),  -- per GPU, GB/s
  -- The kinds `nvidia-smi topo -m` prints between two GPUs on an NVSwitch board and
  -- between bridged GPUs; a node's matrix is derived from them until its agent reports.
  nvswitch_link_kind text CHECK (nvswitch_link_kind ~ '^NV[0-9]{1,2}$'),
  bridge_link_kind text CHECK (bridge_link_kind ~ '^NV[0-9]{1,2}$'),
  bf16 boolean NOT NULL,
  fp8 boolean NOT NULL,
  tdp_w integer NOT NULL CHECK (tdp_w > 0),
  CHECK ((nvlink_connection = 'nvswitch') = (nvswitch_link_kind IS NOT NULL))
);

-- ../shared/reference/gpus.md. Bandwidths in GB/s; the A100 SXM4 80 GB is listed at 400 W
-- (some HGX boards run it at 500 W). Bridged PCIe pairs print NV4 (the reference's note).
INSERT INTO gpu_models (name, architecture, compute_capability, vram_gb, memory_type,
  memory_bandwidth_gbps, nvlink_connection, nvlink_generation, nvlink_bandwidth_gbps,
  nvswitch_link_kind, bridge_link_kind, bf16, fp8, tdp_w) VALUES
  ('H200-SXM5-141GB', 'Hopper', '9.0', 141, 'HBM3e', 4800, 'nvswitch', 4, 900, 'NV18', NULL, true, true, 700),
  ('H100-SXM5-80GB', 'Hopper', '9.0', 80, 'HBM3', 3350, 'nvswitch', 4, 900, 'NV18', NULL, true, true, 700),
  ('H100-PCIe-80GB', 'Hopper', '9.0', 80, 'HBM2e', 2000, 'bridge', NULL, NULL, NULL, 'NV4', true, true, 350),
  ('H100-NVL-94GB', 'Hopper', '9.0', 94, 'HBM3', NULL, 'bridge', NULL, NULL, NULL, 'NV4', true, true, 400),
  ('A100-SXM4-80GB', 'Ampere', '8.0', 80, 'HBM2e', 2039, 'nvswitch', 3, 600, 'NV12', NULL, true, false, 400),
  ('A100-PCIe-80GB', 'Ampere', '8.0', 80, 'HBM2e', 1935, 'bridge', NULL, NULL, NULL, 'NV4', true, false, 300),
  ('A100-SXM4-40GB', 'Ampere', '8.0', 40, 'HBM2', 1555, 'nvswitch', 3, 600, 'NV12', NULL, true, false, 400),
  ('L40S-48GB', 'Ada', '8.9', 48, 'GDDR6', 864, 'none', NULL, NULL, NULL, NULL, true, true, 350),
  ('RTX6000Ada-48GB', 'Ada', '8.9', 48, 'GDDR6', 960, 'none', NULL, NULL, NULL, NULL, true, true, 300),
  ('L4-24GB', 'Ada', '8.9', 24, 'GDDR6', 300, 'none', NULL, NULL, NULL, NULL, true, true, 72),
  ('RTX4090-24GB', 'Ada', '8.9', 24, 'GDDR6X', 1008, 'none', NULL, NULL, NULL, NULL, true, true, 450),
  ('T4-16GB', 'Turing', '7.5', 16, 'GDDR6', 320, 'none', NULL, NULL, NULL, NULL, false, false, 70),
  ('V100-SXM2-32GB', 'Volta', '7.0', 32, 'HBM2', 900, 'mesh', 2, 300, NULL, NULL, false, false, 300);

CREATE TABLE sites (
  id text PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  region text NOT NULL CHECK (length(region) BETWEEN 1 AND 100),
  timezone text NOT NULL,  -- IANA name; rental dates are days in this zone
  created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX sites_name_key ON sites (lower(name));

CREATE TABLE nodes (
  id text PRIMARY KEY,
  site_id text NOT NULL REFERENCES sites (id),
  hostname text NOT NULL CHECK (length(hostname) BETWEEN 1 AND 253),
  gpu_model text NOT NULL REFERENCES gpu_models (name),
  gpu_count integer NOT NULL CHECK (gpu_count BETWEEN 1 AND 64),
  interconnect text NOT NULL CHECK (interconnect IN ('nvswitch', 'nvlink-pairs', 'pcie')),
  cpu_model text CHECK (length(cpu_model) <= 200),
  cpu_cores integer CHECK (cpu_cores > 0),
  ram_gb integer CHECK (ram_gb > 0),
  disk_gb integer CHECK (disk_gb > 0),
  labels jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
  state text NOT NULL
    CHECK (state IN ('enrolling', 'available', 'maintenance', 'draining', 'failed', 'retired')),
  state_changed_at timestamptz NOT NULL,
  health text NOT NULL DEFAULT 'unknown' CHECK (health IN ('unknown', 'ok', 'warning', 'critical')),
  driver_version text,
  agent_version text,
  last_heartbeat_at timestamptz,
  -- Where the link matrix came from: derived from the declared interconnect, pasted by an
  -- admin, or reported by the node's agent.
  topology_source text NOT NULL CHECK (topology_source IN ('declared', 'admin', 'agent')),
  created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX nodes_hostname_key ON nodes (lower(hostname));
CREATE INDEX nodes_site_idx ON nodes (site_id);
CREATE INDEX nodes_created_idx ON nodes (created_at, id);

-- Every state change of a node, with who asked and why (admins must give a reason).
CREATE TABLE node_events (
  id bigserial PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  action text NOT NULL,
  from_state text,
  to_state text NOT NULL,
  reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
  actor_user_id text
);
CREATE INDEX node_events_node_idx ON node_events (node_id, id);

CREATE TABLE gpus (
  id bigserial PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  idx integer NOT NULL CHECK (idx >= 0),
  uuid text,
  pci_bus_id text,
  health text NOT NULL DEFAULT 'unknown' CHECK (health IN ('unknown', 'ok', 'warning', 'critical')),
  UNIQUE (node_id, idx)
);

-- The upper triangle of a node's GPU x GPU matrix, kinds as `nvidia-smi topo -m` prints them.
CREATE TABLE gpu_links (
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  gpu_a integer NOT NULL,
  gpu_b integer NOT NULL,
  kind text NOT NULL CHECK (kind ~ '^(NV[0-9]{1,2}|PIX|PXB|PHB|NODE|SYS|SOC)$'),
  PRIMARY KEY (node_id, gpu_a, gpu_b),
  CHECK (0 <= gpu_a AND gpu_a < gpu_b)
);

-- What a new node's agent presents once to enrol; only the SHA-256 is kept.
CREATE TABLE node_enrollment_tokens (
  token_hash text PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX node_enrollment_tokens_node_idx ON node_enrollment_tokens (node_id);

CREATE TABLE images (
  id text PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  os text NOT NULL CHECK (length(os) BETWEEN 1 AND 100),
  driver_version text NOT NULL CHECK (driver_version ~ '^[0-9]{1,5}(\.[0-9]{1,5}){0,2}$'),
  cuda_version text NOT NULL CHECK (cuda_version ~ '^[0-9]{1,5}(\.[0-9]{1,5}){0,2}$'),
  frameworks jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(frameworks) = 'array'),
  status text NOT NULL CHECK (status IN ('active', 'deprecated')),
  created_at timestamptz NOT NULL,
  deprecated_at timestamptz
);
CREATE UNIQUE INDEX images_name_key ON images (lower(name));

-- The price of a rental shape per day. A change closes the current row and opens a new
-- one, so a rental can keep the row it was priced with: changes apply to new rentals only.
CREATE TABLE prices (
  id bigserial PRIMARY KEY,
  gpu_model text NOT NULL REFERENCES gpu_models (name),
  gpu_count integer NOT NULL CHECK (gpu_count BETWEEN 1 AND 64),
  amount_minor bigint NOT NULL CHECK (amount_minor > 0),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  valid_from timestamptz NOT NULL,
  valid_until timestamptz,
  set_by text,
  CHECK (valid_until IS NULL OR valid_until >= valid_from)
);
CREATE UNIQUE INDEX prices_current_key ON prices (gpu_model, gpu_count) WHERE valid_until IS NULL;

CREATE FUNCTION notify_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_catalog', TG_TABLE_NAME);
  RETURN NULL;
END
$$;
CREATE TRIGGER gpu_models_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_models
  FOR EACH STATEMENT EXECUTE FUNCTION notify_catalog_changed();
CREATE TRIGGER images_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON images
  FOR EACH STATEMENT EXECUTE FUNCTION notify_catalog_changed();
