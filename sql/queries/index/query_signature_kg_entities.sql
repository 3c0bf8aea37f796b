-- Returns one row (n, n_embedded, newest) describing the tenant's KG entities; the in-memory
-- search index of the tenant is rebuilt when it changes. Params: $user_id.
select
    count(*) as n,
    count(k.embedding) as n_embedded,
    max(k.created_at) as newest
from kg_entities as k
where k.user_id = $user_id
