//! Turning what the harness wrote into a content-addressed test directory: re-check every file against the spec
//! (the harness shares its process with untrusted code), hash, and move into place atomically.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::GeneratorError;
use super::output_file;
use kt_record::tests_format::{DType, FORMAT, ManifestArg, TestManifest, npy};

use super::element::dtype_size;
use super::spec::{ArgSpec, GeneratorSpec};

/// The largest array file a spec allows: its total data plus a header.
fn max_file_bytes(spec: &GeneratorSpec) -> u64 {
    spec.max_total_bytes.saturating_add(1 << 20)
}

/// Checks the harness's argument list against the spec and the .npy files in `out`, returning the manifest.
pub(crate) fn validate(
    spec: &GeneratorSpec,
    seed: u64,
    args: Vec<ManifestArg>,
    problem_size: Option<Vec<i64>>,
    out: &Path,
) -> Result<TestManifest, GeneratorError> {
    if args.len() != spec.params.len() {
        return Err(invalid(format!(
            "{} arguments reported for {} parameters",
            args.len(),
            spec.params.len()
        )));
    }
    let mut total = 0u64;
    for (arg, param) in args.iter().zip(&spec.params) {
        match arg {
            ManifestArg::Array {
                name,
                dtype,
                shape,
                file,
                ..
            } => {
                let entry = ArrayEntry {
                    name,
                    dtype,
                    shape: shape.as_ref(),
                    file,
                };
                total = total.saturating_add(array_bytes(spec, &entry, param, out)?);
            }
            ManifestArg::Scalar { name, dtype, value } => check_scalar(name, dtype, value, param)?,
        }
    }
    if total > spec.max_total_bytes {
        return Err(GeneratorError::TooLarge {
            bytes: total,
            limit: spec.max_total_bytes,
        });
    }
    let problem_size = match problem_size {
        Some(v) if v.len() == 3 => Some([v[0], v[1], v[2]]),
        Some(v) => {
            return Err(invalid(format!(
                "problem size {v:?} does not have 3 entries"
            )));
        }
        None => None,
    };
    Ok(TestManifest {
        format: FORMAT,
        kernel: spec.kernel.clone(),
        seed,
        args,
        outputs: spec.outputs.clone(),
        problem_size,
        expected: None,
        reference_time_ms: None,
        constants: Vec::new(),
    })
}

pub(super) fn invalid(detail: String) -> GeneratorError {
    GeneratorError::OutputInvalid { detail }
}

/// An array entry of the harness's argument list.
struct ArrayEntry<'a> {
    name: &'a str,
    dtype: &'a str,
    shape: Option<&'a Vec<u64>>,
    file: &'a str,
}

/// Checks an array entry against its parameter and its .npy file in `out` (header, shape, lanes, length on
/// disk); returns its data bytes.
fn array_bytes(
    spec: &GeneratorSpec,
    entry: &ArrayEntry,
    param: &ArgSpec,
    out: &Path,
) -> Result<u64, GeneratorError> {
    let ArrayEntry {
        name,
        dtype,
        shape,
        file,
    } = *entry;
    let element = param.element()?;
    if name != param.name
        || param.pointer_depth != 1
        || dtype != element.dtype
        || file != format!("args/{name}.npy")
    {
        return Err(invalid(format!(
            "array entry `{name}` ({dtype}, {file}) does not match parameter `{}`",
            param.name
        )));
    }
    npy_data_bytes(
        out,
        &NpyEntry {
            file,
            dtype,
            shape,
            lanes: element.lanes,
        },
        max_file_bytes(spec),
    )
}

/// What the harness reported of one .npy file it wrote (an argument's or a constant's).
pub(super) struct NpyEntry<'a> {
    /// Relative to `out`.
    pub file: &'a str,
    pub dtype: &'a str,
    pub shape: Option<&'a Vec<u64>>,
    /// Lanes of a vector struct: the shape's last dimension.
    pub lanes: u32,
}

/// Checks a .npy file in `out` against what the harness reported (header, shape, lanes, length on disk, at
/// most `max_bytes` on disk); returns its data bytes.
pub(super) fn npy_data_bytes(
    out: &Path,
    entry: &NpyEntry,
    max_bytes: u64,
) -> Result<u64, GeneratorError> {
    let NpyEntry {
        file,
        dtype,
        shape,
        lanes,
    } = *entry;
    let path = out.join(file);
    let (mut opened, len) = output_file::open(out, file, max_bytes)?;
    let header = npy::read_header_of(&mut opened, &path).map_err(|e| invalid(e.to_string()))?;
    let expected = DType::parse_numpy(dtype).ok().map(|(d, _)| d);
    if Some(header.dtype) != expected || shape != Some(&header.shape) {
        return Err(invalid(format!(
            "{file}: header {header:?} does not match {dtype} {shape:?}"
        )));
    }
    let shape = &header.shape;
    if lanes > 1 && shape.last() != Some(&(lanes as u64)) {
        return Err(invalid(format!("{file}: last dimension is not {lanes}")));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(*d))
        .ok_or_else(|| invalid(format!("{file}: shape overflows")))?;
    let data = elements
        .checked_mul(dtype_size(dtype).unwrap_or(0))
        .ok_or_else(|| invalid(format!("{file}: size overflows")))?;
    if elements == 0 || len != header.data_offset + data {
        return Err(invalid(format!(
            "{file}: {len} bytes on disk, header promises {} + {data}",
            header.data_offset
        )));
    }
    Ok(data)
}

/// Checks a scalar entry against its parameter: name, dtype, and an integer value for an integer type.
fn check_scalar(
    name: &str,
    dtype: &str,
    value: &serde_json::Number,
    param: &ArgSpec,
) -> Result<(), GeneratorError> {
    let element = param.element()?;
    if name != param.name || param.pointer_depth != 0 || dtype != element.dtype {
        return Err(invalid(format!(
            "scalar entry `{name}` ({dtype}) does not match parameter `{}`",
            param.name
        )));
    }
    let integral = !dtype.starts_with("float");
    if integral && !(value.is_i64() || value.is_u64()) {
        return Err(invalid(format!(
            "scalar `{name}` of type {dtype} has the non-integer value {value}"
        )));
    }
    Ok(())
}

/// The test id: the first 16 hex digits of blake3 over the manifest's argument list (canonical JSON) followed by
/// every array file's bytes in parameter order, then (only when there are any) the constants' list and files. The seed and kernel name are deliberately left out: two seeds that
/// happen to produce the same data are the same test.
pub(crate) fn content_id(manifest: &TestManifest, out: &Path) -> Result<String, GeneratorError> {
    let mut hasher = blake3::Hasher::new();
    let args_json =
        serde_json::to_vec(&manifest.args).map_err(|e| GeneratorError::OutputInvalid {
            detail: e.to_string(),
        })?;
    hasher.update(&(args_json.len() as u64).to_le_bytes());
    hasher.update(&args_json);
    let mut buf = vec![0u8; 1 << 20];
    for file in manifest.args.iter().filter_map(ManifestArg::file) {
        hash_file(&mut hasher, &mut buf, out, file)?;
    }
    // a test without constants keeps the id it had before constants were part of the format
    if !manifest.constants.is_empty() {
        let json = serde_json::to_vec(&manifest.constants).map_err(|e| invalid(e.to_string()))?;
        hasher.update(&(json.len() as u64).to_le_bytes());
        hasher.update(&json);
        for c in &manifest.constants {
            hash_file(&mut hasher, &mut buf, out, &c.file)?;
        }
    }
    Ok(hasher.finalize().to_hex()[..16].to_string())
}

fn hash_file(
    hasher: &mut blake3::Hasher,
    buf: &mut [u8],
    out: &Path,
    file: &str,
) -> Result<(), GeneratorError> {
    let path = out.join(file);
    let (mut f, _) = output_file::open(out, file, u64::MAX)?;
    loop {
        let n = f.read(buf).map_err(|source| GeneratorError::Io {
            what: "read",
            path: path.clone(),
            source,
        })?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
    }
}

/// Removes half-built tests (`dest/.<id>-XXXXXX`, see [`place`]) that a killed kt left; the caller holds the
/// run's lock, so no other process is building one. Returns how many were removed.
pub fn remove_stale_staging(dest: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dest) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let staging = name.strip_prefix('.').is_some_and(|rest| {
            rest.len() > 17
                && rest.as_bytes()[16] == b'-'
                && rest[..16].bytes().all(|b| b.is_ascii_hexdigit())
        });
        if staging
            && entry.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Places the test under `dest/<id>`; when that directory already holds a test, it is reused (same content).
/// Returns the test directory and whether it was reused.
pub(crate) fn place(
    manifest: &TestManifest,
    id: &str,
    out: &Path,
    dest: &Path,
) -> Result<(PathBuf, bool), GeneratorError> {
    let io = |what, path: &Path| {
        let path = path.to_path_buf();
        move |source| GeneratorError::Io { what, path, source }
    };
    let final_dir = dest.join(id);
    if final_dir.join("manifest.json").is_file() {
        return Ok((final_dir, true));
    }
    std::fs::create_dir_all(dest).map_err(io("create", dest))?;
    // Build in a sibling temporary directory and rename: a crash never leaves a half-written test under its id.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{id}-"))
        .tempdir_in(dest)
        .map_err(io("create a directory in", dest))?;
    let args_dir = staging.path().join("args");
    std::fs::create_dir_all(&args_dir).map_err(io("create", &args_dir))?;
    if !manifest.constants.is_empty() {
        let constants_dir = staging.path().join("constants");
        std::fs::create_dir_all(&constants_dir).map_err(io("create", &constants_dir))?;
    }
    let files = (manifest.args.iter().filter_map(ManifestArg::file))
        .chain(manifest.constants.iter().map(|c| c.file.as_str()));
    for file in files {
        let (from, to) = (out.join(file), staging.path().join(file));
        let (mut source, _) = output_file::open(out, file, u64::MAX)?;
        let mut target = std::fs::File::create(&to).map_err(io("create", &to))?;
        std::io::copy(&mut source, &mut target).map_err(io("copy", &from))?;
    }
    let manifest_path = staging.path().join("manifest.json");
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| GeneratorError::OutputInvalid {
        detail: e.to_string(),
    })?;
    std::fs::write(&manifest_path, json).map_err(io("write", &manifest_path))?;
    let staged = staging.keep();
    match std::fs::rename(&staged, &final_dir) {
        Ok(()) => Ok((final_dir, false)),
        // Another run placed the same content first: keep theirs.
        Err(_) if final_dir.join("manifest.json").is_file() => {
            let _ = std::fs::remove_dir_all(&staged);
            Ok((final_dir, true))
        }
        Err(source) => {
            let _ = std::fs::remove_dir_all(&staged);
            Err(GeneratorError::Io {
                what: "move into place",
                path: final_dir,
                source,
            })
        }
    }
}
