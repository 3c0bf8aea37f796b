-- Returns no rows, only the columns of archived episodes files (the archive writes every column of the
-- live table): the typed stub that keeps the snapshot's archived_episodes view working before any archive
-- exists. Params: $user_id.
select x.*
from episodes as x
where x.user_id = $user_id
limit 0
