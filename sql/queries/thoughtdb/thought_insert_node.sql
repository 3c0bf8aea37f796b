-- Inserts one node (Decision | Action | Summary); an existing id is left untouched.
-- Params: $id, $user_id, $node_type, $title, $body, $asserted_at, $valid_from, $valid_to,
-- $visibility, $scope, $source_refs (varchar[]), $now.
insert into nodes (
    id, user_id, node_type, title, body, status, asserted_at, valid_from, valid_to, visibility,
    scope, source_refs, created_at
)
values (
    $id, $user_id, $node_type, $title, $body, 'active', $asserted_at, $valid_from, $valid_to,
    $visibility, $scope, $source_refs::varchar[], $now
)
on conflict do nothing
