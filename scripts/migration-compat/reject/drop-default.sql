-- expect: drop
-- The previous release inserts nodes without ssh_port and relies on the default.
ALTER TABLE nodes ALTER COLUMN ssh_port DROP DEFAULT;
