-- Clears valid_to of one fact (used when a supersede is reverted). Params: $user_id, $fact_id.
update facts
set
    valid_to = null,
    changed_at = now() at time zone 'UTC'
where user_id = $user_id
    and id = $fact_id
