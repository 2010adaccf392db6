-- expect: rename
-- compat: allow rename: nothing reads the old name any more
ALTER TABLE nodes ADD COLUMN rack text;
-- The waiver above belongs to the statement just below it, not to this one.
ALTER TABLE nodes RENAME COLUMN hostname TO host;
