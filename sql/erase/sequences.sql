-- Returns (sequence_name, last_value) of every sequence of one attached database. Params: $database.
select
    s.sequence_name as sequence_name,
    s.last_value as last_value
from duckdb_sequences() as s
where s.database_name = $database
order by s.sequence_name
