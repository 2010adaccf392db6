-- A change to the webhooks (one created, deleted, disabled) is announced, so that every
-- replica's copy of who subscribes to what (webhooks/subscription_copy.h) forgets it.
CREATE FUNCTION notify_webhooks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_webhooks', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER webhooks_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhooks_changed();
