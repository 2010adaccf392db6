-- expect: unbatched-write
-- Every row in one transaction, locked until it commits.
UPDATE rentals SET name = lower(name);
