-- Returns the text of every active fact of the tenant, with the moment it is valid from.
-- Params: $user_id.
select
    f.id,
    f.text,
    coalesce(f.valid_from, f.asserted_at, f.created_at) as valid_from
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
order by f.id
