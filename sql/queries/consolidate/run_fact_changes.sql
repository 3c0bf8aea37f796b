-- Returns what run $run_id changed for the tenant: one row per fact event, with the fact's text and
-- the related fact's (the newer value of an update, the merge winner), '(private)' for a private fact,
-- so a run report says what changed. Params: $user_id, $run_id.
select
    v.fact_id,
    case when f.is_private then '(private)' else f.text end as text,
    v.action,
    round(v.confidence_before, 4) as confidence_before,
    round(v.confidence_after, 4) as confidence_after,
    v.status_before,
    v.status_after,
    v.related_fact_id,
    v.reason,
    case when r.is_private then '(private)' else r.text end as related_text
from fact_events as v
left join facts as f
    on f.user_id = v.user_id
    and f.id = v.fact_id
left join facts as r
    on r.user_id = v.user_id
    and r.id = v.related_fact_id
where v.user_id = $user_id
    and v.run_id = $run_id
order by v.fact_id, v.seq
