psql -h 127.0.0.1 -U postgres -Atc "select xact_commit, tup_returned, tup_fetched, tup_inserted, tup_updated, blks_hit, blks_read from pg_stat_database where datname='audit_bench_service'"
