-- Returns the tenant's embedded, active episodes from $since to $until, oldest first, with the columns the
-- digests are built from (engram.consolidate.digests keeps the human turns), and whether every statement
-- the episode made was replaced or retracted (it made a superseded or retracted fact and no current one).
-- Params: $user_id, $since, $until, $model, $dim.
select
    e.id,
    e.role,
    e.origin,
    e.kind,
    e.session_id,
    e.content,
    e.created_at,
    e.is_private,
    e.visibility,
    e.tags,
    e.embedding,
    coalesce(r.replaced, false) as replaced
from episodes as e
left join (
    select
        s.episode_id,
        bool_or(f.status in ('superseded', 'retracted'))
            and not bool_or(f.status in ('active', 'merged_into')) as replaced
    from fact_sources as s
    join facts as f
        on f.user_id = s.user_id
        and f.id = s.fact_id
    where s.user_id = $user_id
        and s.relation = 'extracted_from'
        and f.claim_type <> 'digest'
    group by s.episode_id
) as r
    on r.episode_id = e.id
where e.user_id = $user_id
    and e.status = 'active'
    and e.embedding_model = $model
    and e.embedding_dim = $dim
    and e.created_at >= $since
    and e.created_at <= $until
order by e.created_at, e.id
