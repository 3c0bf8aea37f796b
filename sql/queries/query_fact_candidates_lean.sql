-- As query_fact_candidates (same columns and params), without the text and content_hash columns (null
-- here): a search through an on-disk index reads those immutable columns from the index, because
-- decompressing them from the store is most of a point fetch's time.
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
