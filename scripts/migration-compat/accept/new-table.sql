-- A table of this migration's own may be shaped as it likes, since no released binary uses it.
CREATE TABLE maintenance_windows (
  id text PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id),
  period tstzrange NOT NULL,
  draft text
);
ALTER TABLE maintenance_windows ADD COLUMN reason text NOT NULL;
ALTER TABLE maintenance_windows DROP COLUMN draft;
ALTER TABLE maintenance_windows ALTER COLUMN reason TYPE varchar(200);
ALTER TABLE maintenance_windows ADD CONSTRAINT maintenance_windows_reason CHECK (reason <> '');
CREATE UNIQUE INDEX maintenance_windows_node_idx ON maintenance_windows (node_id, period);
UPDATE maintenance_windows SET reason = 'none';
CREATE TABLE IF NOT EXISTS "Scratch" (a int);
DROP TABLE "Scratch";
