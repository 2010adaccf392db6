-- expect: drop
DROP TABLE IF EXISTS public.health_events;
