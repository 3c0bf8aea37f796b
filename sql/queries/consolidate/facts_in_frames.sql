-- Returns the active facts of the tenant whose frame is in the registered table `wanted_frames`
-- (frame), with the moment each is valid from. Params: $user_id.
-- Digests (claim_type digest, engram.consolidate.digests) are left out: never paired, merged or updated.
select
    f.id,
    f.text,
    coalesce(f.valid_from, f.asserted_at, f.created_at) as valid_from
from facts as f
inner join wanted_frames as w on f.frame_key = w.frame
where f.user_id = $user_id
    and f.status = 'active'
    and f.claim_type <> 'digest'
order by f.id
