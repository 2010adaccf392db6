-- Capacity announcements name the node that changed. Each replica keeps the candidates the
-- availability calendar and the offers count in memory (scheduler/capacity_index.h) and
-- reloads only the nodes named on `gpurent_capacity`; a payload of '*' means "everything may
-- have changed" (a TRUNCATE). These row triggers replace 0009's statement triggers, which
-- named only the table, so that one booking reloads one node instead of the whole fleet.
--
-- PostgreSQL folds identical notifications of one transaction into one, so a booking of eight
-- GPUs, or a link matrix rewritten row by row, announces its node once. Updates announce only
-- when a column that decides capacity really changed: a heartbeat, which touches nodes'
-- last_heartbeat_at, or a health report that repeats the stored health, announces nothing.

DROP TRIGGER allocations_capacity_changed ON allocations;
DROP TRIGGER nodes_capacity_changed ON nodes;
DROP TRIGGER gpus_capacity_changed ON gpus;
DROP TRIGGER gpu_links_capacity_changed ON gpu_links;
DROP FUNCTION notify_capacity_changed();

-- A node row names itself; gpus and gpu_links rows carry their node. An update that moves a
-- row to another node (which nothing does today) changes both.
CREATE FUNCTION notify_row_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- One IF per table: PL/pgSQL resolves a record's fields when it first runs an expression,
  -- so an expression naming node_id must never run for a nodes row.
  IF TG_TABLE_NAME = 'nodes' THEN
    IF TG_OP <> 'INSERT' THEN
      PERFORM pg_notify('gpurent_capacity', OLD.id);
    END IF;
    IF TG_OP <> 'DELETE' THEN
      PERFORM pg_notify('gpurent_capacity', NEW.id);
    END IF;
  ELSE
    IF TG_OP <> 'INSERT' THEN
      PERFORM pg_notify('gpurent_capacity', OLD.node_id);
    END IF;
    IF TG_OP <> 'DELETE' THEN
      PERFORM pg_notify('gpurent_capacity', NEW.node_id);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

-- An allocation names its GPU, whose row names the node.
CREATE FUNCTION notify_allocation_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  node text;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    SELECT g.node_id INTO node FROM gpus g WHERE g.id = OLD.gpu_id;
    IF node IS NOT NULL THEN
      PERFORM pg_notify('gpurent_capacity', node);
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    SELECT g.node_id INTO node FROM gpus g WHERE g.id = NEW.gpu_id;
    IF node IS NOT NULL THEN
      PERFORM pg_notify('gpurent_capacity', node);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION notify_all_capacity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_capacity', '*');
  RETURN NULL;
END
$$;

CREATE TRIGGER allocations_capacity_written
  AFTER INSERT OR DELETE ON allocations
  FOR EACH ROW EXECUTE FUNCTION notify_allocation_node_changed();
CREATE TRIGGER allocations_capacity_updated
  AFTER UPDATE ON allocations
  FOR EACH ROW WHEN (OLD.period IS DISTINCT FROM NEW.period OR OLD.gpu_id <> NEW.gpu_id)
  EXECUTE FUNCTION notify_allocation_node_changed();

CREATE TRIGGER nodes_capacity_written
  AFTER INSERT OR DELETE ON nodes
  FOR EACH ROW EXECUTE FUNCTION notify_row_node_changed();
CREATE TRIGGER nodes_capacity_updated
  AFTER UPDATE ON nodes
  FOR EACH ROW WHEN ((OLD.state, OLD.health, OLD.site_id, OLD.gpu_model, OLD.gpu_count,
    OLD.interconnect) IS DISTINCT FROM (NEW.state, NEW.health, NEW.site_id, NEW.gpu_model,
    NEW.gpu_count, NEW.interconnect))
  EXECUTE FUNCTION notify_row_node_changed();

CREATE TRIGGER gpus_capacity_written
  AFTER INSERT OR DELETE ON gpus
  FOR EACH ROW EXECUTE FUNCTION notify_row_node_changed();
CREATE TRIGGER gpus_capacity_updated
  AFTER UPDATE ON gpus
  FOR EACH ROW WHEN ((OLD.health, OLD.idx, OLD.node_id) IS DISTINCT FROM
    (NEW.health, NEW.idx, NEW.node_id))
  EXECUTE FUNCTION notify_row_node_changed();

CREATE TRIGGER gpu_links_capacity_written
  AFTER INSERT OR DELETE OR UPDATE ON gpu_links
  FOR EACH ROW EXECUTE FUNCTION notify_row_node_changed();

-- A site's time zone moves its midnights, hence every calendar there.
CREATE TRIGGER sites_capacity_updated
  AFTER UPDATE OF timezone ON sites
  FOR EACH STATEMENT EXECUTE FUNCTION notify_all_capacity_changed();

CREATE TRIGGER allocations_capacity_truncated
  AFTER TRUNCATE ON allocations
  FOR EACH STATEMENT EXECUTE FUNCTION notify_all_capacity_changed();
CREATE TRIGGER nodes_capacity_truncated
  AFTER TRUNCATE ON nodes
  FOR EACH STATEMENT EXECUTE FUNCTION notify_all_capacity_changed();
CREATE TRIGGER gpus_capacity_truncated
  AFTER TRUNCATE ON gpus
  FOR EACH STATEMENT EXECUTE FUNCTION notify_all_capacity_changed();
CREATE TRIGGER gpu_links_capacity_truncated
  AFTER TRUNCATE ON gpu_links
  FOR EACH STATEMENT EXECUTE FUNCTION notify_all_capacity_changed();
