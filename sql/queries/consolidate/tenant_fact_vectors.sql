-- Returns the tenant's active facts with vectors of the active embedder, for similarity stages.
-- Params: $user_id, $model, $dim, $keys_version
-- (valence_code is null for a fact not keyed by that rule version).
-- Digests (claim_type digest, engram.consolidate.digests) are left out: never paired, merged or updated.
select
    f.id,
    f.embedding,
    f.confidence,
    f.confidence_at,
    f.category,
    f.created_at,
    coalesce(f.valid_from, f.asserted_at, f.created_at) as valid_from,
    f.evidence_count,
    case when f.keys_version = $keys_version then f.valence_code end as valence_code
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and f.claim_type <> 'digest'
    and f.embedding_model = $model
    and f.embedding_dim = $dim
order by f.created_at, f.id
