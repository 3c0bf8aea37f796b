-- Returns the facts of the snapshot: every live fact (all statuses) with its confidence now and its
-- source counts, no embedding. Private facts only when $include_private.
-- Params: $user_id (null = every tenant), $include_private, $now, $decay_rate.
select
    f.user_id,
    f.id as fact_id,
    f.text,
    f.claim_type,
    f.category,
    f.status,
    f.merged_into_id,
    effective_confidence(f.confidence, f.confidence_at, $now, $decay_rate) as confidence,
    f.confidence as confidence_stored,
    f.confidence_at,
    f.evidence_count,
    coalesce(s.extracted_from, 0) as extracted_from_count,
    coalesce(s.supports, 0) as supports_count,
    coalesce(s.contradicts, 0) as contradicts_count,
    s.first_source_at,
    s.last_source_at,
    f.asserted_at,
    f.valid_from,
    f.valid_to,
    f.created_at,
    f.last_updated,
    f.last_reinforced_at,
    f.tags,
    f.visibility,
    f.is_private,
    f.run_id
from facts as f
left join (
    select
        fs.user_id,
        fs.fact_id,
        count(*) filter (where fs.relation = 'extracted_from') as extracted_from,
        count(*) filter (where fs.relation = 'supports') as supports,
        count(*) filter (where fs.relation = 'contradicts') as contradicts,
        min(e.created_at) as first_source_at,
        max(e.created_at) as last_source_at
    from fact_sources as fs
    left join episodes as e
        on e.user_id = fs.user_id
        and e.id = fs.episode_id
    where $user_id is null or fs.user_id = $user_id
    group by all
) as s
    on s.user_id = f.user_id
    and s.fact_id = f.id
where ($user_id is null or f.user_id = $user_id)
    and ($include_private or not f.is_private)
order by f.user_id, f.id
