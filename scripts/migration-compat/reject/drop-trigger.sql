-- expect: drop
-- The previous release's replicas keep their copies true by this announcement.
DROP TRIGGER prices_changed ON prices;
