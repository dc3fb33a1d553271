//! SQLite store: one file per run directory, WAL mode, one transaction per checkpoint.
//!
//! Durability choice: `synchronous=NORMAL` with WAL. A committed checkpoint survives a crash of the process
//! (the kill test relies on that); only a power loss or OS crash can drop the last few commits, never corrupt
//! the file. That costs no fsync per step, which is most of the difference to `FULL` on a long loop.

use super::CheckpointStore;
use crate::checkpoint::{Checkpoint, GraphRunMeta};
use crate::checkpoint_head::{CheckpointHead, SNAPSHOT_TAG, STATE_KEY, head_from_json};
use crate::error::GraphError;
use crate::ids::{BranchId, CheckpointId, RunId};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kt_runs (run TEXT PRIMARY KEY, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kt_checkpoints (
    run TEXT NOT NULL, id INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (run, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kt_task_writes (
    run TEXT NOT NULL, at INTEGER NOT NULL, task TEXT NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (run, at, task)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kt_effects (
    run TEXT NOT NULL, branch INTEGER NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (run, branch, key)) WITHOUT ROWID;
";

/// A [`CheckpointStore`] in an SQLite file.
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`. A file that is not an SQLite database, or is
    /// truncated, gives [`GraphError::StoreCorrupt`] and is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GraphError> {
        let path = path.as_ref().to_path_buf();
        let location = path.display().to_string();
        let conn = Connection::open(&path).map_err(|e| classify(&location, "open", e))?;
        // Reading the schema first touches the header and every page of sqlite_schema: a foreign or
        // truncated file fails here, before any write could damage it.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(|e| classify(&location, "open", e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| classify(&location, "open", e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| classify(&location, "open", e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| classify(&location, "create schema", e))?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // rusqlite rolls back an open transaction when it is dropped, so a poisoned lock holds a usable
        // connection.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, operation: &str, e: rusqlite::Error) -> GraphError {
        classify(&self.location(), operation, e)
    }

    fn decode_checkpoint(
        run: &RunId,
        id: CheckpointId,
        body: &[u8],
    ) -> Result<Checkpoint, GraphError> {
        serde_json::from_slice(body).map_err(|e| GraphError::CorruptCheckpoint {
            run: run.clone(),
            checkpoint: id,
            reason: e.to_string(),
        })
    }
}

fn classify(location: &str, operation: &str, e: rusqlite::Error) -> GraphError {
    let corrupt = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    );
    if corrupt {
        GraphError::StoreCorrupt {
            location: location.to_string(),
            reason: e.to_string(),
        }
    } else {
        GraphError::Store {
            location: location.to_string(),
            operation: operation.to_string(),
            reason: e.to_string(),
        }
    }
}

fn to_json<T: serde::Serialize>(run: &RunId, what: &str, v: &T) -> Result<Vec<u8>, GraphError> {
    serde_json::to_vec(v).map_err(|e| GraphError::Serialize {
        run: run.clone(),
        what: what.into(),
        reason: e.to_string(),
    })
}

impl CheckpointStore for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn create_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError> {
        let body = to_json(&meta.run, "run record", meta)?;
        let conn = self.lock();
        let inserted = conn
            .prepare_cached("INSERT OR IGNORE INTO kt_runs (run, meta) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![meta.run.as_str(), body]))
            .map_err(|e| self.err("create run", e))?;
        if inserted == 0 {
            return Err(GraphError::RunExists {
                run: meta.run.clone(),
            });
        }
        Ok(())
    }

    fn get_run(&self, run: &RunId) -> Result<Option<GraphRunMeta>, GraphError> {
        let conn = self.lock();
        let body: Option<Vec<u8>> = conn
            .prepare_cached("SELECT meta FROM kt_runs WHERE run = ?1")
            .and_then(|mut s| s.query_row(params![run.as_str()], |r| r.get(0)).optional())
            .map_err(|e| self.err("read run", e))?;
        body.map(|b| {
            serde_json::from_slice(&b).map_err(|e| GraphError::StoreCorrupt {
                location: self.location(),
                reason: format!("run `{run}` record does not decode: {e}"),
            })
        })
        .transpose()
    }

    fn update_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError> {
        let body = to_json(&meta.run, "run record", meta)?;
        let conn = self.lock();
        let n = conn
            .prepare_cached("UPDATE kt_runs SET meta = ?2 WHERE run = ?1")
            .and_then(|mut s| s.execute(params![meta.run.as_str(), body]))
            .map_err(|e| self.err("update run", e))?;
        if n == 0 {
            return Err(GraphError::RunNotFound {
                run: meta.run.clone(),
            });
        }
        Ok(())
    }

    fn list_runs(&self) -> Result<Vec<RunId>, GraphError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT run FROM kt_runs ORDER BY run")
            .map_err(|e| self.err("list runs", e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err("list runs", e))?;
        Ok(rows.into_iter().map(RunId).collect())
    }

    fn put_checkpoint(&self, run: &RunId, checkpoint: &Checkpoint) -> Result<(), GraphError> {
        let body = to_json(run, &format!("checkpoint {}", checkpoint.id), checkpoint)?;
        let mut conn = self.lock();
        let tx = conn
            .transaction()
            .map_err(|e| self.err("begin checkpoint", e))?;
        tx.prepare_cached("INSERT INTO kt_checkpoints (run, id, body) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![run.as_str(), checkpoint.id.0 as i64, body]))
            .map_err(|e| self.err("write checkpoint", e))?;
        if let Some(parent) = checkpoint.parent {
            tx.prepare_cached("DELETE FROM kt_task_writes WHERE run = ?1 AND at = ?2")
                .and_then(|mut s| s.execute(params![run.as_str(), parent.0 as i64]))
                .map_err(|e| self.err("clear task writes", e))?;
        }
        tx.commit().map_err(|e| self.err("commit checkpoint", e))
    }

    fn get_checkpoint(
        &self,
        run: &RunId,
        id: CheckpointId,
    ) -> Result<Option<Checkpoint>, GraphError> {
        let conn = self.lock();
        let body: Option<Vec<u8>> = conn
            .prepare_cached("SELECT body FROM kt_checkpoints WHERE run = ?1 AND id = ?2")
            .and_then(|mut s| {
                s.query_row(params![run.as_str(), id.0 as i64], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| self.err("read checkpoint", e))?;
        body.map(|b| Self::decode_checkpoint(run, id, &b))
            .transpose()
    }

    fn latest_checkpoint(&self, run: &RunId) -> Result<Option<CheckpointId>, GraphError> {
        let conn = self.lock();
        let id: Option<i64> = conn
            .prepare_cached("SELECT max(id) FROM kt_checkpoints WHERE run = ?1")
            .and_then(|mut s| s.query_row(params![run.as_str()], |r| r.get(0)))
            .map_err(|e| self.err("find latest checkpoint", e))?;
        Ok(id.map(|i| CheckpointId(i as u64)))
    }

    fn list_checkpoints(&self, run: &RunId) -> Result<Vec<Checkpoint>, GraphError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached("SELECT id, body FROM kt_checkpoints WHERE run = ?1 ORDER BY id")
            .map_err(|e| self.err("list checkpoints", e))?;
        let rows = stmt
            .query_map(params![run.as_str()], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err("list checkpoints", e))?;
        rows.into_iter()
            .map(|(id, body)| Self::decode_checkpoint(run, CheckpointId(id as u64), &body))
            .collect()
    }

    fn latest_checkpoint_on_branch(
        &self,
        run: &RunId,
        branch: BranchId,
    ) -> Result<Option<CheckpointId>, GraphError> {
        // newest first, stopping at the first on the branch: usually one body is read, not the run's
        let conn = self.lock();
        let id: Option<i64> = conn
            .prepare_cached(
                "SELECT id FROM kt_checkpoints WHERE run = ?1
                 AND json_extract(CAST(body AS TEXT), '$.branch') = ?2 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![run.as_str(), branch.0], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| self.err("find the latest checkpoint of a branch", e))?;
        Ok(id.map(|i| CheckpointId(i as u64)))
    }

    fn list_checkpoint_heads(&self, run: &RunId) -> Result<Vec<CheckpointHead>, GraphError> {
        // SQLite cuts each body before its state (the state comes last: see STATE_KEY) and only the heads
        // are decoded: on a long run the states, its full snapshots above all, are most of the store. A
        // body without the key is read whole.
        let rows: Vec<(i64, i64, Vec<u8>, bool)> = {
            let conn = self.lock();
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, at, substr(body, 1, at - 1), substr(body, at + ?3, ?4) = ?5
                     FROM (SELECT id, body, instr(body, ?2) AS at FROM kt_checkpoints WHERE run = ?1)
                     ORDER BY id",
                )
                .map_err(|e| self.err("list checkpoints", e))?;
            let args = params![
                run.as_str(),
                STATE_KEY,
                STATE_KEY.len() as i64,
                SNAPSHOT_TAG.len() as i64,
                SNAPSHOT_TAG
            ];
            stmt.query_map(args, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| self.err("list checkpoints", e))?
        };
        let mut heads = Vec::with_capacity(rows.len());
        for (id, at, before_state, snapshot) in rows {
            if let Some(head) = (at > 0)
                .then(|| head_from_json(&before_state, snapshot))
                .flatten()
            {
                heads.push(head);
            } else if let Some(cp) = self.get_checkpoint(run, CheckpointId(id as u64))? {
                // (a checkpoint gone since the first read is no longer part of the run)
                heads.push(CheckpointHead::from(cp));
            }
        }
        Ok(heads)
    }

    fn list_checkpoints_before(
        &self,
        run: &RunId,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<Checkpoint>, GraphError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, body FROM kt_checkpoints WHERE run = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
            )
            .map_err(|e| self.err("list checkpoints", e))?;
        let before = before.map_or(i64::MAX, |b| b.0 as i64);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows = stmt
            .query_map(params![run.as_str(), before, limit], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err("list checkpoints", e))?;
        rows.reverse();
        rows.into_iter()
            .map(|(id, body)| Self::decode_checkpoint(run, CheckpointId(id as u64), &body))
            .collect()
    }

    fn count_checkpoints(&self, run: &RunId) -> Result<u64, GraphError> {
        let conn = self.lock();
        let n: i64 = conn
            .prepare_cached("SELECT count(*) FROM kt_checkpoints WHERE run = ?1")
            .and_then(|mut s| s.query_row(params![run.as_str()], |r| r.get(0)))
            .map_err(|e| self.err("count checkpoints", e))?;
        Ok(n as u64)
    }

    fn put_task_write(
        &self,
        run: &RunId,
        at: CheckpointId,
        task: &str,
        write: &Value,
    ) -> Result<(), GraphError> {
        let body = to_json(run, &format!("write of task {task}"), write)?;
        let conn = self.lock();
        conn.prepare_cached(
            "INSERT OR REPLACE INTO kt_task_writes (run, at, task, body) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut s| s.execute(params![run.as_str(), at.0 as i64, task, body]))
        .map_err(|e| self.err("save task write", e))?;
        Ok(())
    }

    fn task_writes(
        &self,
        run: &RunId,
        at: CheckpointId,
    ) -> Result<Vec<(String, Value)>, GraphError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT task, body FROM kt_task_writes WHERE run = ?1 AND at = ?2 ORDER BY task",
            )
            .map_err(|e| self.err("read task writes", e))?;
        let rows = stmt
            .query_map(params![run.as_str(), at.0 as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err("read task writes", e))?;
        rows.into_iter()
            .map(|(task, body)| {
                serde_json::from_slice(&body)
                    .map(|v| (task.clone(), v))
                    .map_err(|e| GraphError::CorruptCheckpoint {
                        run: run.clone(),
                        checkpoint: at,
                        reason: format!("saved write of task {task} does not decode: {e}"),
                    })
            })
            .collect()
    }

    fn put_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
        value: &Value,
    ) -> Result<(), GraphError> {
        let body = to_json(run, &format!("effect {key}"), value)?;
        let conn = self.lock();
        conn.prepare_cached(
            "INSERT OR REPLACE INTO kt_effects (run, branch, key, body) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut s| s.execute(params![run.as_str(), branch.0, key, body]))
        .map_err(|e| self.err("journal effect", e))?;
        Ok(())
    }

    fn get_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
    ) -> Result<Option<Value>, GraphError> {
        let conn = self.lock();
        let body: Option<Vec<u8>> = conn
            .prepare_cached(
                "SELECT body FROM kt_effects WHERE run = ?1 AND branch = ?2 AND key = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![run.as_str(), branch.0, key], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| self.err("read effect", e))?;
        body.map(|b| {
            serde_json::from_slice(&b).map_err(|e| GraphError::StoreCorrupt {
                location: self.location(),
                reason: format!("run `{run}` journaled effect `{key}` does not decode: {e}"),
            })
        })
        .transpose()
    }

    fn count_effects(&self, run: &RunId) -> Result<u64, GraphError> {
        let conn = self.lock();
        let n: i64 = conn
            .prepare_cached("SELECT count(*) FROM kt_effects WHERE run = ?1")
            .and_then(|mut s| s.query_row(params![run.as_str()], |r| r.get(0)))
            .map_err(|e| self.err("count effects", e))?;
        Ok(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        super::super::conformance::run_all(
            &SqliteStore::open(dir.path().join("run.sqlite")).unwrap(),
        );
    }

    #[test]
    fn a_path_that_cannot_be_opened_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("run.sqlite");
        let err = SqliteStore::open(&path)
            .err()
            .expect("a missing directory cannot hold a database");
        assert!(
            matches!(err, GraphError::Store { ref operation, .. } if operation == "open"),
            "{err}"
        );
        assert!(err.to_string().contains("missing-dir"), "{err}");
    }

    #[test]
    fn data_survives_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sqlite");
        {
            let store = SqliteStore::open(&path).unwrap();
            super::super::conformance::seed(&store, "kept");
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.list_runs().unwrap(), vec![RunId::new("kept")]);
        assert_eq!(
            store.latest_checkpoint(&RunId::new("kept")).unwrap(),
            Some(CheckpointId(1))
        );
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sqlite");
        let garbage =
            b"this is not a database, just some text that happens to be long enough".repeat(100);
        std::fs::write(&path, &garbage).unwrap();
        let err = SqliteStore::open(&path)
            .err()
            .expect("garbage must be refused");
        assert!(matches!(err, GraphError::StoreCorrupt { .. }), "{err}");
        assert!(err.to_string().contains("run.sqlite"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), garbage);
    }

    #[test]
    fn a_truncated_file_gives_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sqlite");
        {
            let store = SqliteStore::open(&path).unwrap();
            for i in 0..20 {
                super::super::conformance::seed(&store, &format!("run{i}"));
            }
            let conn = store.lock();
            conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")
                .unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 4096, "the test needs a multi-page file");
        std::fs::write(&path, &bytes[..bytes.len() / 2 + 100]).unwrap();
        let result = SqliteStore::open(&path).and_then(|s| {
            for i in 0..20 {
                let run = RunId::new(format!("run{i}"));
                s.get_run(&run)?;
                s.list_checkpoints(&run)?;
            }
            Ok(())
        });
        let err = result.expect_err("a truncated file must not read back cleanly");
        assert!(
            matches!(
                err,
                GraphError::StoreCorrupt { .. } | GraphError::Store { .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_corrupt_checkpoint_body_names_run_and_checkpoint_and_spares_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("run.sqlite")).unwrap();
        super::super::conformance::seed(&store, "a");
        super::super::conformance::seed(&store, "b");
        store
            .lock()
            .execute(
                "UPDATE kt_checkpoints SET body = x'7b7b' WHERE run = 'a' AND id = 1",
                [],
            )
            .unwrap();
        let err = store
            .get_checkpoint(&RunId::new("a"), CheckpointId(1))
            .unwrap_err();
        match &err {
            GraphError::CorruptCheckpoint {
                run, checkpoint, ..
            } => {
                assert_eq!((run.as_str(), *checkpoint), ("a", CheckpointId(1)));
            }
            other => panic!("unexpected {other}"),
        }
        assert!(
            store
                .get_checkpoint(&RunId::new("b"), CheckpointId(1))
                .unwrap()
                .is_some()
        );
        assert!(
            store
                .get_checkpoint(&RunId::new("a"), CheckpointId(0))
                .unwrap()
                .is_some()
        );
    }
}
