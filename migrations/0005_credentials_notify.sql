-- Credentials are resolved from memory (api/credential_cache): every change that alters what
-- a token or session may do announces itself on the gpurent_credentials channel, in the
-- change's own transaction, whoever makes it (the API, another replica, an operator with
-- psql). Each replica drops its resolved credentials on the announcement. Only the columns
-- that matter fire: the write-behind of last_used_at / last_seen_at stays silent.

CREATE FUNCTION notify_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gpurent_credentials', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

-- Platform-admin flag, disabled accounts, deleted users.
CREATE TRIGGER users_credentials_changed
  AFTER UPDATE OF is_platform_admin, disabled_at OR DELETE OR TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
-- Joining, role changes, leaving or removal (also when an org or user is deleted).
CREATE TRIGGER memberships_credentials_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memberships
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
-- Revocation, expiry, scopes and guardrails of tokens.
CREATE TRIGGER api_tokens_credentials_changed
  AFTER UPDATE OF revoked_at, expires_at, scopes, max_concurrent_gpus, max_days,
    spend_limit_minor, org_id, created_by OR DELETE OR TRUNCATE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
-- Logout, org switches and expiry of sessions.
CREATE TRIGGER sessions_credentials_changed
  AFTER UPDATE OF current_org_id, expires_at, csrf_token, user_id OR DELETE OR TRUNCATE
  ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
-- Organisation guardrails set by platform admins, and deleted organisations.
CREATE TRIGGER orgs_credentials_changed
  AFTER UPDATE OF max_concurrent_gpus, max_days, spend_limit_minor OR DELETE OR TRUNCATE ON orgs
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials_changed();
