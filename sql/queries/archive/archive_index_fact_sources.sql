-- Indexes as archived the tenant's live fact_sources rows that are in the verified files of a batch
-- (registered table `archive_file_fact_sources`), unchanged since export, whose fact this batch
-- archives (an open archive_rows entry in $export_ids). Params: $user_id, $export_ids, $now.
insert into archive_rows (user_id, table_name, row_id, export_id, parent_id, archived_at)
select
    s.user_id,
    'fact_sources',
    s.fact_id || chr(31) || s.episode_id || chr(31) || s.relation,
    a.export_id,
    s.fact_id,
    $now
from archive_file_fact_sources as a
join fact_sources as s
    on s.user_id = a.user_id
    and s.fact_id = a.fact_id
    and s.episode_id = a.episode_id
    and s.relation = a.relation
where s.user_id = $user_id
    and s.similarity is not distinct from a.similarity
    and s.run_id is not distinct from a.run_id
    and s.created_at is not distinct from a.created_at
    and exists (
        select 1
        from archive_rows as r
        where r.user_id = s.user_id
            and r.table_name = 'facts'
            and r.row_id = s.fact_id
            and r.restored_at is null
            and list_contains($export_ids, r.export_id)
    )
on conflict do nothing
