-- A change to the price list is announced on the catalog's channel, as a change to the GPU
-- models or the images is (0004): every replica's copy of what a booking reads of the
-- catalog (inventory/catalog_copy.h) holds the price list too.
CREATE TRIGGER prices_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON prices
  FOR EACH STATEMENT EXECUTE FUNCTION notify_catalog_changed();
