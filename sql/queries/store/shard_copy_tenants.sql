-- Copies the rows of $user_ids from the attached source table into {table} of the open store.
-- {table} is a quoted identifier filled in by engram/reshard.py from the catalog (DuckDB cannot
-- bind identifiers); values are bound. Params: $source (e.g. 'shard_src.facts'), $user_ids (list).
insert into {table} by name
select s.*
from query_table($source) as s
where list_contains($user_ids, s.user_id)
