-- The booking storm's fleet: :nodes available, healthy HGX 8x H100 nodes at the demo site,
-- each with its GPUs and its NVSwitch link matrix in gpu_links (as NodeStore writes them).
-- Ids have the real shape: a prefix and 22 base62 characters.
INSERT INTO nodes (id, site_id, hostname, gpu_model, gpu_count, interconnect, state,
    state_changed_at, health, topology_source, created_at)
  SELECT 'nod_storm' || lpad(i::text, 17, '0'), (SELECT id FROM sites ORDER BY created_at LIMIT 1),
    'storm-' || i, 'H100-SXM5-80GB', 8, 'nvswitch', 'available', now(), 'ok', 'declared', now()
  FROM generate_series(1, :nodes) i;
INSERT INTO gpus (node_id, idx, health)
  SELECT n.id, g, 'ok' FROM nodes n, generate_series(0, 7) g WHERE n.id LIKE 'nod_storm%';
INSERT INTO gpu_links (node_id, gpu_a, gpu_b, kind)
  SELECT n.id, a, b, 'NV18' FROM nodes n, generate_series(0, 6) a, generate_series(a + 1, 7) b
  WHERE n.id LIKE 'nod_storm%';
-- No ANALYZE: the fleet is left as a bulk enrolment leaves it, before autovacuum's first pass.
-- The first booking's candidate load brings the statistics up to date itself
-- (CandidateStore::keep_statistics); an ANALYZE here hid that it once did not.
