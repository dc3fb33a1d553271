//! Just enough of the .npy format for the tests format: a file's dtype, shape and the byte offset where the
//! data starts (the generator's output is checked against it; the tuner's worker reads the array straight
//! from disk, never through its protocol pipe), and the header of a version 1.0 file (the worker streams an
//! output from the GPU to disk in chunks).

use std::io::{Read, Seek};
use std::path::Path;

use super::dtype::DType;
use crate::error::RecordError;

/// Longest header kt reads: the generator that wrote the file is untrusted.
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// A C-ordered .npy file of a numeric dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data_offset: u64,
}

impl NpyHeader {
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// The header of the .npy file at `path`; a Fortran-ordered, structured or big-endian array is refused with
/// what to do.
pub fn read_header(path: &Path) -> Result<NpyHeader, RecordError> {
    let mut f = std::fs::File::open(path).map_err(|e| RecordError::npy(path, e))?;
    read_header_of(&mut f, path)
}

/// The header of the .npy file already open as `f` (kt-sandbox opens an untrusted generator's output without
/// following links and reads it through that descriptor); `path` names it in errors.
pub fn read_header_of(f: &mut std::fs::File, path: &Path) -> Result<NpyHeader, RecordError> {
    let mut prefix = [0u8; 12];
    f.read_exact(&mut prefix[..10])
        .map_err(|e| RecordError::npy(path, e))?;
    if &prefix[..6] != b"\x93NUMPY" {
        return Err(RecordError::npy(path, "not a .npy file (bad magic)"));
    }
    let (header_len, start) = if prefix[6] == 1 {
        (u16::from_le_bytes([prefix[8], prefix[9]]) as u64, 10u64)
    } else {
        f.read_exact(&mut prefix[10..12])
            .map_err(|e| RecordError::npy(path, e))?;
        (
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as u64,
            12u64,
        )
    };
    if header_len > MAX_HEADER_BYTES {
        return Err(RecordError::npy(
            path,
            format!("implausible header length {header_len}"),
        ));
    }
    f.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| RecordError::npy(path, e))?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(&mut *f))
        .map_err(|e| RecordError::npy(path, e))?;
    if npy.order() != npyz::Order::C {
        return Err(RecordError::npy(
            path,
            "Fortran-ordered array: save it C-contiguous (np.ascontiguousarray)",
        ));
    }
    let descr = match npy.dtype() {
        npyz::DType::Plain(t) => t.to_string(),
        other => {
            return Err(RecordError::npy(
                path,
                format!(
                    "structured dtype {other:?} is not supported: store structs as a plain array with a lane dimension"
                ),
            ));
        }
    };
    let dtype = DType::from_npy_descr(&descr).ok_or_else(|| {
        RecordError::npy(
            path,
            format!("dtype {descr} is not supported (little-endian numeric only)"),
        )
    })?;
    Ok(NpyHeader {
        dtype,
        shape: npy.shape().to_vec(),
        data_offset: start + header_len,
    })
}

/// The header of a C-ordered version 1.0 .npy file (magic, length, dict padded so data starts on a
/// 64-byte boundary); the raw little-endian data follows it.
pub fn header(dtype: DType, shape: &[u64]) -> Vec<u8> {
    header_with_descr(dtype.npy_descr(), shape)
}

fn header_with_descr(descr: &str, shape: &[u64]) -> Vec<u8> {
    let shape_text = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes
}

/// Writes a .npy file (tests of the crates that read the tests format).
#[doc(hidden)]
pub fn write_npy(path: &Path, descr: &str, shape: &[u64], data: &[u8]) -> std::io::Result<()> {
    let mut bytes = header_with_descr(descr, shape);
    bytes.extend(data);
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_gives_dtype_shape_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        write_npy(&p, "<f4", &[2, 3], &data).unwrap();
        let info = read_header(&p).unwrap();
        assert_eq!(info.dtype, DType::Float32);
        assert_eq!(info.shape, vec![2, 3]);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[info.data_offset as usize..], &data[..]);
    }

    #[test]
    fn written_header_reads_back_for_every_dtype_and_scalar_shape() {
        let dir = tempfile::tempdir().unwrap();
        for dtype in [DType::Float32, DType::Int8, DType::Uint64, DType::Float16] {
            for shape in [vec![7u64], vec![2, 3, 4], vec![]] {
                let p = dir.path().join("x.npy");
                let n: u64 = shape.iter().product();
                let mut bytes = header(dtype, &shape);
                assert_eq!(bytes.len() % 64, 0);
                bytes.extend(vec![0u8; n as usize * dtype.size()]);
                std::fs::write(&p, bytes).unwrap();
                let info = read_header(&p).unwrap();
                assert_eq!((info.dtype, info.shape), (dtype, shape));
            }
        }
    }

    #[test]
    fn a_numpy_v1_header_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (100, 3), }";
        let mut header = dict.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0u8; 1200]);
        std::fs::write(&path, &bytes).unwrap();
        let h = read_header(&path).unwrap();
        let offset = 10 + header.len() as u64;
        assert_eq!(offset % 64, 0);
        assert_eq!(
            h,
            NpyHeader {
                dtype: DType::Float32,
                shape: vec![100, 3],
                data_offset: offset
            }
        );
    }

    /// Bounded fuzzing (KT_FUZZ_MS, default 2000 ms): any bytes a generator leaves give a header or an error,
    /// read through an open descriptor as kt-sandbox reads them.
    #[test]
    fn any_bytes_give_a_header_or_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        let budget = std::env::var("KT_FUZZ_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        arbtest::arbtest(|u| {
            let mut bytes = Vec::new();
            if u.ratio(3, 4)? {
                bytes.extend_from_slice(b"\x93NUMPY");
                bytes.push(*u.choose(&[1u8, 2, 3, 9])?);
                bytes.push(0);
                let len: u16 = u.int_in_range(0..=200)?;
                bytes.extend_from_slice(&len.to_le_bytes());
                const PIECES: &[&str] = &[
                    "{",
                    "}",
                    "(",
                    ")",
                    "'descr': ",
                    "'<f4'",
                    "'fortran_order': ",
                    "False",
                    "'shape': ",
                    "1",
                    ", ",
                    "99999999999999999999",
                    "-1",
                    " ",
                    "\n",
                    "'",
                    "\\",
                ];
                while !u.is_empty() && bytes.len() < 4096 {
                    bytes.extend_from_slice(u.choose(PIECES)?.as_bytes());
                }
            } else {
                bytes.extend_from_slice(u.bytes(u.len().min(4096))?);
            }
            std::fs::write(&path, &bytes).unwrap();
            let _ = read_header_of(&mut std::fs::File::open(&path).unwrap(), &path);
            Ok(())
        })
        .budget_ms(budget);
    }
}
