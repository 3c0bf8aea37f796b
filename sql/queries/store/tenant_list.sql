-- Returns the tenants that have episodes, with their episode counts, by name; at most $limit.
-- Params: $limit.
select
    e.user_id,
    count(*) as episodes
from episodes as e
group by e.user_id
order by e.user_id
limit $limit
