-- Returns episodes whose vector disagrees with its recorded shape: length <> embedding_dim, a vector
-- without model or dim, or a dim without a vector. Empty = pass. No params.
select
    e.user_id,
    e.id,
    e.embedding_model,
    e.embedding_dim,
    len(e.embedding) as embedding_len
from episodes as e
where (
        e.embedding is not null
        and (
            e.embedding_dim is null
            or e.embedding_model is null
            or len(e.embedding) <> e.embedding_dim
        )
    )
    or (e.embedding is null and e.embedding_dim is not null)
order by e.user_id, e.id
