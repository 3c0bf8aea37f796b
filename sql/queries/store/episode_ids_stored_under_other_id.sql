-- Records of the registered `incoming_episodes` given without an id that the store holds under
-- another id (stored before ids included session and role): returns (user_id, incoming_id, stored_id).
-- No params.
select
    i.user_id as user_id,
    i.id as incoming_id,
    min(e.id) as stored_id
from incoming_episodes as i
join episodes as e
    on e.user_id = i.user_id
    and e.content_hash = i.content_hash
    and e.created_at = i.created_at
    and e.session_id is not distinct from i.session_id
    and e.role is not distinct from i.role
where not i.id_given
    and e.id <> i.id
    and not exists (
        select 1
        from episodes as x
        where x.user_id = i.user_id
            and x.id = i.id
    )
group by i.user_id, i.id
