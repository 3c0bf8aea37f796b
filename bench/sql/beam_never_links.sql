-- Returns the tenant's 'never' links with their two texts, for bench/quality/beam.py (false links on
-- LoCoMo): the contradiction reviews the never rule queued (the texts of their two facts), and the
-- messages recorded as contradicting a fact that says never (the fact's text and the message's; any
-- 'contradicts' source of such a fact counts, whichever rule made it). Params: $user_id.
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
union all
select
    [s.fact_id, s.episode_id] as subject_ids,
    [f.text, e.content] as texts
from fact_sources as s
join facts as f
    on f.user_id = s.user_id
    and f.id = s.fact_id
join episodes as e
    on e.user_id = s.user_id
    and e.id = s.episode_id
where s.user_id = $user_id
    and s.relation = 'contradicts'
    and regexp_matches(lower(f.text), '\bnever\b|\bnot ever\b|n[o'']t\s+(once|ever)\b')
order by subject_ids
