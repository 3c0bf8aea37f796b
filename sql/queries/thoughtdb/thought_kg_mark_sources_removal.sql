-- Marks the tenant's thought episodes in $ids for removal once none of their KG candidates is
-- still pending (their content now lives in the KG). Returns nothing. Params: $user_id, $ids (varchar[]).
update episodes as ep
set
    status = 'removal',
    status_changed_at = now() at time zone 'UTC',
    changed_at = now() at time zone 'UTC'
where ep.user_id = $user_id
    and ep.kind = 'thought'
    and ep.status = 'active'
    and ep.id in (select unnest($ids::varchar[]))
    and not exists (
        select 1 from kg_entity_candidates as c
        where c.user_id = $user_id and c.source_thought_id = ep.id and c.status = 'pending'
    )
    and not exists (
        select 1 from kg_edge_candidates as c
        where c.user_id = $user_id and c.source_thought_id = ep.id and c.status = 'pending'
    )
