-- expect: unbatched-write
TRUNCATE webhook_deliveries;
