-- Returns the tenant's episodes stored after an on-disk index generation (rowid above its $max_rowid; an
-- update that moves a row gives it a new rowid), same columns and order as query_index_episodes. A plain
-- rowid comparison, so DuckDB skips the older row groups instead of reading their vectors.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows).
select
    e.rowid as row_id,
    e.id,
    coalesce(e.role || ': ', '') || e.content as text,
    e.session_id,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then e.embedding
    end as embedding
from episodes as e
where e.user_id = $user_id
    and e.rowid > $max_rowid::bigint
order by e.session_id nulls last, e.created_at, e.id
