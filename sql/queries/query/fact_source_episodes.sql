-- Returns the episodes the facts $fact_ids were extracted from that a search may show them with: live
-- (active or pending_embed), said by $as_of when given, and not private unless $include_private; at most
-- $per_fact per fact (the newest). (fact_id, episode_id, created_at, content), oldest first per fact.
-- Params: $user_id, $fact_ids, $include_private, $as_of, $per_fact.
select
    s.fact_id,
    e.id as episode_id,
    e.created_at,
    e.content
from fact_sources as s
join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where s.user_id = $user_id
    and s.relation = 'extracted_from'
    and s.fact_id in (select unnest($fact_ids::varchar[]))
    and e.status in ('active', 'pending_embed')
    and ($include_private or not (coalesce(e.is_private, false) or e.visibility = 'private'))
    and ($as_of::timestamp is null or e.created_at <= $as_of::timestamp)
qualify row_number() over (partition by s.fact_id order by e.created_at desc, e.id desc) <= $per_fact
order by s.fact_id, e.created_at, e.id
