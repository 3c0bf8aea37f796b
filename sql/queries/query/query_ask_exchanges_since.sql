-- Returns the session's exchanges after seq $after (seq, query, answer, refused), oldest first.
-- Params: $user_id, $session_id, $after.
select
    x.seq,
    x.query,
    x.answer,
    x.refused
from ask_exchanges as x
where x.user_id = $user_id
    and x.session_id = $session_id
    and x.seq > $after
order by x.seq
