-- Returns every base table of the open store (schema main) with whether it has a user_id column:
-- (table_name, has_user_id), by name. No params.
select
    t.table_name as table_name,
    bool_or(c.column_name = 'user_id') as has_user_id
from information_schema.tables as t
join information_schema.columns as c
    on c.table_catalog = t.table_catalog
    and c.table_schema = t.table_schema
    and c.table_name = t.table_name
where t.table_catalog = current_database()
    and t.table_schema = 'main'
    and t.table_type = 'BASE TABLE'
group by t.table_name
order by t.table_name
