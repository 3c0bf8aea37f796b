-- Returns the tenant's facts an on-disk index generation does not hold as they are now: stored after it
-- (rowid above its $max_rowid; an update that moves a row gives it a new rowid) or updated after the
-- newest update it covers ($covered: every update sets changed_at), with the columns of
-- query_index_facts (same order) and those of query_fact_candidates. Each test is its own
-- branch, so DuckDB pushes it into the scan and reads the vectors of the matching rows only.
-- Params: $user_id, $model, $dim, $max_rowid (-1 = all rows), $covered (null = none).
with facts_now as not materialized (
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
        f.is_private,
        f.changed_at
    from facts as f
    where f.user_id = $user_id
)
select * exclude (changed_at) from facts_now
where row_id > $max_rowid::bigint
union all
select * exclude (changed_at) from facts_now
where row_id <= $max_rowid::bigint
    and changed_at > $covered::timestamp
order by id
