-- Returns the provenance of the snapshot's facts: one row per fact and source episode, with the
-- episode's date and text. Rows of private facts, and the text of private episodes, only when
-- $include_private. Params: $user_id (null = every tenant), $include_private.
select
    s.user_id,
    s.fact_id,
    s.episode_id,
    s.relation,
    s.similarity,
    s.run_id,
    s.created_at as linked_at,
    e.created_at as episode_created_at,
    e.session_id,
    e.role,
    e.status as episode_status,
    coalesce(e.is_private, false) as episode_is_private,
    case when $include_private or not coalesce(e.is_private, false) then e.content end as episode_content
from fact_sources as s
join facts as f
    on f.user_id = s.user_id
    and f.id = s.fact_id
left join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where ($user_id is null or s.user_id = $user_id)
    and ($include_private or not f.is_private)
order by s.user_id, s.fact_id, s.relation, s.episode_id
