-- Keeps item_counts equal to count(*) of items, in the same transaction as every insert and
-- delete. Statement-level triggers with transition tables: a bulk insert of a million rows
-- touches the counter once, not a million times. Each backend writes the shard of its own
-- pid, so concurrent writers rarely wait on one another, and a transaction only ever locks
-- one counter row (no deadlock between counter rows).
CREATE FUNCTION item_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT count(*) INTO delta FROM inserted_items;
  ELSE
    SELECT -count(*) INTO delta FROM deleted_items;
  END IF;
  IF delta <> 0 THEN
    INSERT INTO item_counts AS c (shard, n) VALUES (pg_backend_pid() % 16, delta)
      ON CONFLICT (shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION item_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE item_counts SET n = 0;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER items_count_insert AFTER INSERT ON items
  REFERENCING NEW TABLE AS inserted_items FOR EACH STATEMENT EXECUTE FUNCTION item_counts_add();
--> statement-breakpoint
CREATE TRIGGER items_count_delete AFTER DELETE ON items
  REFERENCING OLD TABLE AS deleted_items FOR EACH STATEMENT EXECUTE FUNCTION item_counts_add();
--> statement-breakpoint
CREATE TRIGGER items_count_truncate AFTER TRUNCATE ON items
  FOR EACH STATEMENT EXECUTE FUNCTION item_counts_reset();
--> statement-breakpoint
-- After the triggers, whose creation locks out concurrent writers until this migration
-- commits, so the starting count cannot miss a row.
INSERT INTO item_counts (shard, n) SELECT 0, count(*) FROM items
  ON CONFLICT (shard) DO UPDATE SET n = EXCLUDED.n;
--> statement-breakpoint
INSERT INTO item_counts (shard, n) SELECT g, 0 FROM generate_series(1, 15) AS g
  ON CONFLICT (shard) DO NOTHING;
