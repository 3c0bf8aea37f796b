-- Returns the ids of the tenant's facts whose time (valid_from, else when asserted) lies in
-- [$start, $end) (a time a question names), at most $cap of them; the caller ranks them and the
-- candidate filters decide what may be returned. Params: $user_id, $start, $end, $cap.
select f.id
from facts as f
where f.user_id = $user_id
    and coalesce(f.valid_from, f.asserted_at) >= $start::timestamp
    and coalesce(f.valid_from, f.asserted_at) < $end::timestamp
limit $cap
