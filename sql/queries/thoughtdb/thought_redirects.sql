-- Returns where each claim id in $ids redirects to: its merged_into_id, else the target of its
-- newest active same_as edge (duplicate -> canonical). Ids without a redirect are absent.
-- Params: $user_id, $ids (varchar[]).
select
    r.id, coalesce(f.merged_into_id, s.to_id) as canonical_id
from (select unnest($ids::varchar[]) as id) as r
left join facts as f
    on f.user_id = $user_id
    and f.id = r.id
left join (
    select ed.from_id, arg_max(ed.to_id, ed.created_at) as to_id
    from edges as ed
    where ed.user_id = $user_id
        and ed.status = 'active'
        and ed.edge_type = 'same_as'
    group by ed.from_id
) as s
    on s.from_id = r.id
where coalesce(f.merged_into_id, s.to_id) is not null
order by r.id
