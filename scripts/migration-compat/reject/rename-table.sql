-- expect: rename
ALTER TABLE "health_events" RENAME TO node_health_events;
