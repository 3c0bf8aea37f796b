-- Returns, in one row, the signatures of the tenant's episodes (n, n_embedded, newest) and facts
-- (n, n_embedded, newest), as query_signature_episodes and query_signature_facts give them one table at
-- a time: a memory-unit search checks both indexes with one round trip. Params: $user_id.
select
    e.n,
    e.n_embedded,
    e.newest,
    f.n,
    f.n_embedded,
    f.newest
from (
    select
        count(*) as n,
        count(x.embedding) as n_embedded,
        max(x.ingested_at) as newest
    from episodes as x
    where x.user_id = $user_id
) as e,
(
    select
        count(*) as n,
        count(y.embedding) as n_embedded,
        greatest(max(y.last_updated), max(y.created_at)) as newest
    from facts as y
    where y.user_id = $user_id
) as f
