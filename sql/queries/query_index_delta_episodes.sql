-- Returns the tenant's episodes an on-disk index generation does not cover (same columns and order as
-- query_index_episodes): stored after it (rowid above its $max_rowid; an update that moves a row
-- gives it a new rowid), or listed as unembedded when it was written (they may have a vector now).
-- Params: $user_id, $model, $dim, $max_rowid (null = all rows), $pending (ids).
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
    and (
        $max_rowid::bigint is null
        or e.rowid > $max_rowid::bigint
        or e.id in (select unnest($pending::varchar[]))
    )
order by e.session_id nulls last, e.created_at, e.id
