-- Returns the tenant's episodes at the DuckDB rowids $row_ids (taken from the in-memory index), with
-- `eligible` telling whether each passes the symbolic filters: status active or pending_embed,
-- privacy, tags, kinds, created no later than $as_of. The caller checks every rowid still holds the
-- id it expects (else the index is stale). Params: $user_id, $row_ids, $include_private,
-- $include_tags, $exclude_tags, $kinds (null = all), $as_of (null = now).
-- text and content_hash come back null: they are immutable, and the search index holds every row's
-- text (decompressing them from the store was most of a point fetch's time).
select
    e.rowid as row_id,
    e.id,
    null::varchar as text,
    e.role,
    e.session_id,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    null::varchar as content_hash,
    e.status,
    e.visibility,
    e.is_private,
    (
        e.status in ('active', 'pending_embed')
        and ($include_private or (not e.is_private and e.visibility <> 'private'))
        and (len($include_tags::varchar[]) = 0 or list_has_any(e.tags, $include_tags::varchar[]))
        and not list_has_any(e.tags, $exclude_tags::varchar[])
        and ($kinds::varchar[] is null or list_contains($kinds::varchar[], e.kind))
        and ($as_of::timestamp is null or e.created_at <= $as_of::timestamp)
    ) as eligible
from episodes as e
where e.rowid in (select unnest($row_ids::bigint[]))
    and e.user_id = $user_id
