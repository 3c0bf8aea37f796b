-- Returns the tenant's episodes an on-disk index generation does not hold as they are now: stored after
-- it (rowid above its $max_rowid; an update that moves a row gives it a new rowid) or changed since the
-- newest change it covers ($covered: every update sets changed_at), with the columns of
-- query_index_episodes (same order) and those of query_episode_candidates. Both tests read one narrow
-- column, so DuckDB reads the vectors of the matching rows only.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows), $covered (null = none).
select
    e.rowid as row_id,
    e.id,
    coalesce(e.role || ': ', '') || e.content as text,
    e.session_id,
    case
        when e.embedding_model = $model and e.embedding_dim = $dim then e.embedding
    end as embedding,
    e.role,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    e.status,
    e.visibility,
    e.is_private
from episodes as e
where e.user_id = $user_id
    and (e.rowid > $max_rowid::bigint or e.changed_at >= $covered::timestamp)
order by e.session_id nulls last, e.created_at, e.id
