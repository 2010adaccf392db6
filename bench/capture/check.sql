-- What must hold once a day's capture of the seed (seed.sql) has run, checked after every run
-- by bench/capture_benchmark.cpp and bench/capture/run.sh: one row for each check that fails
-- (with how many rows or minor units are wrong), none when the day is charged exactly once for
-- every rental and the ledger is sound as billing's tests define it
-- (billing/tests/billing_fixture.h, expect_ledger_sound).
SELECT what, n FROM (VALUES
  ('rentals whose day 1 is not charged',
   (SELECT count(*) FROM billing_rentals r WHERE NOT EXISTS
     (SELECT 1 FROM billing_charges c WHERE c.rental_id = r.rental_id AND c.day = 1))),
  ('charged days more, or fewer, than two per rental',
   (SELECT count(*) FROM billing_charges) - 2 * (SELECT count(*) FROM billing_rentals)),
  ('meters not moved on to day 2',
   (SELECT count(*) FROM billing_rentals WHERE next_day <> 2
     OR next_due_at IS DISTINCT FROM period_start + interval '48 hours')),
  ('capture postings that are not one charged day each',
   (SELECT count(*) FROM ledger_transactions WHERE kind = 'capture')
     - (SELECT count(*) FROM billing_charges WHERE amount_minor > 0)),
  ('ledger transactions that do not sum to zero',
   (SELECT count(*) FROM (SELECT transaction_id FROM ledger_entries GROUP BY transaction_id
     HAVING sum(amount_minor) <> 0 OR count(*) < 2) x)),
  ('minor units the whole ledger is off zero',
   (SELECT coalesce(sum(amount_minor), 0)::bigint FROM ledger_entries)),
  ('balances that are not the replay of their entries',
   (SELECT count(*) FROM billing_accounts a LEFT JOIN (SELECT org_id,
       sum(amount_minor) FILTER (WHERE account = 'available') AS available,
       sum(amount_minor) FILTER (WHERE account = 'held') AS held
     FROM ledger_entries WHERE org_id IS NOT NULL GROUP BY org_id) e ON e.org_id = a.org_id
    WHERE a.available_minor <> coalesce(e.available, 0) OR a.held_minor <> coalesce(e.held, 0))),
  ('held balances that the open holds do not account for',
   (SELECT count(*) FROM billing_accounts a LEFT JOIN (SELECT org_id,
       sum(amount_minor - captured_minor - released_minor) AS open FROM billing_holds
     GROUP BY org_id) h ON h.org_id = a.org_id WHERE a.held_minor <> coalesce(h.open, 0))),
  ('holds whose captures are not their charges',
   (SELECT count(*) FROM billing_holds h LEFT JOIN (SELECT hold_id, sum(amount_minor) AS charged
     FROM billing_charges GROUP BY hold_id) c ON c.hold_id = h.id
    WHERE h.captured_minor <> coalesce(c.charged, 0))),
  ('invoices whose totals are not the sums of their lines',
   (SELECT count(*) FROM invoices i LEFT JOIN (SELECT invoice_id, sum(amount_net_minor) AS net,
       sum(tax_minor) AS tax, sum(amount_minor) AS gross FROM invoice_lines GROUP BY invoice_id) l
     ON l.invoice_id = i.id
    WHERE (i.subtotal_minor, i.tax_minor, i.total_minor) IS DISTINCT FROM (l.net, l.tax, l.gross))),
  ('minor units charged but not on the invoices',
   (SELECT coalesce(sum(amount_minor), 0)::bigint FROM billing_charges)
     - (SELECT coalesce(sum(amount_minor), 0)::bigint FROM invoice_lines
        WHERE kind = 'rental_days'))
) AS c (what, n)
WHERE n <> 0;
