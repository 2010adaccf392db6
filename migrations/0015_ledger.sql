-- Money (DESIGN.md "Money"): a double-entry ledger in integer minor units, the holds a
-- booking places, the rental-days captured from them, and each org's balances. The database
-- itself keeps the ledger honest: every transaction sums to zero at commit, no entry is ever
-- changed or deleted (a correction is a reversing transaction), a rental-day is charged once
-- and a hold resolves once, whatever the application does.

-- One posting: its idempotency key makes a retried or repeated posting (a webhook delivered
-- twice, a capture run on two replicas) add nothing the second time.
CREATE TABLE ledger_transactions (
  id bigserial PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE CHECK (length(idempotency_key) BETWEEN 1 AND 200),
  kind text NOT NULL CHECK (kind IN ('top_up', 'credit', 'refund', 'hold', 'release',
    'capture', 'sla_credit', 'reversal')),
  -- The org whose money moved (every posting so far concerns exactly one), and the rental
  -- it was for, if any.
  org_id text NOT NULL REFERENCES orgs (id),
  rental_id text,
  description text NOT NULL CHECK (length(description) BETWEEN 1 AND 500),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  at timestamptz NOT NULL,
  -- Who caused it: a user (admin credit, booking), or NULL for the system's own jobs and the
  -- payment provider.
  actor_user_id text
);
-- The org's history, newest first (GET /v1/billing/transactions).
CREATE INDEX ledger_transactions_org_idx ON ledger_transactions (org_id, id DESC);
CREATE INDEX ledger_transactions_rental_idx ON ledger_transactions (rental_id)
  WHERE rental_id IS NOT NULL;

-- The accounts an entry moves: an org's `available` money and the part of it `held` for
-- booked days, and the platform's `payments` (money received), `revenue` (days delivered)
-- and `grants` (money given: goodwill and SLA credits). Signed amounts: a top-up is
-- payments −x, available +x; a hold available −x, held +x; a capture held −x, revenue +x.
CREATE TABLE ledger_entries (
  id bigserial PRIMARY KEY,
  transaction_id bigint NOT NULL REFERENCES ledger_transactions (id),
  account text NOT NULL CHECK (account IN ('available', 'held', 'payments', 'revenue',
    'grants')),
  -- The org of an org account; NULL for the platform's.
  org_id text REFERENCES orgs (id),
  amount_minor bigint NOT NULL CHECK (amount_minor <> 0),
  CHECK ((org_id IS NOT NULL) = (account IN ('available', 'held')))
);
CREATE INDEX ledger_entries_transaction_idx ON ledger_entries (transaction_id);
CREATE INDEX ledger_entries_org_idx ON ledger_entries (org_id, account) WHERE org_id IS NOT NULL;

-- Each org's balances, kept by the trigger below from the entries themselves, so they are
-- always the replay of the ledger; the row is also what a booking locks to check and take
-- the money, so two bookings of one org on two replicas cannot both spend the same balance.
-- credit_limit_minor: how far below zero `available` may go (postpaid trust set by an admin;
-- 0 is strictly prepaid).
CREATE TABLE billing_accounts (
  org_id text PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
  available_minor bigint NOT NULL DEFAULT 0,
  held_minor bigint NOT NULL DEFAULT 0 CHECK (held_minor >= 0),
  credit_limit_minor bigint NOT NULL DEFAULT 0 CHECK (credit_limit_minor >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION ledger_entry_applied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.org_id IS NULL THEN
    RETURN NULL;
  END IF;
  -- An update first: an insert's proposed row must pass the CHECKs on its own, which a
  -- negative held change never would, even where it meets a row it would update.
  UPDATE billing_accounts SET
    available_minor = available_minor
      + CASE WHEN NEW.account = 'available' THEN NEW.amount_minor ELSE 0 END,
    held_minor = held_minor + CASE WHEN NEW.account = 'held' THEN NEW.amount_minor ELSE 0 END,
    updated_at = now()
  WHERE org_id = NEW.org_id;
  IF NOT FOUND THEN
    INSERT INTO billing_accounts AS a (org_id, available_minor, held_minor)
    VALUES (NEW.org_id,
            CASE WHEN NEW.account = 'available' THEN NEW.amount_minor ELSE 0 END,
            CASE WHEN NEW.account = 'held' THEN NEW.amount_minor ELSE 0 END)
    ON CONFLICT (org_id) DO UPDATE SET
      available_minor = a.available_minor + EXCLUDED.available_minor,
      held_minor = a.held_minor + EXCLUDED.held_minor,
      updated_at = now();
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entry_applied();

-- Every transaction sums to zero and has at least two entries, checked at commit (deferred,
-- so the entries of one posting may be inserted one by one). Fires for each new entry and
-- each new transaction, so neither an unbalanced posting nor an entry added later to an old
-- one can commit.
CREATE FUNCTION ledger_transaction_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  txn bigint;
  total numeric;
  n bigint;
BEGIN
  -- Each branch names a column only its own table has (PL/pgSQL resolves them when run).
  IF TG_TABLE_NAME = 'ledger_entries' THEN
    txn := NEW.transaction_id;
  ELSE
    txn := NEW.id;
  END IF;
  SELECT coalesce(sum(amount_minor), 0), count(*) INTO total, n
    FROM ledger_entries WHERE transaction_id = txn;
  IF total <> 0 OR n < 2 THEN
    RAISE EXCEPTION 'ledger transaction % does not balance (sum %, % entries)', txn, total, n
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced();
CREATE CONSTRAINT TRIGGER ledger_transactions_balanced AFTER INSERT ON ledger_transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced();

-- Posted is final: a correction is a reversing transaction, never an edit.
CREATE FUNCTION ledger_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
  FOR EACH ROW EXECUTE FUNCTION ledger_is_append_only();
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_is_append_only();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_is_append_only();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_is_append_only();

-- What billing knows of a rental: who pays, what a day costs it (gross, as charged) and how
-- that splits into net and tax for the invoice, how many days it has, and from when its days
-- count once it runs. `next_day` is the first day not yet captured; `next_due_at` when it
-- starts (NULL unless the rental is running), which is what the capture job scans.
CREATE TABLE billing_rentals (
  rental_id text PRIMARY KEY,
  org_id text NOT NULL REFERENCES orgs (id),
  token_id text,
  description text NOT NULL,
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  day_gross_minor bigint NOT NULL CHECK (day_gross_minor >= 0),
  day_net_minor bigint NOT NULL,
  day_tax_minor bigint NOT NULL,
  days integer NOT NULL CHECK (days >= 1),
  state text NOT NULL CHECK (state IN ('held', 'running', 'settled')),
  period_start timestamptz,
  next_day integer NOT NULL DEFAULT 0 CHECK (next_day >= 0),
  next_due_at timestamptz,
  -- The SLA credit given for its interruption, once.
  credited_minor bigint NOT NULL DEFAULT 0 CHECK (credited_minor >= 0),
  created_at timestamptz NOT NULL,
  CHECK (day_net_minor + day_tax_minor = day_gross_minor),
  CHECK (next_day <= days),
  CHECK ((next_due_at IS NULL) OR state = 'running'),
  CHECK (state = 'held' OR period_start IS NOT NULL OR state = 'settled')
);
CREATE INDEX billing_rentals_due_idx ON billing_rentals (next_due_at) WHERE next_due_at IS NOT NULL;

-- Money reserved for a run of a rental's days: the booking's, and one more per extension.
-- It resolves once: every day of it is captured or released, never both, never twice.
CREATE TABLE billing_holds (
  id bigserial PRIMARY KEY,
  rental_id text NOT NULL REFERENCES billing_rentals (rental_id),
  org_id text NOT NULL REFERENCES orgs (id),
  token_id text,  -- the API token the booking came through: its spend limit counts this
  first_day integer NOT NULL CHECK (first_day >= 0),
  days integer NOT NULL CHECK (days >= 1),
  day_gross_minor bigint NOT NULL CHECK (day_gross_minor >= 0),
  amount_minor bigint NOT NULL,
  captured_minor bigint NOT NULL DEFAULT 0 CHECK (captured_minor >= 0),
  released_minor bigint NOT NULL DEFAULT 0 CHECK (released_minor >= 0),
  created_at timestamptz NOT NULL,
  resolved_at timestamptz,
  CHECK (amount_minor = day_gross_minor * days),
  CHECK (captured_minor + released_minor <= amount_minor),
  CHECK (resolved_at IS NULL OR captured_minor + released_minor = amount_minor),
  UNIQUE (rental_id, first_day)
);
CREATE INDEX billing_holds_rental_idx ON billing_holds (rental_id) WHERE resolved_at IS NULL;
-- Spend limits count what an org (or a token) committed in a calendar month.
CREATE INDEX billing_holds_org_month_idx ON billing_holds (org_id, created_at);
CREATE INDEX billing_holds_token_month_idx ON billing_holds (token_id, created_at)
  WHERE token_id IS NOT NULL;

-- One row per rental-day charged: the primary key is what makes a day billed once, even if
-- two replicas' capture jobs, or a retry, reach it together.
CREATE TABLE billing_charges (
  rental_id text NOT NULL REFERENCES billing_rentals (rental_id),
  day integer NOT NULL CHECK (day >= 0),
  hold_id bigint NOT NULL REFERENCES billing_holds (id),
  -- The capture's posting; none for a day that costs nothing (no money moved).
  transaction_id bigint REFERENCES ledger_transactions (id),
  amount_minor bigint NOT NULL CHECK (amount_minor >= 0),
  day_start timestamptz NOT NULL,
  charged_at timestamptz NOT NULL,
  PRIMARY KEY (rental_id, day),
  CHECK ((transaction_id IS NULL) = (amount_minor = 0))
);

-- Payments the provider announced, by its own id: a delivery repeated (the provider retries
-- until it hears 2xx) is answered as the first and credits nothing more.
CREATE TABLE billing_payments (
  payment_id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('payment.succeeded', 'payment.refunded')),
  org_id text NOT NULL REFERENCES orgs (id),
  amount_minor bigint NOT NULL CHECK (amount_minor > 0),
  currency text NOT NULL,
  transaction_id bigint NOT NULL REFERENCES ledger_transactions (id),
  received_at timestamptz NOT NULL,
  body_sha256 text NOT NULL
);
