-- The audit listings page like every other list (core/paging.h): newest first by (at, id),
-- with a cursor naming the last row's time and id. One index per listing, per org
-- (GET /v1/audit) and across orgs (GET /v1/admin/audit), serves both the order and the
-- cursor's range; the indexes on time alone and on (org, id) serve nothing any more.
DROP INDEX audit_log_org_at_idx;
DROP INDEX audit_log_at_idx;
DROP INDEX audit_log_org_id_idx;

CREATE INDEX audit_log_org_at_id_idx ON audit_log (org_id, at DESC, id DESC);
CREATE INDEX audit_log_at_id_idx ON audit_log (at DESC, id DESC);
