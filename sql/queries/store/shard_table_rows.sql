-- Returns the number of rows of one table. Params: $table.
select count(*) as n
from query_table($table) as t
