-- Returns the tenant's facts at the DuckDB rowids $row_ids (taken from the in-memory index) with the
-- columns a search filters and shows them by (engram.query.candidates decides which pass: status,
-- validity, privacy, tags, decayed confidence). The caller checks every rowid still holds the id it
-- expects (else the index is stale). Params: $user_id, $row_ids.
-- text and content_hash are not read: they are immutable, and the search index holds every row's text
-- (decompressing them from the store was most of a point fetch's time).
select
    f.rowid as row_id,
    f.id,
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
where f.rowid in (select unnest($row_ids::bigint[]))
    and f.user_id = $user_id
