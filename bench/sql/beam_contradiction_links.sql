-- Returns the contradiction links of the tenant, for bench/quality/beam.py: (fact, fact, 'review') per
-- pair of a contradiction review, (fact, related fact, 'event') per contradicted or superseded event,
-- (fact, episode, 'source') per contradicts source. Params: $user_id.
select
    r.subject_ids[1] as a,
    s.b,
    'review' as kind
from llm_reviews as r,
    unnest(r.subject_ids) as s(b)
where r.user_id = $user_id
    and r.kind = 'contradiction'
union all
select
    e.fact_id as a,
    e.related_fact_id as b,
    'event' as kind
from fact_events as e
where e.user_id = $user_id
    and e.action in ('contradicted', 'superseded')
    and e.related_fact_id is not null
union all
select
    s.fact_id as a,
    s.episode_id as b,
    'source' as kind
from fact_sources as s
where s.user_id = $user_id
    and s.relation = 'contradicts'
