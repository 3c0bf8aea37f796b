-- Returns one claim (fact) of the tenant with its source episode ids; private only when $include_private.
-- Params: $user_id, $id, $include_private.
select
    f.id, f.claim_type, f.text, f.category, f.status, f.confidence, f.evidence_count, f.asserted_at,
    f.valid_from, f.valid_to, f.merged_into_id, f.visibility, f.is_private, f.scope, f.created_at,
    f.last_updated,
    coalesce(
        (select list(distinct fs.episode_id order by fs.episode_id)
         from fact_sources as fs
         where fs.user_id = f.user_id and fs.fact_id = f.id),
        []::varchar[]
    ) as source_refs
from facts as f
where f.user_id = $user_id
    and f.id = $id
    and ($include_private or not (f.is_private or f.visibility = 'private'))
