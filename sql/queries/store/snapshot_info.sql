-- Returns when a read snapshot was made and whether it holds private rows (its one snapshot_info row).
-- No params.
select
    i.snapshot_id,
    i.created_at,
    i.include_private
from snapshot_info as i
