-- Sets the decision ($status: approved | rejected) on the tenant's edge candidates in $ids.
-- Params: $user_id, $ids (varchar[]), $status, $now.
update kg_edge_candidates as c
set
    status = $status,
    decided_at = $now
where c.user_id = $user_id
    and c.id in (select unnest($ids::varchar[]))
