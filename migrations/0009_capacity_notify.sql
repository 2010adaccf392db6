-- The availability calendar is served from each replica's memory (api: the capacity cache)
-- and dropped when what it counts changes: allocations (bookings, ends, cancellations), the
-- nodes and GPUs that may take them (state, health, link matrix). One notification per
-- statement, in the change's own transaction, whoever makes it.
CREATE FUNCTION notify_capacity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_capacity', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE TRIGGER allocations_capacity_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON allocations
  FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity_changed();
CREATE TRIGGER nodes_capacity_changed
  AFTER INSERT OR UPDATE OF state, health, site_id, gpu_model, gpu_count, interconnect
  OR DELETE OR TRUNCATE ON nodes
  FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity_changed();
CREATE TRIGGER gpus_capacity_changed
  AFTER INSERT OR UPDATE OF health OR DELETE OR TRUNCATE ON gpus
  FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity_changed();
CREATE TRIGGER gpu_links_capacity_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_links
  FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity_changed();
