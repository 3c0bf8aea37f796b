-- Returns, for each superseded fact in $fact_ids, the version that replaces it now: (fact_id, current_id),
-- following each superseded fact's latest 'superseded' event to its newer fact, and on through newer
-- facts that were superseded in turn, to one still active. Facts with no active version are left out.
-- Params: $user_id, $fact_ids.
with recursive latest as (
    select
        e.fact_id,
        arg_max(e.related_fact_id, e.seq) as newer_id
    from fact_events as e
    where e.user_id = $user_id
        and e.action = 'superseded'
        and e.related_fact_id is not null
    group by e.fact_id
),
chain(fact_id, at_id, depth) as (
    select
        f.id as fact_id,
        l.newer_id as at_id,
        1 as depth
    from facts as f
    join latest as l
        on l.fact_id = f.id
    where f.user_id = $user_id
        and f.status = 'superseded'
        and f.id in (select unnest($fact_ids::varchar[]))
    union all
    select
        c.fact_id,
        l.newer_id as at_id,
        c.depth + 1 as depth
    from chain as c
    join facts as f
        on f.user_id = $user_id
        and f.id = c.at_id
        and f.status = 'superseded'
    join latest as l
        on l.fact_id = c.at_id
    where c.depth < 16
)
select
    c.fact_id,
    c.at_id as current_id
from chain as c
join facts as f
    on f.user_id = $user_id
    and f.id = c.at_id
    and f.status = 'active'
order by c.fact_id
