-- Clears merged_into_id of one fact (used when a merge is reverted). Params: $user_id, $fact_id.
update facts
set
    merged_into_id = null,
    changed_at = now() at time zone 'UTC'
where user_id = $user_id
    and id = $fact_id
