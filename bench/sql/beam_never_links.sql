-- Returns the tenant's contradiction reviews the never rule queued, with the texts of their two facts, for
-- bench/quality/beam.py (false links on LoCoMo). Params: $user_id.
select
    r.subject_ids,
    list(f.text order by f.id) as texts
from llm_reviews as r,
    unnest(r.subject_ids) as s(fact_id)
join facts as f
    on f.user_id = r.user_id
    and f.id = s.fact_id
where r.user_id = $user_id
    and r.kind = 'contradiction'
    and starts_with(r.reason, 'never')
group by r.id, r.subject_ids
order by r.id
