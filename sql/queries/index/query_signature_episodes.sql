-- Returns one row (n, n_embedded, newest) describing the tenant's episodes; the in-memory search
-- index of the tenant is rebuilt when it changes (an update sets changed_at). Params: $user_id.
select
    count(*) as n,
    count(e.embedding) as n_embedded,
    greatest(max(e.ingested_at), max(e.changed_at)) as newest
from episodes as e
where e.user_id = $user_id
