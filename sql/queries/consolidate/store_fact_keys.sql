-- Stores the derived keys of the facts in the registered table `incoming_fact_keys`
-- (id, statement_key, frame_key, valence_code). Keys are no search column and are computed once per fact, so this
-- leaves changed_at alone: marking every keyed row would send it to every search reader's delta.
-- Params: $user_id, $version.
update facts as f
set statement_key = k.statement_key,
    frame_key = k.frame_key,
    valence_code = k.valence_code,
    keys_version = $version
from incoming_fact_keys as k
where f.user_id = $user_id
    and f.id = k.id
