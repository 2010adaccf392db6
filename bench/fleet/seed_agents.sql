-- The fleet benchmark's nodes: :nodes HGX 8x H100 nodes at the demo site, still enrolling
-- (as POST /v1/admin/nodes leaves them: GPUs and the declared NVSwitch link matrix), each
-- with a single-use enrolment token stored as NodeStore stores it (the SHA-256 of the token,
-- in hex). Prints `node_id token` lines: gpurent-fleetsim's --enroll-from file.
-- The tokens come from random(), not a CSPRNG: a benchmark's throwaway nodes only.
\set QUIET on
INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect, state,
    state_changed_at, topology_source, created_at)
  SELECT 'nod_fleet' || lpad(i::text, 17, '0'), (SELECT id FROM sites ORDER BY created_at LIMIT 1),
    'fleet-' || i, 'H100-SXM5-80GB', 8, 'nvswitch', 'enrolling', now(), 'declared', now()
  FROM generate_series(1, :nodes) i;
INSERT INTO gpus (node_id, idx)
  SELECT n.id, g FROM nodes n, generate_series(0, 7) g WHERE n.id LIKE 'nod_fleet%';
INSERT INTO gpu_links (node_id, gpu_a, gpu_b, kind)
  SELECT n.id, a, b, 'NV18' FROM nodes n, generate_series(0, 6) a, generate_series(a + 1, 7) b
  WHERE n.id LIKE 'nod_fleet%';
CREATE TEMP TABLE fleet_tokens AS
  SELECT id AS node_id, 'gpe_' || md5(random()::text || id) || md5(id || random()::text) AS token
  FROM nodes WHERE id LIKE 'nod_fleet%';
INSERT INTO node_enrollment_tokens (token_hash, node_id, created_at, expires_at)
  SELECT encode(sha256(convert_to(token, 'UTF8')), 'hex'), node_id, now(), now() + interval '1 day'
  FROM fleet_tokens;
ANALYZE nodes;
ANALYZE gpus;
ANALYZE gpu_links;
ANALYZE node_enrollment_tokens;
\pset tuples_only on
\pset format unaligned
\pset fieldsep ' '
SELECT node_id, token FROM fleet_tokens ORDER BY node_id;
