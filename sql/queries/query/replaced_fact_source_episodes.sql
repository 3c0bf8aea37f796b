-- Returns the episodes that the earlier versions of the facts $fact_ids were extracted from: the facts
-- each one superseded (its 'superseded' events' related_fact_id), and the ones those superseded, and so on.
-- Live episodes only (active or pending_embed), not private unless $include_private; at most $per_fact per
-- fact (the newest). (fact_id, episode_id, created_at, content), oldest first per fact.
-- Params: $user_id, $fact_ids, $include_private, $per_fact.
with recursive replaced(fact_id, old_id, depth) as (
    select
        e.related_fact_id as fact_id,
        e.fact_id as old_id,
        1 as depth
    from fact_events as e
    where e.user_id = $user_id
        and e.action = 'superseded'
        and e.related_fact_id in (select unnest($fact_ids::varchar[]))
    union all
    select
        r.fact_id,
        e.fact_id as old_id,
        r.depth + 1 as depth
    from replaced as r
    join fact_events as e
        on e.user_id = $user_id
        and e.action = 'superseded'
        and e.related_fact_id = r.old_id
    where r.depth < 16
)
select distinct
    r.fact_id,
    ep.id as episode_id,
    ep.created_at,
    ep.content
from replaced as r
join facts as f
    on f.user_id = $user_id
    and f.id = r.old_id
    and f.status = 'superseded'
join fact_sources as s
    on s.user_id = $user_id
    and s.fact_id = r.old_id
    and s.relation = 'extracted_from'
join episodes as ep
    on ep.user_id = $user_id
    and ep.id = s.episode_id
where ep.status in ('active', 'pending_embed')
    and ($include_private or not (coalesce(ep.is_private, false) or ep.visibility = 'private'))
qualify row_number() over (partition by r.fact_id order by ep.created_at desc, ep.id desc) <= $per_fact
order by r.fact_id, ep.created_at, ep.id
