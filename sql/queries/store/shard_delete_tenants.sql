-- Deletes the rows of $user_ids from {table} of the open store ({table}: a quoted identifier from
-- the catalog, filled in by engram/reshard.py). Params: $user_ids (list).
delete from {table}
where list_contains($user_ids, user_id)
