-- Returns the ask session (id, n_exchanges, summary, summary_through) of the tenant, or no row.
-- Params: $user_id, $session_id.
select
    s.id,
    s.n_exchanges,
    s.summary,
    s.summary_through
from ask_sessions as s
where s.user_id = $user_id
    and s.id = $session_id
