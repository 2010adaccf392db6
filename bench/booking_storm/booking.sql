-- pgbench script of the booking storm (run.sh): what one POST /v1/rentals executes, statement
-- for statement, as PostgreSQL logged it for one booking (`LOG_ONE=1 bench/booking_storm/run.sh`
-- prints that log again): the idempotency claim in a transaction of its own, the booking
-- transaction (org, SSH key, image, model, price, the sites' midnights, the confirmation of
-- the chosen node — the candidates themselves come from the replica's capacity copy, loaded
-- once — then in a savepoint the rental with its event, the GPU's advisory lock and the
-- allocation),
-- and the idempotency record of the response. Authentication reads nothing here: the
-- replicas' credential cache answers it. One script run = one booking.
-- Run with -M prepared, as the service prepares its statements. Variables from run.sh (-D):
-- org, usr, tok, key, img, price, nodes, model. The node and GPU are random (the node's id
-- read by its number from storm_nodes, where run.sh lists the fleet's ids: the admin API
-- makes random ones, and the subquery costs an index probe, not a round trip), and the
-- allocation lies in a random day of the next hundred thousand years from 2100 rather than the coming month, so that two
-- clients never collide on the exclusion constraint (which would abort a pgbench client); the
-- confirmation reads the chosen node over the same window the service's booking reads. After a change to the
-- booking's statements, compare with `LOG_ONE=1 bench/booking_storm/run.sh` and update this.
\set day random(1, 30)
\set node random(1, :nodes)
\set gpu random(0, 7)
\set far random(0, 36500000)
\set key_hash random(1, 9223372036854775807)
BEGIN;
INSERT INTO idempotency_keys AS k (scope, key_hash, org_id, user_id, request_hash, state, created_at, running_until) VALUES (:org::text || '/' || :usr::text, md5(:key_hash::text) || md5(:key_hash::text), :org::text, :usr::text, md5(:key_hash::text), 'running', now(), now() + interval '1 minute') ON CONFLICT (scope, key_hash) DO UPDATE SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL, response = NULL, created_at = EXCLUDED.created_at, running_until = EXCLUDED.running_until WHERE k.created_at < now() - interval '1 day' OR (k.state = 'running' AND k.running_until < now() AND k.request_hash = EXCLUDED.request_hash) RETURNING 1;
COMMIT;
BEGIN;
SELECT o.id, o.name, (extract(epoch FROM o.created_at) * 1000000)::bigint, o.max_concurrent_gpus, o.max_days, o.spend_limit_minor, (SELECT count(*) FROM memberships m WHERE m.org_id = o.id) FROM orgs o WHERE o.id = :org::text;
SELECT id, name, type, bits, fingerprint, public_key, (extract(epoch FROM created_at) * 1000000)::bigint FROM ssh_keys WHERE org_id = :org::text AND id = :key::text;
SELECT id, name, os, driver_version, cuda_version, frameworks::text, status, (extract(epoch FROM created_at) * 1000000)::bigint, (extract(epoch FROM deprecated_at) * 1000000)::bigint FROM images WHERE id = :img::text;
SELECT name, vendor, architecture, compute_capability, vram_gb, memory_type, memory_bandwidth_gbps, nvlink_connection, nvlink_generation, nvlink_bandwidth_gbps, nvswitch_link_kind, bridge_link_kind, bf16, fp8, tdp_w FROM gpu_models WHERE name = :model::text;
SELECT id, gpu_model, gpu_count, amount_minor, currency, (extract(epoch FROM valid_from) * 1000000)::bigint FROM prices WHERE gpu_model = :model::text AND gpu_count = 1 AND valid_from <= now() AND (valid_until IS NULL OR valid_until > now()) ORDER BY valid_from DESC LIMIT 1;
SELECT s.id, (extract(epoch FROM ((current_date + :day::int)::timestamp AT TIME ZONE s.timezone)) * 1000000)::bigint FROM sites s WHERE EXISTS (SELECT 1 FROM nodes n WHERE n.site_id = s.id AND n.gpu_model = :model::text);
WITH cn AS NOT MATERIALIZED (SELECT n.id FROM nodes n WHERE n.id = ANY (ARRAY[(SELECT node_id FROM storm_nodes WHERE n = :node::int)]) AND n.state = 'available' AND n.health = 'ok') SELECT 0, n.id, n.gpu_count::bigint, COALESCE(f.failures, 0), NULL::bigint, n.gpu_model, n.interconnect, m.nvswitch_link_kind, m.bridge_link_kind, gs.gpus, ls.links, s.id, s.name FROM nodes n JOIN gpu_models m ON m.name = n.gpu_model JOIN sites s ON s.id = n.site_id LEFT JOIN (SELECT r.node_id, count(*) AS failures FROM rentals r WHERE r.state IN ('failed', 'interrupted') AND r.state_changed_at >= ((current_date + :day::int)::timestamp AT TIME ZONE 'Europe/Moscow') - 2592000000000::bigint * interval '1 microsecond' AND r.state_changed_at < ((current_date + :day::int)::timestamp AT TIME ZONE 'Europe/Moscow') GROUP BY r.node_id) f ON f.node_id = n.id LEFT JOIN (SELECT g.node_id, string_agg(g.idx || CASE WHEN g.health IN ('warning', 'critical') THEN '-' ELSE '+' END || g.id, ' ') AS gpus FROM gpus g JOIN cn ON cn.id = g.node_id GROUP BY g.node_id) gs ON gs.node_id = n.id LEFT JOIN (SELECT l.node_id, string_agg(l.gpu_a || ' ' || l.gpu_b || ' ' || l.kind, ' ') AS links FROM gpu_links l JOIN cn ON cn.id = l.node_id GROUP BY l.node_id) ls ON ls.node_id = n.id WHERE n.id = ANY (ARRAY[(SELECT node_id FROM storm_nodes WHERE n = :node::int)]) AND n.state = 'available' AND n.health = 'ok' UNION ALL SELECT 1, NULL, a.gpu_id, (extract(epoch FROM lower(a.period)) * 1000000)::bigint, (extract(epoch FROM upper(a.period)) * 1000000)::bigint, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM allocations a JOIN gpus g ON g.id = a.gpu_id JOIN cn ON cn.id = g.node_id WHERE a.period && tstzrange(((current_date + :day::int)::timestamp AT TIME ZONE 'Europe/Moscow'), ((current_date + :day::int + 1)::timestamp AT TIME ZONE 'Europe/Moscow' + interval '30 minutes'), '[)');
SAVEPOINT booking_choice;
WITH r AS (INSERT INTO rentals (id, org_id, created_by, created_by_token, name, state, gpu_model, gpu_count, link_need, node_id, gpu_indices, period, days, image_id, ssh_key_ids, price_per_day_minor, currency, price_id, wait_for_capacity, pending_expires_at, created_at, state_changed_at) VALUES ('rnt_' || substr(md5(random()::text), 1, 22), :org::text, :usr::text, :tok::text, '1x H100-SXM5-80GB', 'scheduled', :model::text, 1, 'any', (SELECT node_id FROM storm_nodes WHERE n = :node::int), ARRAY[:gpu::int], tstzrange(timestamptz '2100-01-01' + :far::int * interval '1 day', timestamptz '2100-01-02' + :far::int * interval '1 day', '[)'), 1, :img::text, ARRAY[:key::text]::text[], 650000, 'RUB', :price::bigint, false, NULL, now(), now()) RETURNING *), e AS (INSERT INTO rental_events (rental_id, at, from_state, to_state, reason, actor_user_id) SELECT id, created_at, NULL, state, 'booked', created_by FROM r) SELECT id, org_id, name, state, gpu_model, gpu_count, link_need, node_id, to_json(gpu_indices)::text, (extract(epoch FROM lower(period)) * 1000000)::bigint, (extract(epoch FROM upper(period)) * 1000000)::bigint, days, image_id, to_json(ssh_key_ids)::text, price_per_day_minor, currency, price_id, wait_for_capacity, (extract(epoch FROM pending_expires_at) * 1000000)::bigint, (extract(epoch FROM created_at) * 1000000)::bigint, created_by, created_by_token, (extract(epoch FROM state_changed_at) * 1000000)::bigint, attempts, (extract(epoch FROM next_check_at) * 1000000)::bigint FROM r \gset rental_
SELECT pg_advisory_xact_lock(4683743612465315840 + g.id) FROM (SELECT id FROM gpus WHERE node_id = (SELECT node_id FROM storm_nodes WHERE n = :node::int) AND idx = ANY (ARRAY[:gpu::int]) ORDER BY id OFFSET 0) g;
WITH placed AS (UPDATE rentals SET node_id = (SELECT node_id FROM storm_nodes WHERE n = :node::int), gpu_indices = ARRAY[:gpu::int] WHERE id = :rental_id::text RETURNING id) INSERT INTO allocations (rental_id, gpu_id, period) SELECT placed.id, g.id, tstzrange(timestamptz '2100-01-01' + :far::int * interval '1 day', timestamptz '2100-01-02 00:30' + :far::int * interval '1 day', '[)') FROM placed JOIN gpus g ON g.node_id = (SELECT node_id FROM storm_nodes WHERE n = :node::int) AND g.idx = ANY (ARRAY[:gpu::int]) RETURNING gpu_id;
RELEASE SAVEPOINT booking_choice;
COMMIT;
BEGIN;
UPDATE idempotency_keys SET state = 'done', status = 201, response = decode(repeat(md5(random()::text), 36), 'hex') WHERE scope = :org::text || '/' || :usr::text AND key_hash = md5(:key_hash::text) || md5(:key_hash::text) AND request_hash = md5(:key_hash::text) AND state = 'running';
COMMIT;
