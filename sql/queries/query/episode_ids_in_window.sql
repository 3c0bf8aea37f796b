-- Returns the ids of the tenant's episodes written in [$start, $end) (a time a question names), at most
-- $cap of them; the caller ranks them and the candidate filters decide what may be returned.
-- Params: $user_id, $start, $end, $cap.
select e.id
from episodes as e
where e.user_id = $user_id
    and e.created_at >= $start::timestamp
    and e.created_at < $end::timestamp
limit $cap
