-- Copies every table, view, sequence and macro of the open store {database} into `erase_copy`
-- ({database}: the quoted current_database(), filled in by engram/erase/compact.py). No params.
copy from database {database} to erase_copy
