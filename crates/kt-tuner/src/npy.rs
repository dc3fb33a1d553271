//! Just enough of the .npy format to hand a file to the worker: dtype, shape and the byte offset where the
//! data starts, so the worker reads the array straight from disk (never through the protocol pipe); and the
//! header of a version 1.0 file, so the worker can stream an output from the GPU to disk in chunks.

use std::io::Read;
use std::path::Path;

use crate::dtype::DType;
use crate::error::TunerError;

#[derive(Debug, Clone, PartialEq)]
pub struct NpyInfo {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data_offset: u64,
}

impl NpyInfo {
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

pub fn read_header(path: &Path) -> Result<NpyInfo, TunerError> {
    let mut f = std::fs::File::open(path).map_err(|e| TunerError::io(path, e))?;
    let mut prefix = [0u8; 12];
    f.read_exact(&mut prefix[..10])
        .map_err(|e| TunerError::io(path, e))?;
    if &prefix[..6] != b"\x93NUMPY" {
        return Err(TunerError::io(path, "not a .npy file (bad magic)"));
    }
    let (header_len, start) = if prefix[6] == 1 {
        (u16::from_le_bytes([prefix[8], prefix[9]]) as u64, 10u64)
    } else {
        f.read_exact(&mut prefix[10..12])
            .map_err(|e| TunerError::io(path, e))?;
        (
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as u64,
            12u64,
        )
    };
    let f = std::fs::File::open(path).map_err(|e| TunerError::io(path, e))?;
    let npy =
        npyz::NpyFile::new(std::io::BufReader::new(f)).map_err(|e| TunerError::io(path, e))?;
    if npy.order() != npyz::Order::C {
        return Err(TunerError::io(
            path,
            "Fortran-ordered array: save it C-contiguous (np.ascontiguousarray)",
        ));
    }
    let descr = match npy.dtype() {
        npyz::DType::Plain(t) => t.to_string(),
        other => {
            return Err(TunerError::io(
                path,
                format!(
                    "structured dtype {other:?} is not supported: store structs as a plain array with a lane dimension"
                ),
            ));
        }
    };
    let dtype = DType::from_npy_descr(&descr).ok_or_else(|| {
        TunerError::io(
            path,
            format!("dtype {descr} is not supported (little-endian numeric only)"),
        )
    })?;
    Ok(NpyInfo {
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

#[cfg(test)]
pub(crate) fn write_npy(path: &Path, descr: &str, shape: &[u64], data: &[u8]) {
    let mut bytes = header_with_descr(descr, shape);
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
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
        write_npy(&p, "<f4", &[2, 3], &data);
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
}
