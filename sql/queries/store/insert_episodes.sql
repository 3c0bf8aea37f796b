-- Appends episodes from the registered Arrow table `incoming_episodes` (one row per distinct record,
-- deduplicated by engram.store.ingest), skipping records already stored: the same (user_id, id); for a
-- record given without an id, the same (user_id, session_id, role, created_at, content_hash); or an
-- archived id. No params.
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
from incoming_episodes as i
where not exists (
        select 1
        from episodes as e
        where e.user_id = i.user_id
            and e.id = i.id
    )
    -- a record stored before ids included session and role: same natural key, older id
    and (
        i.id_given
        or not exists (
            select 1
            from episodes as e
            where e.user_id = i.user_id
                and e.content_hash = i.content_hash
                and e.created_at = i.created_at
                and e.session_id is not distinct from i.session_id
                and e.role is not distinct from i.role
        )
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
