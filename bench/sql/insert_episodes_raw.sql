-- Benchmark baseline only (bench/perf/ingest.py): appends the registered Arrow table `incoming_episodes`
-- as is, with no duplicate checks. Never used by engram itself. No params.
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
