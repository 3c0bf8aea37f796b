-- Returns the base tables of the open store (schema main) that carry a user_id column, by name:
-- every tenant-scoped table a reshard moves. No params.
select c.table_name
from duckdb_columns() as c
join duckdb_tables() as t
    on t.database_name = c.database_name
    and t.schema_name = c.schema_name
    and t.table_name = c.table_name
where c.database_name = current_database()
    and c.schema_name = 'main'
    and c.column_name = 'user_id'
order by c.table_name
