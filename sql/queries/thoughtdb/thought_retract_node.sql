-- Retracts one node of the tenant (kept for audit): status retracted, validity closed at $now.
-- Params: $user_id, $id, $now.
update nodes as n
set
    status = 'retracted',
    valid_to = coalesce(least(n.valid_to, $now), $now)
where n.user_id = $user_id
    and n.id = $id
