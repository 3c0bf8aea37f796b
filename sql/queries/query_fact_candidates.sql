-- Returns the tenant's facts at the DuckDB rowids $row_ids (taken from the in-memory index) with
-- their effective (decayed) confidence at the query time, and `eligible` telling whether each passes
-- the symbolic filters: without $as_of, active facts valid now; with $as_of, the facts valid then
-- (active or since superseded); privacy; tags; confidence above $min_confidence. The caller checks
-- every rowid still holds the id it expects (else the index is stale). Params: $user_id, $row_ids,
-- $include_private, $include_tags, $exclude_tags, $as_of (null = now), $now, $rate, $min_confidence.
-- text and content_hash come back null: they are immutable, and the search index holds every row's
-- text (decompressing them from the store was most of a point fetch's time).
select
    f.rowid as row_id,
    f.id,
    null::varchar as text,
    f.claim_type,
    f.category,
    effective_confidence(f.confidence, f.confidence_at, coalesce($as_of::timestamp, $now::timestamp), $rate)
        as confidence,
    f.status,
    f.created_at,
    f.asserted_at,
    f.valid_from,
    f.valid_to,
    f.tags,
    null::varchar as content_hash,
    f.visibility,
    f.is_private,
    (
        (
            ($as_of::timestamp is null and f.status = 'active')
            or ($as_of::timestamp is not null and f.status in ('active', 'superseded'))
        )
        and coalesce(f.valid_from, f.asserted_at) <= coalesce($as_of::timestamp, $now::timestamp)
        and (f.valid_to is null or f.valid_to > coalesce($as_of::timestamp, $now::timestamp))
        and ($include_private or (not f.is_private and f.visibility <> 'private'))
        and (len($include_tags::varchar[]) = 0 or list_has_any(f.tags, $include_tags::varchar[]))
        and not list_has_any(f.tags, $exclude_tags::varchar[])
        and effective_confidence(f.confidence, f.confidence_at, coalesce($as_of::timestamp, $now::timestamp), $rate)
            > $min_confidence
    ) as eligible
from facts as f
where f.rowid in (select unnest($row_ids::bigint[]))
    and f.user_id = $user_id
