-- v36: Agents added over the API or the CLI
-- The agents a supervisor added with PUT /api/agents/{name} or an operator
-- with `jarvis agent add`, watched beside the configuration file's (which
-- win a name both give). name is as given, unique in any case; cadence
-- and grace are milliseconds (cadence 0: the default, or the schedule's);
-- schedule is a cron schedule in time_zone, '' for none; depends_on the
-- names it needs, comma-separated. added_by is the credential or "cli"
-- that added or last changed it, at added_at (Unix milliseconds).
CREATE TABLE added_agent (
	name       TEXT   PRIMARY KEY,
	name_key   TEXT   NOT NULL UNIQUE,
	cadence    BIGINT NOT NULL,
	grace      BIGINT NOT NULL,
	schedule   TEXT   NOT NULL,
	time_zone  TEXT   NOT NULL,
	depends_on TEXT   NOT NULL,
	added_by   TEXT   NOT NULL,
	added_at   BIGINT NOT NULL
);
