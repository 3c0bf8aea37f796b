-- Returns the versions already applied. No params.
select
    m.version
from schema_migrations as m
