-- Explicit ids of the registered `incoming_episodes` that the store already holds for other content:
-- returns (user_id, id). No params.
select distinct
    i.user_id as user_id,
    i.id as id
from incoming_episodes as i
join episodes as e
    on e.user_id = i.user_id
    and e.id = i.id
where i.id_given
    and e.content_hash <> i.content_hash
