-- Appends episodes from the registered Arrow table `incoming_episodes`, skipping duplicates:
-- same (user_id, id), same (user_id, content_hash, created_at), or an archived id. No params.
insert into episodes (
    id, user_id, kind, role, session_id, content, created_at, ingested_at, origin, visibility,
    is_private, tags, content_hash, embedding, embedding_model, embedding_dim, status,
    is_summary, summary_of, pipeline, metadata
)
select
    i.id, i.user_id, i.kind, i.role, i.session_id, i.content, i.created_at, i.ingested_at,
    i.origin, i.visibility, i.is_private, i.tags, i.content_hash, i.embedding,
    i.embedding_model, i.embedding_dim, i.status, i.is_summary, i.summary_of, i.pipeline,
    i.metadata::json
from (
    select
        *,
        row_number() over (partition by user_id, id order by created_at) as rn_id,
        row_number() over (partition by user_id, content_hash, created_at order by id) as rn_hash
    from incoming_episodes
) as i
where i.rn_id = 1
    and i.rn_hash = 1
    and not exists (
        select 1
        from episodes as e
        where e.user_id = i.user_id
            and e.id = i.id
    )
    -- a separate anti-join (not an OR above) so DuckDB hash-joins instead of comparing every pair
    and not exists (
        select 1
        from episodes as e
        where e.user_id = i.user_id
            and e.content_hash = i.content_hash
            and e.created_at = i.created_at
    )
    -- an archived episode is not brought back by re-ingesting its file (restore does that)
    and not exists (
        select 1
        from archive_rows as a
        where a.user_id = i.user_id
            and a.table_name = 'episodes'
            and a.row_id = i.id
            and a.restored_at is null
    )
