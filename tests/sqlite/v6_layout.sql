-- A store file of this once taken back to schema version 6's tables: tasks
-- keyed by (principal, task_id) with no rid column, events keyed by
-- (principal, task_id, generation). The tests that make a file of an older
-- version (tests/sqlite/basics.c, tests/e2e/test_migrate.py) run this
-- first, then take out what the versions before 6 lacked, so the migration
-- they test meets the tables those versions had.
ALTER TABLE tasks RENAME TO tasks_v7;
ALTER TABLE events RENAME TO events_v7;
CREATE TABLE tasks(
 principal TEXT NOT NULL, task_id TEXT NOT NULL, context_id TEXT NOT NULL,
 state INTEGER NOT NULL, kind INTEGER NOT NULL, version INTEGER NOT NULL,
 generation INTEGER NOT NULL, fence INTEGER NOT NULL, step INTEGER NOT NULL,
 lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL,
 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER NOT NULL,
 digests TEXT NOT NULL, task_json TEXT NOT NULL, checkpoint TEXT, push_json TEXT,
 journal TEXT, packed BLOB,
 PRIMARY KEY(principal, task_id)) STRICT;
INSERT INTO tasks(rowid, principal, task_id, context_id, state, kind, version, generation,
 fence, step, lease_owner, lease_until, created_at, updated_at, finished_at, digests,
 task_json, checkpoint, push_json, journal, packed)
 SELECT rid, principal, task_id, context_id, state, kind, version, generation, fence, step,
 lease_owner, lease_until, created_at, updated_at, finished_at, digests, task_json,
 checkpoint, push_json, journal, packed FROM tasks_v7;
CREATE TABLE events(
 principal TEXT NOT NULL, task_id TEXT NOT NULL, generation INTEGER NOT NULL,
 payload TEXT NOT NULL,
 PRIMARY KEY(principal, task_id, generation)) STRICT, WITHOUT ROWID;
INSERT INTO events SELECT t.principal, t.task_id, e.generation, e.payload
 FROM events_v7 e JOIN tasks_v7 t ON t.rid = e.tid;
DROP TABLE events_v7;
DROP TABLE tasks_v7;
CREATE INDEX tasks_lease ON tasks(lease_until, principal, task_id) WHERE state<5 AND lease_until>0;
CREATE INDEX tasks_sweep ON tasks(finished_at, principal, task_id) WHERE state>=5;
CREATE INDEX tasks_list ON tasks(principal, created_at, task_id);
CREATE INDEX tasks_list_ctx ON tasks(principal, context_id, created_at, task_id);
CREATE INDEX tasks_list_state ON tasks(principal, state, created_at, task_id);
CREATE INDEX tasks_list_ctx_state ON tasks(principal, context_id, state, created_at, task_id);
PRAGMA user_version=6;
