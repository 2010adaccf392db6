-- expect: type-change
-- A waiver covers the rule it names and no other.
-- compat: allow drop: the old binaries never read this column
ALTER TABLE nodes ALTER COLUMN gpu_count TYPE bigint;
