-- PostgreSQL caches sequence values per session: with a cache above 1, two writers (two commit
-- threads, or two instances) would hand out interleaved ranges, and an event could commit with a
-- number below one already visible, which a poller of GET /v1/events would skip. So the cache
-- stays at 1 here (PostgreSQL's default, stated so that nobody raises it as H2's was raised).
ALTER TABLE event ALTER COLUMN seq SET CACHE 1;
