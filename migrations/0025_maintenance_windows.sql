-- Maintenance windows (scheduler/maintenance.h): an admin's planned time when a node is out of
-- service. A window holds every GPU of its node over its period as a rental's allocations do,
-- so the exclusion constraint, the capacity announcements (0010) and every placement count
-- those GPUs as taken; the scheduled rentals it collides with move to other GPUs first.
CREATE TABLE maintenance_windows (
  id text PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes (id),
  period tstzrange NOT NULL CHECK (NOT isempty(period) AND lower_inc(period)
    AND NOT upper_inc(period) AND NOT lower_inf(period) AND NOT upper_inf(period)),
  reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
  created_by text,  -- the admin's user id
  created_at timestamptz NOT NULL,
  -- Cancelled: its allocations are gone and its GPUs free again; the row stays as history.
  cancelled_at timestamptz
);
CREATE INDEX maintenance_windows_by_node ON maintenance_windows (node_id, lower(period));

-- An allocation is a rental's or a window's, never both.
ALTER TABLE allocations ADD COLUMN maintenance_id text
  REFERENCES maintenance_windows (id) ON DELETE CASCADE;
ALTER TABLE allocations DROP CONSTRAINT allocations_pkey;
ALTER TABLE allocations ALTER COLUMN rental_id DROP NOT NULL;
-- compat: allow new-unique: the same columns were the primary key, so every row keeps to it
CREATE UNIQUE INDEX allocations_rental_gpu ON allocations (rental_id, gpu_id);
-- compat: allow new-unique: the column is new and no row has a window yet
CREATE UNIQUE INDEX allocations_maintenance_gpu ON allocations (maintenance_id, gpu_id);
ALTER TABLE allocations ADD CONSTRAINT allocations_one_owner
  CHECK ((rental_id IS NULL) <> (maintenance_id IS NULL)) NOT VALID;
