-- Returns the fact history of the snapshot: every fact_events row (oldest first per fact) with the
-- fact's text when the fact is still live. Events of private facts only when $include_private.
-- Params: $user_id (null = every tenant), $include_private.
select
    v.user_id,
    v.fact_id,
    v.seq,
    v.created_at,
    v.run_id,
    v.action,
    v.confidence_before,
    v.confidence_after,
    v.confidence_after - v.confidence_before as confidence_change,
    v.status_before,
    v.status_after,
    v.related_fact_id,
    v.reason,
    f.text as fact_text
from fact_events as v
left join facts as f
    on f.user_id = v.user_id
    and f.id = v.fact_id
where ($user_id is null or v.user_id = $user_id)
    and ($include_private or not coalesce(f.is_private, false))
order by v.user_id, v.fact_id, v.seq
