-- Returns what each id in $ids is for the tenant (claim | node | event) with its label, status,
-- validity window and confidence; private items only when $include_private.
-- Params: $user_id, $ids (varchar[]), $include_private (boolean).
select
    f.id, 'claim' as kind, f.claim_type as subtype, f.text as label, f.status, f.asserted_at,
    f.valid_from, f.valid_to, f.confidence, f.merged_into_id, (f.is_private or f.visibility = 'private') as private
from facts as f
where f.user_id = $user_id
    and f.id in (select unnest($ids::varchar[]))
    and ($include_private or not (f.is_private or f.visibility = 'private'))
union all
select
    n.id, 'node' as kind, n.node_type as subtype, n.title as label, n.status, n.asserted_at,
    n.valid_from, n.valid_to, null as confidence, null as merged_into_id, n.visibility = 'private' as private
from nodes as n
where n.user_id = $user_id
    and n.id in (select unnest($ids::varchar[]))
    and ($include_private or n.visibility <> 'private')
union all
select
    e.id, 'event' as kind, e.kind as subtype, e.content as label, e.status, e.created_at as asserted_at,
    null as valid_from, null as valid_to, null as confidence, null as merged_into_id,
    (e.is_private or e.visibility = 'private') as private
from episodes as e
where e.user_id = $user_id
    and e.id in (select unnest($ids::varchar[]))
    and ($include_private or not (e.is_private or e.visibility = 'private'))
order by 1, 2
