-- Returns the tenant's nodes filtered by optional $node_type and $status, newest first, at most
-- $limit; private ones only when $include_private.
-- Params: $user_id, $node_type, $status, $include_private, $limit.
select
    n.id, n.node_type, n.title, n.status, n.asserted_at, n.valid_from, n.valid_to, n.visibility,
    n.scope, n.source_refs
from nodes as n
where n.user_id = $user_id
    and ($node_type is null or n.node_type = $node_type)
    and ($status is null or n.status = $status)
    and ($include_private or n.visibility <> 'private')
order by n.asserted_at desc, n.id
limit $limit
