-- One captured rental-day, for pgbench (bench/capture/run.sh runs it BATCH times in one
-- transaction, as capture_due works a batch): the statements RentalCharges::capture_due runs
-- for each rental of a claimed batch, in its order — the meter locked, its open holds, the
-- capture's ledger posting, the charge, the hold's capture, the org's draft invoice and the
-- rental's line on it, the meter saved. Their SQL is that of billing/rental_charges.cpp,
-- billing/ledger.cpp and billing/invoice_store.cpp, prepared once per connection under the same
-- names, as the service prepares them; update it with theirs. Where the service computes a
-- parameter (a key, a description, a day's start) the EXECUTE computes the same value from the
-- variables \gset before. Two differences: the claim keeps the batch, in org order as
-- capture_due sorts it, in a temporary table, and the meter's lock reads the i-th rental from it
-- (the service has the ids in memory). Variables: now, batch; prepared and i, which run.sh
-- starts at 0 (pgbench keeps a client's variables from one transaction to the next).
-- Once per connection:
\if :prepared = 0
CREATE TEMP TABLE claimed (i integer PRIMARY KEY, rental_id text NOT NULL) ON COMMIT DELETE ROWS;
PREPARE billing_meters_due AS INSERT INTO claimed (i, rental_id) SELECT row_number() OVER (ORDER BY org_id, rental_id), rental_id FROM (SELECT rental_id, org_id FROM billing_rentals WHERE next_due_at <= $1::timestamptz ORDER BY next_due_at LIMIT $2 FOR UPDATE SKIP LOCKED) c;
PREPARE billing_meter_lock AS SELECT rental_id, org_id, token_id, description, day_gross_minor, day_net_minor, day_tax_minor, days, state, (extract(epoch FROM period_start) * 1000000)::bigint AS start_us, next_day, credited_minor FROM billing_rentals WHERE rental_id = (SELECT rental_id FROM claimed WHERE i = $1) FOR UPDATE;
PREPARE billing_holds_open AS SELECT id, first_day, days, day_gross_minor, amount_minor, captured_minor, released_minor FROM billing_holds WHERE rental_id = $1 AND resolved_at IS NULL ORDER BY first_day FOR UPDATE;
PREPARE ledger_post AS WITH t AS (INSERT INTO ledger_transactions (idempotency_key, kind, org_id, rental_id, description, currency, at, actor_user_id) VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id), e AS (INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor) SELECT t.id, x.account, CASE WHEN x.account IN ('available', 'held') THEN $3 END, x.amount FROM t, unnest($9::text[], $10::bigint[]) AS x (account, amount)) SELECT id FROM t;
PREPARE billing_charge_insert AS INSERT INTO billing_charges (rental_id, day, hold_id, transaction_id, amount_minor, day_start, charged_at) VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz) ON CONFLICT (rental_id, day) DO NOTHING RETURNING day;
PREPARE billing_hold_capture AS UPDATE billing_holds SET captured_minor = captured_minor + $2, resolved_at = CASE WHEN captured_minor + $2 + released_minor = amount_minor THEN $3::timestamptz END WHERE id = $1 AND resolved_at IS NULL;
PREPARE invoice_open_draft AS INSERT INTO invoices (id, org_id, period_start, period_end, status, currency, subtotal_minor, tax_minor, total_minor, vat_basis_points, created_at) SELECT $1::text, $2::text, m.start, (m.start + interval '1 month')::date, 'draft', $6::text, 0, 0, 0, $7::int, $8::timestamptz FROM (SELECT (date_trunc('month', $3::timestamptz AT TIME ZONE $4::text) + make_interval(months => $5::int))::date AS start) m ON CONFLICT (org_id, period_start) WHERE kind = 'invoice' DO UPDATE SET status = invoices.status WHERE invoices.status = 'draft' RETURNING id;
PREPARE invoice_add_rental_day AS WITH line AS (INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days, unit_net_minor, unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor, amount_minor) VALUES ($1, 'rental_days', $2, $3, 1, $4, $5, $6, $4, $5, $6) ON CONFLICT (invoice_id, rental_id, unit_gross_minor) WHERE kind = 'rental_days' DO UPDATE SET days = invoice_lines.days + 1, amount_net_minor = invoice_lines.amount_net_minor + invoice_lines.unit_net_minor, tax_minor = invoice_lines.tax_minor + invoice_lines.unit_tax_minor, amount_minor = invoice_lines.amount_minor + invoice_lines.unit_gross_minor RETURNING unit_net_minor, unit_tax_minor, unit_gross_minor) UPDATE invoices SET subtotal_minor = invoices.subtotal_minor + line.unit_net_minor, tax_minor = invoices.tax_minor + line.unit_tax_minor, total_minor = invoices.total_minor + line.unit_gross_minor FROM line WHERE invoices.id = $1 RETURNING invoices.id;
PREPARE billing_meter_set AS UPDATE billing_rentals SET state = $2, period_start = $3::timestamptz, next_day = $4, next_due_at = $5::timestamptz, days = $6, credited_minor = $7 WHERE rental_id = $1;
\set prepared 1
\endif
-- Once per batch, on its first day:
\if :i = 0
EXECUTE billing_meters_due(':now', :batch);
\endif
-- Every day:
\set i :i + 1
EXECUTE billing_meter_lock(:i) \gset m_
EXECUTE billing_holds_open(':m_rental_id') \gset h_
\set starts_us :m_start_us + :m_next_day * 86400000000
EXECUTE ledger_post('capture:' || ':m_rental_id' || ':' || :m_next_day, 'capture', ':m_org_id', ':m_rental_id', 'Day ' || :m_next_day + 1 || ' of ' || ':m_description', 'RUB', ':now', NULL, '{held,revenue}', ARRAY[-:h_day_gross_minor, :h_day_gross_minor]) \gset t_
EXECUTE billing_charge_insert(':m_rental_id', :m_next_day, :h_id, :t_id, :h_day_gross_minor, timestamptz 'epoch' + :starts_us * interval '1 microsecond', ':now');
EXECUTE billing_hold_capture(:h_id, :h_day_gross_minor, ':now');
EXECUTE invoice_open_draft('inv_' || substr(md5(random()::text), 1, 22), ':m_org_id', timestamptz 'epoch' + :starts_us * interval '1 microsecond', 'UTC', 0, 'RUB', 2000, ':now') \gset d_
EXECUTE invoice_add_rental_day(':d_id', ':m_rental_id', ':m_description', :m_day_net_minor, :m_day_tax_minor, :m_day_gross_minor);
\set next :m_next_day + 1
EXECUTE billing_meter_set(':m_rental_id', 'running', timestamptz 'epoch' + :m_start_us * interval '1 microsecond', :next, CASE WHEN :next < :m_days THEN timestamptz 'epoch' + (:m_start_us + :next * 86400000000) * interval '1 microsecond' END, :m_days, :m_credited_minor);
