-- Returns no rows, only the columns of archived fact_sources files (the archive writes every column of the
-- live table): the typed stub that keeps the snapshot's archived_fact_sources view working before any archive
-- exists. Params: $user_id.
select x.*
from fact_sources as x
where x.user_id = $user_id
limit 0
