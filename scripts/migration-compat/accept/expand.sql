-- Expanding the schema: everything the previous release's binaries keep working beside.
ALTER TABLE nodes ADD COLUMN rack text;
ALTER TABLE nodes ADD COLUMN weight integer NOT NULL DEFAULT 1 CHECK (weight >= 0);
ALTER TABLE rentals
  ADD COLUMN note text,
  ADD COLUMN tags jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE rentals ALTER COLUMN name DROP NOT NULL;
ALTER TABLE rentals ALTER COLUMN name SET DEFAULT 'unnamed';
-- A constraint added without checking the old rows, validated by a later migration.
ALTER TABLE nodes ADD CONSTRAINT nodes_weight_small CHECK (weight < 1000) NOT VALID;
ALTER TABLE nodes VALIDATE CONSTRAINT nodes_weight_small;
ALTER TABLE nodes ADD CONSTRAINT nodes_site_fk FOREIGN KEY (site_id) REFERENCES sites (id) NOT VALID;
-- Loosening: constraints and indexes may go.
ALTER TABLE nodes DROP CONSTRAINT IF EXISTS nodes_old_check;
DROP INDEX IF EXISTS nodes_rack_idx;
CREATE INDEX nodes_rack_idx ON nodes (rack) WHERE rack IS NOT NULL;
-- A bounded backfill.
UPDATE nodes SET rack = labels->>'rack' WHERE labels ? 'rack' AND rack IS NULL;
DELETE FROM idempotency_keys WHERE created_at < now() - interval '30 days';
-- Words in strings and comments are not statements: DROP TABLE rentals;
COMMENT ON COLUMN nodes.rack IS 'DROP TABLE nodes; ALTER TABLE nodes RENAME TO x';
