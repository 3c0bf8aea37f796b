-- Returns facts whose vector disagrees with its recorded shape: length <> embedding_dim, a vector
-- without model or dim, or a dim without a vector. Empty = pass. No params.
select
    f.user_id,
    f.id,
    f.embedding_model,
    f.embedding_dim,
    len(f.embedding) as embedding_len
from facts as f
where (
        f.embedding is not null
        and (
            f.embedding_dim is null
            or f.embedding_model is null
            or len(f.embedding) <> f.embedding_dim
        )
    )
    or (f.embedding is null and f.embedding_dim is not null)
order by f.user_id, f.id
