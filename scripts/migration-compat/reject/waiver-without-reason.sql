-- expect: drop
-- A waiver must say why, in three words or more.
-- compat: allow drop: unused
ALTER TABLE nodes DROP COLUMN labels;
