-- Returns one node of the tenant; private only when $include_private.
-- Params: $user_id, $id, $include_private.
select
    n.id, n.node_type, n.title, n.body, n.status, n.asserted_at, n.valid_from, n.valid_to,
    n.visibility, n.scope, n.source_refs, n.created_at
from nodes as n
where n.user_id = $user_id
    and n.id = $id
    and ($include_private or n.visibility <> 'private')
