-- Returns the tenant's archived (not restored) rows picked by table, ids and export run, plus the
-- archived fact_sources rows of picked facts. Columns: table_name, row_id, export_id, path.
-- Params: $user_id, $table_name (null = any), $ids (varchar[] or null), $run_id (export run or null).
with picked as (
    select r.table_name, r.row_id, r.export_id
    from archive_rows as r
    join archive_exports as x
        on x.export_id = r.export_id
    where r.user_id = $user_id
        and r.restored_at is null
        and ($table_name is null or r.table_name = $table_name)
        and ($ids is null or r.row_id in (select unnest($ids)))
        and ($run_id is null or x.run_id = $run_id)
),
with_sources as (
    select p.table_name, p.row_id, p.export_id
    from picked as p
    union
    select r.table_name, r.row_id, r.export_id
    from archive_rows as r
    join picked as p
        on p.table_name = 'facts'
        and r.parent_id = p.row_id
    where r.user_id = $user_id
        and r.table_name = 'fact_sources'
        and r.restored_at is null
)
select w.table_name, w.row_id, w.export_id, x.path
from with_sources as w
join archive_exports as x
    on x.export_id = w.export_id
where x.user_id = $user_id
order by x.path, w.table_name, w.row_id
