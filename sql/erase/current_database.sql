-- Returns the catalog name of the open store. No params.
select current_database() as name
