-- expect: opaque
DO $$ BEGIN EXECUTE 'ALTER TABLE nodes DROP COLUMN labels'; END $$;
