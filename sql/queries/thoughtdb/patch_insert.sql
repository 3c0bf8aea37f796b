-- Records one applied graph patch. Params: $id, $user_id, $source, $now, $ops (json text).
insert into graph_patches (id, user_id, status, source, created_at, rolled_back_at, ops)
values ($id, $user_id, 'applied', $source, $now, null, $ops::json)
