-- Returns ids of the tenant's active facts created by run $run_id. Params: $user_id, $run_id.
-- Digests (claim_type digest, engram.consolidate.digests) are left out: never paired, merged or updated.
select
    f.id
from facts as f
where f.user_id = $user_id
    and f.run_id = $run_id
    and f.status = 'active'
    and f.claim_type <> 'digest'
