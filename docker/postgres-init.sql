-- Runs once, when the PostgreSQL volume is first created (docker-compose.yml): the test suite's role and
-- database, as .ci/run prepares them on the host (user postgres, database test).
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'postgres') THEN
    CREATE ROLE postgres LOGIN SUPERUSER PASSWORD 'postgres';
  ELSE
    ALTER ROLE postgres PASSWORD 'postgres';
  END IF;
END $$;
CREATE DATABASE test OWNER postgres;
