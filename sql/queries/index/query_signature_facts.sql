-- Returns one row (n, n_embedded, newest) describing the tenant's facts; the in-memory search
-- index of the tenant is rebuilt when it changes (an update sets changed_at). Params: $user_id.
select
    count(*) as n,
    count(f.embedding) as n_embedded,
    greatest(max(f.last_updated), max(f.created_at), max(f.changed_at)) as newest
from facts as f
where f.user_id = $user_id
