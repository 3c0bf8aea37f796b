-- Returns the tenant's episodes an on-disk index generation does not hold as they are now: stored after
-- it (rowid above its $max_rowid; an update that moves a row gives it a new rowid) or updated after the
-- newest update it covers ($covered: every update sets changed_at), with the columns of
-- query_index_episodes (same order), those of query_episode_candidates and pending_text (the content
-- of a row without a vector of the active embedder, as the embedding queue embeds it). Each test is its own
-- branch, so DuckDB pushes it into the scan and reads the vectors of the matching rows only.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows), $covered (null = none).
with episodes_now as not materialized (
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
        e.is_private,
        case
            when e.embedding_model = $model and e.embedding_dim = $dim then null
            else e.content
        end as pending_text,
        e.changed_at
    from episodes as e
    where e.user_id = $user_id
)
select * exclude (changed_at) from episodes_now
where row_id > $max_rowid::bigint
union all
select * exclude (changed_at) from episodes_now
where row_id <= $max_rowid::bigint
    and changed_at > $covered::timestamp
order by session_id nulls last, created_at, id
