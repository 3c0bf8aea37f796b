-- Returns the active facts of the tenant whose frame is the frame of a fact in the registered table
-- `framed_facts` (id), with the moment each is valid from. Params: $user_id.
select
    f.id,
    f.text,
    coalesce(f.valid_from, f.asserted_at, f.created_at) as valid_from
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and f.frame_key in (
        select n.frame_key
        from facts as n
        inner join framed_facts as w on n.id = w.id
        where n.user_id = $user_id
            and n.frame_key <> ''
    )
order by f.id
