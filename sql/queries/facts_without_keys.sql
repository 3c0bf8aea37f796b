-- Returns the active facts of the tenant whose derived keys are missing or from another rule version.
-- Params: $user_id, $version.
select
    f.id,
    f.text
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and f.keys_version is distinct from $version
order by f.id
