-- Deletes every row of one tenant from {table} ({table}: a quoted identifier from the catalog, filled in by
-- engram/erase/catalog.py; DuckDB cannot bind a table name). Params: $user_id.
delete from {table}
where user_id = $user_id
