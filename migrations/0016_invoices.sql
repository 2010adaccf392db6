-- Monthly invoices (billing/invoice_store.h): one per org and calendar month of the site's
-- time zone, a draft that each charged rental-day and each SLA credit adds to, issued once
-- its month has ended with the next gap-free number of its year. Money is integer minor
-- units of the invoice's one currency; rentals are known by id only (no foreign key: the
-- invoice outlives whatever happens to the rental). An issued invoice is a legal document:
-- the database itself refuses to edit it, and a correction is a new document.

CREATE TABLE invoices (
  id text PRIMARY KEY,
  -- No cascade: an org with invoices cannot be deleted out from under them.
  org_id text NOT NULL REFERENCES orgs (id),
  -- The calendar month, half-open: [first day, first day of the next month).
  period_start date NOT NULL CHECK (extract(day FROM period_start) = 1),
  period_end date NOT NULL,
  status text NOT NULL CHECK (status IN ('draft', 'issued', 'paid', 'void')),
  -- YYYY-NNNNNN, the year being the one the month belongs to; more digits after the
  -- millionth invoice of a year rather than a repeated number.
  number text UNIQUE,
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- Net, the tax on it, and gross. Each line carries its own per-unit tax, so the tax shown
  -- is the sum of the lines' tax, never the rate applied to the subtotal again.
  subtotal_minor bigint NOT NULL,
  tax_minor bigint NOT NULL,
  total_minor bigint NOT NULL,
  -- The VAT rate shown on the invoice, in hundredths of a percent (2000 = 20.00%).
  vat_basis_points integer NOT NULL CHECK (vat_basis_points BETWEEN 0 AND 10000),
  created_at timestamptz NOT NULL,
  issued_at timestamptz,
  UNIQUE (org_id, period_start),
  CHECK (period_end = (period_start + interval '1 month')::date),
  CHECK (subtotal_minor + tax_minor = total_minor),
  -- A number and an issue time exactly when the invoice has left the draft state.
  CHECK ((status = 'draft') = (number IS NULL)),
  CHECK ((status = 'draft') = (issued_at IS NULL)),
  CHECK (number IS NULL OR (number ~ '^[0-9]{4}-[0-9]{6,}$'
    AND left(number, 4) = extract(year FROM period_start)::integer::text))
);
-- The org's invoices, newest month first (the listing's keyset).
CREATE INDEX invoices_org_period_idx ON invoices (org_id, period_start DESC, id DESC);
-- The finaliser: drafts in the order it issues them, oldest month first, so each batch's
-- claim reads its rows off the front of the index and stops.
CREATE INDEX invoices_drafts_idx ON invoices (period_start, created_at, id)
  WHERE status = 'draft';

CREATE TABLE invoice_lines (
  -- Lines are shown in the order they were added; an identity never collides between two
  -- transactions adding lines to one draft at once, where max(line) + 1 would.
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  invoice_id text NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('rental_days', 'sla_credit')),
  rental_id text NOT NULL CHECK (length(rental_id) BETWEEN 1 AND 64),
  description text NOT NULL CHECK (length(description) BETWEEN 1 AND 500),
  days integer NOT NULL,
  -- One unit: a day's price for rental_days, the whole credit for sla_credit.
  unit_net_minor bigint NOT NULL,
  unit_tax_minor bigint NOT NULL,
  unit_gross_minor bigint NOT NULL,
  amount_net_minor bigint NOT NULL,
  tax_minor bigint NOT NULL,
  amount_minor bigint NOT NULL,
  CHECK (unit_net_minor + unit_tax_minor = unit_gross_minor),
  CHECK (amount_net_minor + tax_minor = amount_minor),
  -- A rental's days at one price: every amount is days times its unit. A credit: no days,
  -- negative, its amounts its unit.
  CHECK (CASE kind
    WHEN 'rental_days' THEN days >= 1 AND unit_net_minor >= 0 AND unit_tax_minor >= 0
      AND amount_net_minor = days * unit_net_minor AND tax_minor = days * unit_tax_minor
      AND amount_minor = days * unit_gross_minor
    ELSE days = 0 AND amount_minor < 0 AND amount_net_minor <= 0 AND tax_minor <= 0
      AND unit_net_minor = amount_net_minor AND unit_tax_minor = tax_minor
      AND unit_gross_minor = amount_minor
  END)
);
CREATE INDEX invoice_lines_invoice_idx ON invoice_lines (invoice_id, id);
-- One rental_days line per rental and price on an invoice: the key each charged day's
-- INSERT … ON CONFLICT adds to, so concurrent charges of one rental meet on one row.
CREATE UNIQUE INDEX invoice_lines_rental_day_key ON invoice_lines (invoice_id, rental_id,
  unit_gross_minor) WHERE kind = 'rental_days';

-- The last number given in each year. Its row is locked from the number's taking until the
-- issuing transaction ends, so numbers are gap-free (a rolled-back issue gives its numbers
-- back) and unique across replicas.
CREATE TABLE invoice_numbers (
  year integer PRIMARY KEY CHECK (year BETWEEN 1000 AND 9999),
  last_number integer NOT NULL CHECK (last_number >= 1)
);

-- A draft may change freely, and leaves that state only for issued, with totals that are
-- the sums of its lines. After that only the status moves, issued → paid or void, and the
-- invoice cannot be deleted. The errors are check violations naming a constraint, as the
-- application's typed errors expect (core/db_errors.h).
CREATE FUNCTION invoices_final_once_issued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  net bigint;
  tax bigint;
  gross bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.status <> 'draft' THEN
      RAISE EXCEPTION USING ERRCODE = 'check_violation',
        CONSTRAINT = 'invoices_final_once_issued',
        MESSAGE = format('invoice %s is %s and cannot be deleted;'
          ' violates check constraint "invoices_final_once_issued"', OLD.id, OLD.status);
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status = 'draft' THEN
    IF NEW.status = 'issued' THEN
      SELECT coalesce(sum(l.amount_net_minor), 0), coalesce(sum(l.tax_minor), 0),
          coalesce(sum(l.amount_minor), 0)
        INTO net, tax, gross FROM invoice_lines l WHERE l.invoice_id = NEW.id;
      IF (net, tax, gross) <> (NEW.subtotal_minor, NEW.tax_minor, NEW.total_minor) THEN
        RAISE EXCEPTION USING ERRCODE = 'check_violation',
          CONSTRAINT = 'invoices_totals_are_lines',
          MESSAGE = format('invoice %s totals %s + %s = %s, its lines %s + %s = %s;'
            ' violates check constraint "invoices_totals_are_lines"', NEW.id,
            NEW.subtotal_minor, NEW.tax_minor, NEW.total_minor, net, tax, gross);
      END IF;
    ELSIF NEW.status <> 'draft' THEN
      RAISE EXCEPTION USING ERRCODE = 'check_violation',
        CONSTRAINT = 'invoices_final_once_issued',
        MESSAGE = format('invoice %s is a draft and can only be issued, not %s;'
          ' violates check constraint "invoices_final_once_issued"', OLD.id, NEW.status);
    END IF;
    RETURN NEW;
  END IF;
  IF OLD.status = 'issued' AND NEW.status IN ('paid', 'void')
      AND to_jsonb(NEW) - 'status' = to_jsonb(OLD) - 'status' THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'check_violation',
    CONSTRAINT = 'invoices_final_once_issued',
    MESSAGE = format('invoice %s is %s: only its status may move, from issued to paid or void;'
      ' violates check constraint "invoices_final_once_issued"', OLD.id, OLD.status);
END $$;
CREATE TRIGGER invoices_final_once_issued BEFORE UPDATE OR DELETE ON invoices
  FOR EACH ROW EXECUTE FUNCTION invoices_final_once_issued();

-- Lines change only while their invoice is a draft: no line is added to, changed on, moved
-- to or from, or deleted from an issued invoice. FOR SHARE waits for a transaction issuing
-- the invoice at that moment and then sees its status, so none slips in beside the issue.
CREATE FUNCTION invoice_lines_final_once_issued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s text;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    SELECT status INTO s FROM invoices WHERE id = OLD.invoice_id FOR SHARE;
    IF s <> 'draft' THEN
      RAISE EXCEPTION USING ERRCODE = 'check_violation',
        CONSTRAINT = 'invoice_lines_final_once_issued',
        MESSAGE = format('invoice %s is %s: its lines cannot change;'
          ' violates check constraint "invoice_lines_final_once_issued"', OLD.invoice_id, s);
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT status INTO s FROM invoices WHERE id = NEW.invoice_id FOR SHARE;
    IF s <> 'draft' THEN
      RAISE EXCEPTION USING ERRCODE = 'check_violation',
        CONSTRAINT = 'invoice_lines_final_once_issued',
        MESSAGE = format('invoice %s is %s: no line can be added;'
          ' violates check constraint "invoice_lines_final_once_issued"', NEW.invoice_id, s);
    END IF;
    RETURN NEW;
  END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER invoice_lines_final_once_issued BEFORE INSERT OR UPDATE OR DELETE
  ON invoice_lines FOR EACH ROW EXECUTE FUNCTION invoice_lines_final_once_issued();
