-- As for event.seq (V3): a large cache spares a sequence write per 32 changes; gaps after a crash
-- are harmless, and one writer thread takes values in commit order.
ALTER TABLE crm_change ALTER COLUMN seq SET CACHE 100000;
