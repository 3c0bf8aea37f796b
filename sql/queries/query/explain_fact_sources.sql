-- Returns the episodes a fact rests on (or is contradicted by). Params: $user_id, $fact_id.
select
    s.relation, s.similarity, s.run_id, e.id as episode_id, e.session_id, e.role, e.created_at,
    e.is_private, e.content
from fact_sources as s
left join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where s.user_id = $user_id
    and s.fact_id = $fact_id
order by s.relation, e.created_at
