//! Writing a run's records so that a crash, a kill or a full disk never leaves one half-written: the bytes go
//! to a temporary file beside the record, are flushed to the disk, and only then replace the record by a rename
//! (atomic on one file system), after which the directory entry is flushed too. On failure the temporary file
//! is removed and the previous record stays whole.

use std::io::Write;
use std::path::Path;

use crate::error::RecordError;

/// Prefix of the temporary files (dot files: `kt runs` and readers of the run directory skip them).
const TEMP_PREFIX: &str = ".kt-write-";

/// Replaces `path` with `bytes` atomically (see the module documentation).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)
        .map_err(|e| RecordError::io("creating directory", parent, e))?;
    let failed = |e: std::io::Error| write_error(path, parent, bytes.len() as u64, e);
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(parent)
        .map_err(failed)?;
    temp.write_all(bytes).map_err(failed)?;
    temp.as_file().sync_all().map_err(failed)?;
    // On error the temporary file is removed when `persist`'s error is dropped.
    temp.persist(path).map_err(|e| failed(e.error))?;
    // The rename itself is durable only once the directory is flushed; a failure here loses nothing written.
    if let Ok(dir) = std::fs::File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Removes temporary files a killed kt left in `dir` (only kt's own, by prefix).
pub fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name.to_string_lossy().starts_with(TEMP_PREFIX)
            || name.to_string_lossy().ends_with(".tmp-write");
        if stale && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn write_error(path: &Path, parent: &Path, needed: u64, source: std::io::Error) -> RecordError {
    if source.raw_os_error() == Some(libc_enospc())
        || source.kind() == std::io::ErrorKind::StorageFull
    {
        let available = nix::sys::statvfs::statvfs(parent)
            .map(|s| s.blocks_available() * s.fragment_size())
            .ok();
        return RecordError::DiskFull {
            path: path.to_path_buf(),
            needed,
            available,
        };
    }
    RecordError::io("writing", path, source)
}

/// ENOSPC (28 on Linux).
fn libc_enospc() -> i32 {
    nix::errno::Errno::ENOSPC as i32
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_replaced_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_atomically(&path, b"{\"old\": 1}").unwrap();
        write_atomically(&path, b"{\"new\": 2}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"new\": 2}");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["result.json"]);
    }

    #[test]
    fn a_failed_write_keeps_the_previous_record_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_atomically(&path, b"whole").unwrap();
        // A directory where the record should go cannot be replaced by a file: the rename fails.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("x"), b"x").unwrap();
        assert!(write_atomically(&blocked, b"new").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_PREFIX))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_full_disk_says_how_much_space_was_needed() {
        let err = write_error(
            Path::new("/run/x/result.json"),
            Path::new("/"),
            4096,
            std::io::Error::from_raw_os_error(libc_enospc()),
        );
        let text = err.to_string();
        assert!(
            text.contains("4096 bytes") && text.contains("unchanged"),
            "{text}"
        );
    }

    #[test]
    fn stale_temporaries_of_a_killed_writer_are_removed_and_records_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".kt-write-abc"), b"half").unwrap();
        std::fs::write(dir.path().join("run.tmp-write"), b"half").unwrap();
        std::fs::write(dir.path().join("run.json"), b"{}").unwrap();
        remove_stale_temporaries(dir.path());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["run.json"]);
    }
}
