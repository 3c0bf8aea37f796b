-- Returns the tenant's episodes to cluster: new ones (not yet consumed by extract, created by $as_of)
-- and recent ones never linked to a fact (re-clustered so noise can join later clusters).
-- Only vectors of the active embedder ($model, $dim); episodes an extraction case (batch mode) holds or
-- answered are left out, so each is sent to the LLM once. Params: $user_id, $as_of, $window_start, $model, $dim.
select
    e.id,
    e.role,
    e.content,
    e.created_at,
    e.is_private,
    e.visibility,
    e.tags,
    e.embedding,
    e.consolidated_run_id is null as is_new
from episodes as e
where e.user_id = $user_id
    and e.status = 'active'
    and e.embedding_model = $model
    and e.embedding_dim = $dim
    and e.created_at <= $as_of
    and not exists (
        select 1
        from llm_reviews as r
        where r.user_id = e.user_id
            and r.kind = 'extraction'
            and r.status in ('pending', 'submitted', 'applied')
            and list_contains(r.subject_ids, e.id)
    )
    and (
        e.consolidated_run_id is null
        or (
            e.created_at >= $window_start
            and not exists (
                select 1
                from fact_sources as s
                where s.user_id = e.user_id
                    and s.episode_id = e.id
            )
        )
    )
order by e.created_at, e.id
