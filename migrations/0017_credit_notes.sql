-- Credit notes: an issued invoice is never edited; a correction is a document of its own that
-- refers to it, issued at once with the next number of the same gap-free series, with one
-- negative line. The money it gives back is a ledger posting in the same transaction
-- (billing/invoice_store.h, billing/top_ups.h).

ALTER TABLE invoices
  ADD COLUMN kind text NOT NULL DEFAULT 'invoice' CHECK (kind IN ('invoice', 'credit_note')),
  -- The invoice a credit note corrects; an issued invoice of the same org.
  ADD COLUMN corrects_invoice_id text REFERENCES invoices (id),
  ADD CHECK ((kind = 'credit_note') = (corrects_invoice_id IS NOT NULL)),
  -- A credit note gives back: never more than nothing.
  ADD CHECK (kind = 'invoice' OR total_minor < 0 OR status = 'draft');

-- One invoice per org and month still; credit notes share their invoice's month.
ALTER TABLE invoices DROP CONSTRAINT invoices_org_id_period_start_key;
CREATE UNIQUE INDEX invoices_org_month_key ON invoices (org_id, period_start)
  WHERE kind = 'invoice';
CREATE INDEX invoices_corrects_idx ON invoices (corrects_invoice_id)
  WHERE corrects_invoice_id IS NOT NULL;

-- A credit note's line: no days, negative, as an SLA credit's.
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_kind_check;
ALTER TABLE invoice_lines ADD CONSTRAINT invoice_lines_kind_check
  CHECK (kind IN ('rental_days', 'sla_credit', 'correction'));
