-- Attaches a new, empty database file as `erase_copy` (the rewrite of the store). Params: $path.
attach $path as erase_copy
