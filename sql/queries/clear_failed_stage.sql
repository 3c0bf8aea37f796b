-- Deletes the 'failed' runs row of one stage of one run for one tenant once that stage succeeded
-- (stages that record their own row replace it anyway). Params: $run_id, $user_id, $stage.
delete from runs as r
where r.run_id = $run_id
    and r.user_id = $user_id
    and r.stage = $stage
    and r.status = 'failed'
