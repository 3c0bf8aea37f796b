-- Detaches `erase_copy` (which writes it out). No params.
detach erase_copy
