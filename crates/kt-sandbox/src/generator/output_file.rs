//! Opening what a generator left in its `out/` directory without trusting it: kt may run as root, and the
//! program could have put a symbolic link to a root-only file, a FIFO (an open that never returns) or a device
//! where kt expects an array. Every file is opened without following links and without blocking, must be a
//! regular file within a size limit, and is then read through that one descriptor; every directory on the way
//! must be a real directory.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use super::error::GeneratorError;

/// Opens `relative` (e.g. `args/a.npy`) under `out`, which the generator wrote. Returns the file and its size.
pub(crate) fn open(
    out: &Path,
    relative: &str,
    max_bytes: u64,
) -> Result<(File, u64), GeneratorError> {
    let refused = |detail: String| GeneratorError::OutputRefused {
        file: relative.to_string(),
        detail,
    };
    // Each directory from `out` down must be a directory, not a link to one elsewhere.
    let mut dir = out.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for part in std::iter::once(".").chain(parts[..parts.len().saturating_sub(1)].iter().copied()) {
        if part == ".." || part.is_empty() {
            return Err(refused("the path leaves the output directory".into()));
        }
        if part != "." {
            dir.push(part);
        }
        let meta = std::fs::symlink_metadata(&dir)
            .map_err(|e| refused(format!("{}: {e}", dir.display())))?;
        if !meta.file_type().is_dir() {
            return Err(refused(format!(
                "{} is a {}, not a directory",
                dir.display(),
                kind(&meta.file_type())
            )));
        }
    }
    let path = out.join(relative);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refused("it is a symbolic link, which kt never follows".into())
            } else {
                refused(e.to_string())
            }
        })?;
    let meta = file.metadata().map_err(|e| refused(e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "it is a {}, not a regular file",
            kind(&meta.file_type())
        )));
    }
    if meta.len() > max_bytes {
        return Err(refused(format!(
            "it holds {} bytes, more than the {max_bytes} allowed",
            meta.len()
        )));
    }
    Ok((file, meta.len()))
}

fn kind(t: &std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else if t.is_dir() {
        "directory"
    } else {
        "regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("args")).unwrap();
        dir
    }

    fn refusal(out: &Path, file: &str) -> String {
        match open(out, file, 1 << 20) {
            Err(e @ GeneratorError::OutputRefused { .. }) => e.to_string(),
            other => panic!("{file}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_regular_file_within_the_limit_opens() {
        let dir = out_dir();
        std::fs::write(dir.path().join("args/a.npy"), b"1234").unwrap();
        let (_, len) = open(dir.path(), "args/a.npy", 4).unwrap();
        assert_eq!(len, 4);
        assert!(refusal_of_size(dir.path()).contains("more than the 3 allowed"));
    }

    fn refusal_of_size(out: &Path) -> String {
        open(out, "args/a.npy", 3).unwrap_err().to_string()
    }

    #[test]
    fn a_symbolic_link_to_a_secret_is_refused_not_followed() {
        let dir = out_dir();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"root only").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("args/a.npy")).unwrap();
        let text = refusal(dir.path(), "args/a.npy");
        assert!(
            text.contains("symbolic link") && text.contains("args/a.npy"),
            "{text}"
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once_instead_of_hanging() {
        let dir = out_dir();
        let fifo = dir.path().join("args/a.npy");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let start = std::time::Instant::now();
        let text = refusal(dir.path(), "args/a.npy");
        assert!(text.contains("FIFO"), "{text}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_linked_directory_and_a_path_that_climbs_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("a.npy"), b"x").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("args")).unwrap();
        assert!(refusal(dir.path(), "args/a.npy").contains("not a directory"));
        assert!(refusal(dir.path(), "../a.npy").contains("leaves the output directory"));
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert!(refusal(dir.path(), "d").contains("directory, not a regular file"));
    }
}
