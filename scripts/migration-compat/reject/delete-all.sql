-- expect: unbatched-write
DELETE FROM audit_log;
