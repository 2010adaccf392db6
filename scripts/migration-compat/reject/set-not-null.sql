-- expect: set-not-null
ALTER TABLE rentals ALTER COLUMN name SET NOT NULL;
