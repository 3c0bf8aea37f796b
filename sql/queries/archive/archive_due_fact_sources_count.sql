-- Returns the number of fact_sources rows of the facts in the registered table `archive_keys`
-- (columns user_id, id). Params: $user_id.
select count(*) as n
from fact_sources as s
join archive_keys as k
    on k.user_id = s.user_id
    and k.id = s.fact_id
where s.user_id = $user_id
