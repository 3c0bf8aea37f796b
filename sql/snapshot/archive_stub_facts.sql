-- Returns no rows, only the columns of archived facts files (the archive writes every column of the
-- live table): the typed stub that keeps the snapshot's archived_facts view working before any archive
-- exists. Params: $user_id.
select x.*
from facts as x
where x.user_id = $user_id
limit 0
