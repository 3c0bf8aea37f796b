-- Returns the episodes consumed by extract run $run_id, with text, vectors, and who said them (role,
-- origin, kind). Params: $user_id, $run_id.
select
    e.id,
    e.content,
    e.embedding,
    e.role,
    e.origin,
    e.kind
from episodes as e
where e.user_id = $user_id
    and e.consolidated_run_id = $run_id
    and e.embedding is not null
order by e.id
