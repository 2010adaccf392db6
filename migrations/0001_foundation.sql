-- Foundation: extensions the schema relies on.
-- btree_gist lets exclusion constraints combine equality on ids with range overlap,
-- which is how allocations forbid double booking (DESIGN.md "Data model").
CREATE EXTENSION IF NOT EXISTS btree_gist;
