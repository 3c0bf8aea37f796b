-- Returns the facts extracted from the episodes $episode_ids (one row per link) with what decides
-- whether the fact is current: (episode_id, fact_id, status, valid_from, valid_to, claim_type).
-- Params: $user_id, $episode_ids.
select
    s.episode_id,
    s.fact_id,
    f.status,
    coalesce(f.valid_from, f.asserted_at) as valid_from,
    f.valid_to,
    f.claim_type
from fact_sources as s
join facts as f
    on f.user_id = s.user_id
    and f.id = s.fact_id
where s.user_id = $user_id
    and s.relation = 'extracted_from'
    and s.episode_id in (select unnest($episode_ids::varchar[]))
order by s.episode_id, s.fact_id
