-- Returns, per tenant in $user_ids, the row count and an order-independent content hash (md5 over
-- the sorted md5s of each whole row as text) of one table. Params: $table, $user_ids (list).
select
    t.user_id,
    count(*) as n,
    md5(string_agg(md5(t::varchar), '' order by md5(t::varchar))) as digest
from query_table($table) as t
where list_contains($user_ids, t.user_id)
group by t.user_id
order by t.user_id
