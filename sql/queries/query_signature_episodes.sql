-- Returns one row (n, n_embedded, newest) describing the tenant's episodes; the in-memory search
-- index of the tenant is rebuilt when it changes. Params: $user_id.
select
    count(*) as n,
    count(e.embedding) as n_embedded,
    max(e.ingested_at) as newest
from episodes as e
where e.user_id = $user_id
