-- Inserts one claim (a facts row, status active, no embedding yet so the queue embeds it);
-- an existing id is left untouched.
-- Params: $id, $user_id, $text, $claim_type, $category, $confidence, $asserted_at, $valid_from,
-- $content_hash, $visibility, $is_private, $scope, $run_id, $now.
insert into facts (
    id, user_id, text, claim_type, category, confidence, confidence_at, evidence_count, status,
    asserted_at, valid_from, created_at, last_updated, last_reinforced_at, content_hash,
    visibility, is_private, scope, run_id
)
values (
    $id, $user_id, $text, $claim_type, $category, $confidence, $now, 1, 'active',
    $asserted_at, $valid_from, $now, $now, $now, $content_hash,
    $visibility, $is_private, $scope, $run_id
)
on conflict do nothing
