-- Each telemetry sample keeps its GPUs' SM clocks (clocks.current.sm, MHz), beside the
-- throttle reasons, so the tenant's telemetry shows when and how far the clocks fell. NULL in
-- rows written before; an element is NULL for a GPU that did not report one.
ALTER TABLE node_telemetry_samples ADD COLUMN sm_clock_mhz integer[];
ALTER TABLE rental_telemetry_samples ADD COLUMN sm_clock_mhz integer[];
