-- Returns the tenant's episodes at the DuckDB rowids $row_ids (taken from the in-memory index) with the
-- columns a search filters and shows them by (engram.query.candidates decides which pass: status,
-- privacy, tags, kinds, time). The caller checks every rowid still holds the id it expects (else the
-- index is stale). Params: $user_id, $row_ids.
-- text and content_hash are not read: they are immutable, and the search index holds every row's text
-- (decompressing them from the store was most of a point fetch's time).
select
    e.rowid as row_id,
    e.id,
    e.session_id,
    e.role,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    e.status,
    e.visibility,
    e.is_private
from episodes as e
where e.rowid in (select unnest($row_ids::bigint[]))
    and e.user_id = $user_id
