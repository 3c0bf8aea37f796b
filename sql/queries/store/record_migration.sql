-- Records one applied schema file. Params: $version, $checksum.
insert into schema_migrations (version, checksum)
values ($version, $checksum)
on conflict do nothing
