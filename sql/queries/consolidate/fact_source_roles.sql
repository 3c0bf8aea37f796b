-- Returns (fact_id, role) of the episodes the tenant's facts listed in the registered table `wanted_facts`
-- (id) were extracted from: who said them. Params: $user_id.
select distinct
    s.fact_id,
    coalesce(e.role, '') as role
from fact_sources as s
join wanted_facts as w
    on w.id = s.fact_id
join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where s.user_id = $user_id
    and s.relation = 'extracted_from'
order by s.fact_id, role
