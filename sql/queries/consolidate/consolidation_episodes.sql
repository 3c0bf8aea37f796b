-- Returns the tenant's episodes to cluster: new ones (not yet consumed by extract, created by $as_of)
-- and recent ones never linked to a fact (re-clustered so noise can join later clusters).
-- Only vectors of the active embedder ($model, $dim); episodes an extraction case (batch mode) holds or
-- answered are left out, so each is sent to the LLM once. previous_id is the turn before it in its
-- session (of any age), which an answer may lean on; kind, role and origin say whether it may become
-- facts (engram.consolidate.speakers). Params: $user_id, $as_of, $window_start, $model, $dim.
with new_sessions as (
    select distinct session_id
    from episodes
    where user_id = $user_id
        and consolidated_run_id is null
        and session_id is not null
),
turns as (
    select
        e.id,
        lag(e.id) over (partition by e.session_id order by e.created_at, e.id) as previous_id
    from episodes as e
    join new_sessions as n
        on n.session_id = e.session_id
    where e.user_id = $user_id
        and e.status = 'active'
        and e.created_at <= $as_of
)
select
    e.id,
    e.role,
    e.origin,
    e.kind,
    e.content,
    e.created_at,
    e.is_private,
    e.visibility,
    e.tags,
    e.embedding,
    e.consolidated_run_id is null as is_new,
    t.previous_id
from episodes as e
left join turns as t
    on t.id = e.id
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
            and not exists (  -- a digest listing the episode is no fact drawn from it
                select 1
                from fact_sources as s
                join facts as f
                    on f.user_id = s.user_id
                    and f.id = s.fact_id
                where s.user_id = e.user_id
                    and s.episode_id = e.id
                    and f.claim_type <> 'digest'
            )
        )
    )
order by e.created_at, e.id
