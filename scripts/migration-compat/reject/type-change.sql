-- expect: type-change
ALTER TABLE rentals ALTER COLUMN days TYPE bigint;
