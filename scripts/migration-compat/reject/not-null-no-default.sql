-- expect: not-null-no-default
ALTER TABLE rentals ADD COLUMN priority integer NOT NULL;
