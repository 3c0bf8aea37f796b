-- Returns $n facts of the tenant (text, embedding) in a fixed pseudo-random order, to derive
-- benchmark queries from. Params: $user_id, $n.
select
    f.text,
    f.embedding
from facts as f
where f.user_id = $user_id
    and f.embedding is not null
order by hash(f.id)
limit $n
