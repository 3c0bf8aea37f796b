-- Returns the tenant's active digests that a night rebuilding the window from $since must reconsider: those
-- resting on an episode said at or after $since, or on one no longer active (marked for removal, archived,
-- deleted). Each with its kind (category), valid_from, the ids of the episodes it rests on and whether its
-- vector is of the model $model / $dim (a digest of another embedder is rebuilt).
-- Params: $user_id, $since, $model, $dim.
select
    f.id,
    f.category,
    f.valid_from,
    list(s.episode_id order by s.episode_id) as episode_ids,
    f.embedding_model = $model and f.embedding_dim = $dim as current_model
from facts as f
join fact_sources as s
    on s.user_id = f.user_id
    and s.fact_id = f.id
    and s.relation = 'extracted_from'
left join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where f.user_id = $user_id
    and f.claim_type = 'digest'
    and f.status = 'active'
group by f.id, f.category, f.valid_from, f.embedding_model, f.embedding_dim
having max(e.created_at) >= $since
    or bool_or(e.id is null or e.status <> 'active')
    or f.embedding_model <> $model
    or f.embedding_dim <> $dim
order by f.id
