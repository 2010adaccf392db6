-- A statement the rule forbids, let through with a reason that a reviewer can judge.
-- compat: allow drop: the column was written by no release and read by none
ALTER TABLE nodes DROP COLUMN never_used;
