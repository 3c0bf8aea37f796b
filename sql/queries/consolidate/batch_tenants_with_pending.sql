-- Returns the tenants with pending reviews (any kind), for one batch job over all of them. No params.
select distinct r.user_id
from llm_reviews as r
where r.status = 'pending'
order by r.user_id
