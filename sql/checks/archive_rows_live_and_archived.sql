-- Returns rows that are live and archived at once (an open archive_rows entry for a live row).
-- Every row must be either live or archived, exactly once. No params.
select r.user_id, r.table_name, r.row_id, r.export_id
from archive_rows as r
join facts as f
    on f.user_id = r.user_id
    and f.id = r.row_id
where r.table_name = 'facts'
    and r.restored_at is null
union all
select r.user_id, r.table_name, r.row_id, r.export_id
from archive_rows as r
join episodes as e
    on e.user_id = r.user_id
    and e.id = r.row_id
where r.table_name = 'episodes'
    and r.restored_at is null
union all
select r.user_id, r.table_name, r.row_id, r.export_id
from archive_rows as r
join fact_sources as s
    on s.user_id = r.user_id
    and s.fact_id = r.parent_id
    and r.row_id = s.fact_id || chr(31) || s.episode_id || chr(31) || s.relation
where r.table_name = 'fact_sources'
    and r.restored_at is null
