-- Returns the tenant's facts stored after an on-disk index generation (rowid above its $max_rowid; an
-- update that moves a row gives it a new rowid), same columns and order as query_index_facts. A plain
-- rowid comparison, so DuckDB skips the older row groups instead of reading their vectors.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows).
select
    f.rowid as row_id,
    f.id,
    f.text as text,
    null::varchar as session_id,
    case
        when f.embedding_model = $model and f.embedding_dim = $dim then f.embedding
    end as embedding
from facts as f
where f.user_id = $user_id
    and f.rowid > $max_rowid::bigint
order by f.id
