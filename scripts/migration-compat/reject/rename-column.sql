-- expect: rename
ALTER TABLE rentals RENAME COLUMN name TO title;
