-- Marks one applied patch of the tenant as rolled back at $now. Params: $user_id, $id, $now.
update graph_patches
set
    status = 'rolled_back',
    rolled_back_at = $now
where user_id = $user_id
    and id = $id
    and status = 'applied'
