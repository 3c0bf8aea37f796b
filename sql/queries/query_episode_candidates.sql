-- Returns the searchable episodes among $ids of the tenant that pass the symbolic filters:
-- status active or pending_embed, privacy, tags, kinds, and created no later than $as_of.
-- Params: $user_id, $ids, $include_private, $include_tags, $exclude_tags, $kinds (null = all), $as_of (null = now).
select
    e.id,
    e.content as text,
    e.role,
    e.session_id,
    e.kind,
    e.origin,
    e.created_at,
    e.tags,
    e.content_hash,
    e.status,
    e.visibility,
    e.is_private
from episodes as e
where e.user_id = $user_id
    and list_contains($ids::varchar[], e.id)
    and e.status in ('active', 'pending_embed')
    and ($include_private or (not e.is_private and e.visibility <> 'private'))
    and (len($include_tags::varchar[]) = 0 or list_has_any(e.tags, $include_tags::varchar[]))
    and not list_has_any(e.tags, $exclude_tags::varchar[])
    and ($kinds::varchar[] is null or list_contains($kinds::varchar[], e.kind))
    and ($as_of::timestamp is null or e.created_at <= $as_of::timestamp)
