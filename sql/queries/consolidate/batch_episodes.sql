-- Returns the tenant's episodes listed in the registered table `wanted_episodes` (id) with what a
-- fact needs from them; with $model/$dim set, only those with vectors of that embedder. previous_id
-- is the turn before it in its session. Params: $user_id, $model, $dim (null = any).
with turns as (
    select
        e.id,
        lag(e.id) over (partition by e.session_id order by e.created_at, e.id) as previous_id
    from episodes as e
    where e.user_id = $user_id
        and e.status = 'active'
        and e.session_id in (
            select x.session_id
            from episodes as x
            join wanted_episodes as w
                on w.id = x.id
            where x.user_id = $user_id
        )
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
    t.previous_id
from episodes as e
join wanted_episodes as w
    on w.id = e.id
left join turns as t
    on t.id = e.id
where e.user_id = $user_id
    and ($model is null or e.embedding_model = $model)
    and ($dim is null or e.embedding_dim = $dim)
order by e.created_at, e.id
