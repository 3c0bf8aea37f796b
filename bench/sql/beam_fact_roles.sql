-- Returns every fact of the tenant with its claim type and the roles of the episodes it was extracted
-- from, for bench/quality/beam.py. Params: $user_id.
select
    f.claim_type,
    list(e.role order by e.id) filter (where e.id is not null) as roles
from facts as f
left join fact_sources as s
    on s.user_id = f.user_id
    and s.fact_id = f.id
    and s.relation = 'extracted_from'
left join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where f.user_id = $user_id
group by f.id, f.claim_type
