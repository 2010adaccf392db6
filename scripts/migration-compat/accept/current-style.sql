-- The shapes of migrations 0019-0022: new columns with defaults, a bounded move of data,
-- new functions and triggers.
ALTER TABLE gpus ADD COLUMN unwiped_since timestamptz;
ALTER TABLE nodes
  ADD COLUMN ssh_port integer NOT NULL DEFAULT 22 CHECK (ssh_port BETWEEN 1 AND 65535),
  ADD COLUMN ssh_probe_key text
    CHECK (ssh_probe_key IS NULL OR ssh_probe_key ~ '^ssh-ed25519 [A-Za-z0-9+/=]{1,200}$');
UPDATE nodes
   SET ssh_port = (labels->>'ssh_port')::integer, labels = labels - 'ssh_port'
 WHERE labels->>'ssh_port' ~ '^[0-9]{1,5}$';
CREATE FUNCTION notify_webhooks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A body runs later, as the function: its words are not this migration's statements.
  PERFORM pg_notify('gpurent_webhooks', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER webhooks_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhooks_changed();
CREATE TRIGGER prices_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON prices
  FOR EACH STATEMENT EXECUTE FUNCTION notify_catalog_changed();
