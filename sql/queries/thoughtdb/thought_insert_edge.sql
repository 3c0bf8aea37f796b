-- Inserts one edge; an existing id is left untouched.
-- Params: $id, $user_id, $edge_type, $from_id, $to_id, $source_refs (varchar[]), $now.
insert into edges (id, user_id, edge_type, from_id, to_id, status, source_refs, created_at)
values ($id, $user_id, $edge_type, $from_id, $to_id, 'active', $source_refs::varchar[], $now)
on conflict do nothing
