-- Returns (row_key, h) for every facts row of the tenant: the id and a hash of the whole row, so a
-- patch can find every row it changed without copying the rows. Params: $user_id.
select
    t.id as row_key,
    hash(t) as h
from facts as t
where t.user_id = $user_id
