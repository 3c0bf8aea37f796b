-- Returns the active facts of the tenant whose derived keys are missing or from another rule version,
-- with the moment each is valid from. Params: $user_id, $version.
-- Digests (claim_type digest, engram.consolidate.digests) are left out: never paired, merged or updated.
select
    f.id,
    f.text,
    coalesce(f.valid_from, f.asserted_at, f.created_at) as valid_from
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and f.claim_type <> 'digest'
    and f.keys_version is distinct from $version
order by f.id
