//! Nsight Compute profiles kept across runs. Starting ncu costs one to three seconds however short the kernel
//! (its own start, the program it watches, clock control), so the same kernel at the same configuration on
//! the same test and GPU is profiled once: every cell of an experiment shares its naive kernel's profile, and
//! a repeated run reuses the profiles of the steps it repeats. The key holds everything a profile depends on:
//! the kernel's code and launch geometry, the configuration, the test's content id, the GPU and its driver,
//! the ncu binary and the metric set. A file that cannot be read is a miss; a failed write only costs the
//! next run a profile.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kt_profile::KernelProfile;

/// Where the profile cache lives by default: `$KT_PROFILE_CACHE` (`off` turns it off), else
/// `$XDG_CACHE_HOME/kt/profiles`, else `~/.cache/kt/profiles`.
pub fn default_profile_cache() -> Option<PathBuf> {
    kt_sandbox::kt_cache_dir("KT_PROFILE_CACHE", "profiles")
}

/// What one profile depends on.
#[derive(Debug, Clone)]
pub struct ProfileKey {
    /// The kernel's code as compiled (its content hash).
    pub kernel_hash: String,
    /// The kernel's launch geometry (problem size and grid divisors), as JSON.
    pub geometry: String,
    pub params: BTreeMap<String, i64>,
    /// The test's content id (its directory name under tests/).
    pub test: String,
    /// The GPU's UUID (its name when the driver gave none) and the driver's version.
    pub gpu: String,
    pub driver: String,
    /// The ncu binary: its path, size and modification time (a new Nsight Compute is a new key).
    pub ncu: String,
}

impl ProfileKey {
    /// The file name: blake3 over every part and the metric set, 32 hex digits.
    pub fn file_name(&self) -> String {
        let mut h = blake3::Hasher::new();
        let params = serde_json::to_string(&self.params).unwrap_or_default();
        for part in [
            &self.kernel_hash,
            &self.geometry,
            &params,
            &self.test,
            &self.gpu,
            &self.driver,
            &self.ncu,
            &kt_profile::SUMMARY_METRICS.join(","),
        ] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        format!("{}.json", &h.finalize().to_hex()[..32])
    }
}

/// The ncu binary's identity for the key: path, size and modification time.
pub fn ncu_identity(ncu: &Path) -> String {
    let meta = std::fs::metadata(ncu).ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!("{}:{size}:{mtime}", ncu.display())
}

/// A directory of profiles, one JSON file per key.
#[derive(Debug, Clone)]
pub struct ProfileCache {
    dir: PathBuf,
}

impl ProfileCache {
    pub fn new(dir: PathBuf) -> Self {
        ProfileCache { dir }
    }

    /// The profile stored under `key`, if any and readable.
    pub fn get(&self, key: &ProfileKey) -> Option<KernelProfile> {
        let path = self.dir.join(key.file_name());
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str(&text) {
            Ok(profile) => Some(profile),
            Err(e) => {
                tracing::debug!(file = %path.display(), error = %e, "unreadable cached profile; profiling again");
                None
            }
        }
    }

    /// Stores `profile` under `key` (written whole, then renamed into place, so a reader never sees half a
    /// file). A failure is logged and otherwise ignored.
    pub fn put(&self, key: &ProfileKey, profile: &KernelProfile) {
        if let Err(e) = self.try_put(key, profile) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "the profile could not be cached; the next run profiles this kernel again");
        }
    }

    fn try_put(&self, key: &ProfileKey, profile: &KernelProfile) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let text = serde_json::to_vec_pretty(profile).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        std::io::Write::write_all(&mut tmp, &text)?;
        tmp.persist(self.dir.join(key.file_name()))
            .map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn profile() -> KernelProfile {
        KernelProfile::parse(include_str!(
            "../../../../kt-profile/tests/fixtures/captured-matmul-naive-h100.csv"
        ))
        .unwrap()
    }

    fn key(params: &BTreeMap<String, i64>, test: &str) -> ProfileKey {
        ProfileKey {
            kernel_hash: "abc".into(),
            geometry: "{}".into(),
            params: params.clone(),
            test: test.into(),
            gpu: "GPU-1".into(),
            driver: "13.0".into(),
            ncu: "/usr/bin/ncu:1:2".into(),
        }
    }

    #[test]
    fn a_stored_profile_is_found_under_the_same_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ProfileCache::new(dir.path().join("profiles"));
        let params: BTreeMap<String, i64> = [("block_size_x".to_string(), 16)].into();
        let other: BTreeMap<String, i64> = [("block_size_x".to_string(), 32)].into();
        assert!(cache.get(&key(&params, "t1")).is_none());
        cache.put(&key(&params, "t1"), &profile());
        assert_eq!(cache.get(&key(&params, "t1")), Some(profile()));
        assert!(cache.get(&key(&other, "t1")).is_none());
        assert!(cache.get(&key(&params, "t2")).is_none());
        let mut new_gpu = key(&params, "t1");
        new_gpu.gpu = "GPU-2".into();
        assert!(cache.get(&new_gpu).is_none());
    }

    #[test]
    fn parts_cannot_run_into_each_other() {
        let params = BTreeMap::new();
        let mut a = key(&params, "t");
        a.gpu = "ab".into();
        a.driver = "c".into();
        let mut b = key(&params, "t");
        b.gpu = "a".into();
        b.driver = "bc".into();
        assert_ne!(a.file_name(), b.file_name());
    }

    #[test]
    fn an_unreadable_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ProfileCache::new(dir.path().to_path_buf());
        let params = BTreeMap::new();
        std::fs::write(dir.path().join(key(&params, "t").file_name()), "{not json").unwrap();
        assert!(cache.get(&key(&params, "t")).is_none());
    }

    #[test]
    fn a_cache_that_cannot_be_written_is_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let cache = ProfileCache::new(file.join("profiles"));
        let params = BTreeMap::new();
        cache.put(&key(&params, "t"), &profile());
        assert!(cache.get(&key(&params, "t")).is_none());
    }
}
