-- Returns the user_id of every tenant with episodes or facts in the open store, sorted. No params.
select distinct u.user_id as user_id
from (
    select e.user_id from episodes as e
    union
    select f.user_id from facts as f
) as u
order by u.user_id
