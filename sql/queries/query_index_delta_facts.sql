-- Returns the tenant's facts an on-disk index generation does not hold as they are now: stored after it
-- (rowid above its $max_rowid; an update that moves a row gives it a new rowid) or changed since the
-- newest change it covers ($covered: every update sets changed_at), with the columns of
-- query_index_facts (same order) and those of query_fact_candidates. Both tests read one narrow column,
-- so DuckDB reads the vectors of the matching rows only.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows), $covered (null = none).
select
    f.rowid as row_id,
    f.id,
    f.text as text,
    null::varchar as session_id,
    case
        when f.embedding_model = $model and f.embedding_dim = $dim then f.embedding
    end as embedding,
    f.claim_type,
    f.category,
    f.confidence,
    f.confidence_at,
    f.status,
    f.created_at,
    f.asserted_at,
    f.valid_from,
    f.valid_to,
    f.tags,
    f.visibility,
    f.is_private
from facts as f
where f.user_id = $user_id
    and (f.rowid > $max_rowid::bigint or f.changed_at >= $covered::timestamp)
order by f.id
