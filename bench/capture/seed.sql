-- The daily capture's starting point (bench/capture_benchmark.cpp, bench/capture/run.sh): orgs
-- with funded balances, each with rentals booked and running, written in bulk exactly as
-- RentalCharges leaves them after a top-up, hold() and start() — the meter, the hold, the
-- hold's and day 0's ledger postings, day 0's charge and its line on the org's draft invoice of
-- the month — so that day 1 of every rental is due at `capture.now`. The database's own
-- triggers keep the balances from the entries and check at commit that every posting sums to
-- zero. Settings read (SET them in the session first):
--   capture.orgs             orgs ('org_' + 22 digits), e.g. 10000
--   capture.rentals_per_org  rentals per org ('rnt_' + 22 digits), e.g. 10
--   capture.now              when the capture runs, e.g. '2026-11-15 12:00:00+00'
-- Rental k (1..N, N = orgs × rentals_per_org) falls due k-th; its org is 1 + r % orgs, r its
-- place in the order of md5(k) — a fixed shuffle: every org has rentals_per_org of them,
-- scattered over the day, so a capture batch's orgs come in no order and two replicas' batches
-- share orgs, as in life. Its days count from P(k) = now − 48 h + k × 24 h / N, in
-- (now − 48 h, now − 24 h]: day 0 was captured when it started, day 1 started at P(k) + 24 h,
-- within the day before now.
-- It was booked an hour before its start for 3 + k % 28 days at one of three day prices
-- (gross, VAT 20% inside: net and tax as billing::split_gross splits them). Currency RUB,
-- invoices in UTC months. Ids are fixed so the ledger's references can be written in bulk:
-- top-up posting i = org i, hold k and its posting orgs + k, day 0's posting orgs + N + k.
BEGIN;

CREATE TEMP TABLE seed_rentals ON COMMIT DROP AS
  WITH p AS (SELECT current_setting('capture.orgs')::int AS orgs,
                    current_setting('capture.orgs')::int
                      * current_setting('capture.rentals_per_org')::int AS n,
                    current_setting('capture.now')::timestamptz AS now),
  price (product, gross, net, tax) AS (VALUES
    (0, 520000::bigint, 433333::bigint, 86667::bigint),
    (1, 240000::bigint, 200000::bigint, 40000::bigint),
    (2, 120000::bigint, 100000::bigint, 20000::bigint))
  SELECT k,
    'rnt_' || lpad(k::text, 22, '0') AS rental_id,
    1 + r % p.orgs AS org,
    'org_' || lpad((1 + r % p.orgs)::text, 22, '0') AS org_id,
    CASE price.product WHEN 0 THEN '8x H100-SXM5-80GB' WHEN 1 THEN '1x A100-SXM4-80GB'
      ELSE '1x L4-24GB' END AS description,
    price.gross, price.net, price.tax,
    3 + k % 28 AS days,
    p.now - interval '48 hours' + k * (86400000000 / p.n) * interval '1 microsecond' AS started,
    p.orgs AS orgs, p.n AS n
  FROM p, LATERAL (SELECT k, row_number() OVER (ORDER BY md5(k::text)) - 1 AS r
                   FROM generate_series(1, p.n) k) shuffled
  JOIN price ON price.product = k % 3;
CREATE TEMP TABLE seed_orgs ON COMMIT DROP AS
  SELECT i AS org, 'org_' || lpad(i::text, 22, '0') AS org_id,
    current_setting('capture.now')::timestamptz - interval '30 days' AS funded_at
  FROM generate_series(1, current_setting('capture.orgs')::int) i;

INSERT INTO orgs (id, name) SELECT org_id, 'Capture bench ' || org FROM seed_orgs;

-- TopUps::credit: payments −x, available +x.
INSERT INTO ledger_transactions (id, idempotency_key, kind, org_id, rental_id, description,
    currency, at, actor_user_id)
  SELECT org, 'credit:crd_' || lpad(org::text, 22, '0'), 'top_up', org_id, NULL,
    'Top-up: capture benchmark', 'RUB', funded_at, NULL
  FROM seed_orgs;

-- hold(): the meter (state held, then set running by start()), the hold of the whole period
-- and its posting, available −x, held +x.
INSERT INTO billing_rentals (rental_id, org_id, token_id, description, currency, day_gross_minor,
    day_net_minor, day_tax_minor, days, state, period_start, next_day, next_due_at,
    credited_minor, created_at)
  SELECT rental_id, org_id, NULL, description, 'RUB', gross, net, tax, days, 'running', started, 1,
    started + interval '24 hours', 0, started - interval '1 hour'
  FROM seed_rentals;
INSERT INTO billing_holds (id, rental_id, org_id, token_id, first_day, days, day_gross_minor,
    amount_minor, captured_minor, released_minor, created_at, resolved_at)
  SELECT k, rental_id, org_id, NULL, 0, days, gross, gross * days, gross, 0,
    started - interval '1 hour', NULL
  FROM seed_rentals;
INSERT INTO ledger_transactions (id, idempotency_key, kind, org_id, rental_id, description,
    currency, at, actor_user_id)
  SELECT orgs + k, 'hold:' || k, 'hold', org_id, rental_id,
    'Held for ' || days || ' days of ' || description, 'RUB', started - interval '1 hour', NULL
  FROM seed_rentals;

-- start() at P: day 0 captured (held −x, revenue +x), charged, and added to the draft.
INSERT INTO ledger_transactions (id, idempotency_key, kind, org_id, rental_id, description,
    currency, at, actor_user_id)
  SELECT orgs + n + k, 'capture:' || rental_id || ':0', 'capture', org_id, rental_id,
    'Day 1 of ' || description, 'RUB', started, NULL
  FROM seed_rentals;

-- The entries of all three kinds of posting, in the order Ledger::post writes them. Each org
-- is funded with 100,000,000.00, more than its holds.
INSERT INTO ledger_entries (transaction_id, account, org_id, amount_minor)
  SELECT txn, account, org_id, amount FROM (
    SELECT org AS txn, 0 AS pos, 'payments' AS account, NULL AS org_id,
      -10000000000::bigint AS amount FROM seed_orgs
    UNION ALL SELECT org, 1, 'available', org_id, 10000000000 FROM seed_orgs
    UNION ALL SELECT orgs + k, 0, 'available', org_id, -(gross * days) FROM seed_rentals
    UNION ALL SELECT orgs + k, 1, 'held', org_id, gross * days FROM seed_rentals
    UNION ALL SELECT orgs + n + k, 0, 'held', org_id, -gross FROM seed_rentals
    UNION ALL SELECT orgs + n + k, 1, 'revenue', NULL, gross FROM seed_rentals) e
  ORDER BY txn, pos;

INSERT INTO billing_charges (rental_id, day, hold_id, transaction_id, amount_minor, day_start,
    charged_at)
  SELECT rental_id, 0, k, orgs + n + k, gross, started, started FROM seed_rentals;

-- InvoiceStore::add_rental_day: the org's draft of day 0's month (UTC), made by its first
-- capture, with one line per rental of one day, the totals the sums of the lines.
INSERT INTO invoices (id, org_id, period_start, period_end, status, currency, subtotal_minor,
    tax_minor, total_minor, vat_basis_points, created_at)
  SELECT 'inv_' || to_char(month, 'YYYYMM') || lpad(org::text, 16, '0'), org_id, month,
    (month + interval '1 month')::date, 'draft', 'RUB', sum(net), sum(tax), sum(gross), 2000,
    min(started)
  FROM (SELECT *, date_trunc('month', started AT TIME ZONE 'UTC')::date AS month
        FROM seed_rentals) r
  GROUP BY org, org_id, month;
INSERT INTO invoice_lines (invoice_id, kind, rental_id, description, days, unit_net_minor,
    unit_tax_minor, unit_gross_minor, amount_net_minor, tax_minor, amount_minor)
  SELECT i.id, 'rental_days', r.rental_id, r.description, 1, r.net, r.tax, r.gross, r.net, r.tax,
    r.gross
  FROM seed_rentals r JOIN invoices i ON i.org_id = r.org_id
    AND i.period_start = date_trunc('month', r.started AT TIME ZONE 'UTC')::date
  ORDER BY r.k;

SELECT setval('ledger_transactions_id_seq', (SELECT max(id) FROM ledger_transactions));
SELECT setval('billing_holds_id_seq', (SELECT max(id) FROM billing_holds));

COMMIT;
