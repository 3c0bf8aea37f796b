-- Returns the distinct tenants (user_id) with rows in one table. Params: $table (a table name
-- from shard_tenant_tables, optionally qualified by an attached database, e.g. 'shard_src.facts').
select distinct t.user_id
from query_table($table) as t
order by t.user_id
