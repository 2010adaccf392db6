-- expect: drop, not-null-no-default
ALTER TABLE images
  ADD COLUMN family text NOT NULL,
  DROP COLUMN frameworks;
