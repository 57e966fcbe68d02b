-- The hosts each secret may be sent to (issue 34, item 5): a JSON array of host names and
-- *.example.com wildcards, checked before every call that carries the secret; NULL allows any host.
ALTER TABLE secret ADD COLUMN allowed_hosts VARCHAR(16384);
