-- Returns the tenant's facts an on-disk index generation does not cover (same columns and order as
-- query_index_facts): stored after it (rowid above its $max_rowid; an update that moves a row gives
-- it a new rowid), or listed as unembedded when it was written (they may have a vector now).
-- Params: $user_id, $model, $dim, $max_rowid (null = all rows), $pending (ids).
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
    and (
        $max_rowid::bigint is null
        or f.rowid > $max_rowid::bigint
        or f.id in (select unnest($pending::varchar[]))
    )
order by f.id
