-- Returns the number of rows of one tenant in one table. Params: $table (a catalog table name), $user_id.
select count(*) as n
from query_table($table) as t
where t.user_id = $user_id
