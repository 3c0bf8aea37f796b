-- Returns the supports of each id in $ids: (child_id, parent_id, via). A depends_on / derived_from
-- edge points from the child to its support, a supports edge from the support to the child, and a
-- claim's fact_sources (extracted_from | supports) are derived_from links to episodes.
-- Params: $user_id, $ids (varchar[]).
select
    ed.from_id as child_id, ed.to_id as parent_id, ed.edge_type as via
from edges as ed
where ed.user_id = $user_id
    and ed.status = 'active'
    and ed.edge_type in ('depends_on', 'derived_from')
    and ed.from_id in (select unnest($ids::varchar[]))
union
select
    ed.to_id as child_id, ed.from_id as parent_id, ed.edge_type as via
from edges as ed
where ed.user_id = $user_id
    and ed.status = 'active'
    and ed.edge_type = 'supports'
    and ed.to_id in (select unnest($ids::varchar[]))
union
select
    fs.fact_id as child_id, fs.episode_id as parent_id, 'source:' || fs.relation as via
from fact_sources as fs
where fs.user_id = $user_id
    and fs.relation in ('extracted_from', 'supports')
    and fs.fact_id in (select unnest($ids::varchar[]))
order by child_id, parent_id, via
