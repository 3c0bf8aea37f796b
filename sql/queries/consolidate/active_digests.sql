-- Returns the tenant's active digests that rest on an episode said at or after $since, each with the ids
-- of the episodes it rests on (engram.consolidate.digests: a rebuilt group supersedes them).
-- Params: $user_id, $since.
select
    f.id,
    list(s.episode_id order by s.episode_id) as episode_ids
from facts as f
join fact_sources as s
    on s.user_id = f.user_id
    and s.fact_id = f.id
    and s.relation = 'extracted_from'
join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where f.user_id = $user_id
    and f.claim_type = 'digest'
    and f.status = 'active'
group by f.id
having max(e.created_at) >= $since
order by f.id
