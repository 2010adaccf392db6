-- pgbench script of the booking storm's second ceiling (run.sh): the least a booking must do
-- in the database, in one transaction: a rental row and its allocation, under the same GiST
-- exclusion constraint (allocations_no_overlap). No idempotency record, no org, key, image or
-- price reads, no confirmation, no event, no money. What one durable commit per booking
-- allows on this machine. Variables from run.sh (-D): org, usr, img, price, nodes, model. The
-- node, GPU and far-future day (one of 36.5 million) are random, as in booking.sql, so that clients do not collide.
-- The node's id is read by its number from storm_nodes, as in booking.sql.
\set node random(1, :nodes)
\set gpu random(0, 7)
\set far random(0, 36500000)
BEGIN;
WITH r AS (INSERT INTO rentals (id, org_id, created_by, name, state, gpu_model, gpu_count, link_need, node_id, gpu_indices, period, days, image_id, ssh_key_ids, price_per_day_minor, currency, price_id, wait_for_capacity, created_at, state_changed_at) VALUES ('rnt_' || substr(md5(random()::text), 1, 22), :org::text, :usr::text, '1x H100-SXM5-80GB', 'scheduled', :model::text, 1, 'any', (SELECT node_id FROM storm_nodes WHERE n = :node::int), ARRAY[:gpu::int], tstzrange(timestamptz '2200-01-01' + :far::int * interval '1 day', timestamptz '2200-01-02' + :far::int * interval '1 day', '[)'), 1, :img::text, ARRAY[]::text[], 650000, 'RUB', :price::bigint, false, now(), now()) RETURNING id, node_id, gpu_indices, period)
INSERT INTO allocations (rental_id, gpu_id, period) SELECT r.id, g.id, r.period FROM r JOIN gpus g ON g.node_id = r.node_id AND g.idx = ANY (r.gpu_indices);
COMMIT;
