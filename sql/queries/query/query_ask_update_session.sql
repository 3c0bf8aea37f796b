-- Records a new exchange count on the session and, when $summary is not null, a new rolling summary
-- covering exchanges up to $summary_through. Params: $user_id, $session_id, $n, $summary,
-- $summary_through, $now.
update ask_sessions as s
set
    n_exchanges = $n,
    updated_at = $now,
    summary = coalesce($summary::varchar, s.summary),
    summary_through = case when $summary::varchar is null then s.summary_through else $summary_through end
where s.user_id = $user_id
    and s.id = $session_id
