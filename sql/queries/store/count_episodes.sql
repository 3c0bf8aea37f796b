-- Returns the number of episode rows (all tenants); used to count what an insert added. No params.
select
    count(*) as n
from episodes as e
