-- Returns rows archived more than once at the same time (several open archive_rows entries). No params.
select r.user_id, r.table_name, r.row_id, count(*) as open_entries
from archive_rows as r
where r.restored_at is null
group by r.user_id, r.table_name, r.row_id
having count(*) > 1
