//! Just enough of the .npy format to check what the generator wrote: the header (dtype, order, shape) and that
//! the file holds exactly the data the header promises.

use std::io::Read;
use std::path::Path;

/// A parsed .npy header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    /// Bytes before the data.
    pub data_offset: u64,
}

/// The little-endian descr numpy writes for a tests-format dtype.
pub(crate) fn descr_of(dtype: &str) -> Option<&'static str> {
    Some(match dtype {
        "int8" => "|i1",
        "uint8" => "|u1",
        "int16" => "<i2",
        "uint16" => "<u2",
        "float16" => "<f2",
        "int32" => "<i4",
        "uint32" => "<u4",
        "float32" => "<f4",
        "int64" => "<i8",
        "uint64" => "<u8",
        "float64" => "<f8",
        _ => return None,
    })
}

/// Reads the header of the .npy file open as `file`; `path` names it in errors.
pub(crate) fn read_header(file: &mut std::fs::File, path: &Path) -> Result<NpyHeader, String> {
    let mut prefix = [0u8; 10];
    file.read_exact(&mut prefix)
        .map_err(|e| format!("{} is too short for a .npy file: {e}", path.display()))?;
    if &prefix[..6] != b"\x93NUMPY" {
        return Err(format!("{} is not a .npy file", path.display()));
    }
    let (header_len, fixed) = match prefix[6] {
        1 => (u16::from_le_bytes([prefix[8], prefix[9]]) as u64, 10u64),
        2 | 3 => {
            let mut rest = [0u8; 2];
            file.read_exact(&mut rest)
                .map_err(|e| format!("{}: truncated header: {e}", path.display()))?;
            (
                u32::from_le_bytes([prefix[8], prefix[9], rest[0], rest[1]]) as u64,
                12u64,
            )
        }
        v => return Err(format!("{}: unsupported .npy version {v}", path.display())),
    };
    if header_len > 1 << 20 {
        return Err(format!(
            "{}: implausible header length {header_len}",
            path.display()
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header)
        .map_err(|e| format!("{}: truncated header: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&header);
    let field = |key: &str| -> Result<String, String> {
        let start = text
            .find(&format!("'{key}':"))
            .ok_or_else(|| format!("{}: header has no '{key}'", path.display()))?;
        Ok(text[start + key.len() + 3..].trim_start().to_string())
    };
    let descr = field("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or("malformed descr")?
        .to_string();
    let fortran_order = field("fortran_order")?.starts_with("True");
    let shape_text = field("shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("malformed shape")?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| format!("{}: bad shape entry `{s}`", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NpyHeader {
        descr,
        fortran_order,
        shape,
        data_offset: fixed + header_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::fs::write(&path, &bytes).unwrap();
        let h = read_header(&mut std::fs::File::open(&path).unwrap(), &path).unwrap();
        let offset = 10 + header.len() as u64;
        assert_eq!(offset % 64, 0);
        assert_eq!(
            h,
            NpyHeader {
                descr: "<f4".into(),
                fortran_order: false,
                shape: vec![100, 3],
                data_offset: offset
            }
        );
    }

    /// Bounded fuzzing (KT_FUZZ_MS, default 2000 ms): any bytes a generator leaves give a header or an error.
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
                    "{", "}", "(", ")", "'descr': ", "'<f4'", "'fortran_order': ", "False", "'shape': ", "1", ", ",
                    "99999999999999999999", "-1", " ", "\n", "'", "\\",
                ];
                while !u.is_empty() && bytes.len() < 4096 {
                    bytes.extend_from_slice(u.choose(PIECES)?.as_bytes());
                }
            } else {
                bytes.extend_from_slice(u.bytes(u.len().min(4096))?);
            }
            std::fs::write(&path, &bytes).unwrap();
            let _ = read_header(&mut std::fs::File::open(&path).unwrap(), &path);
            Ok(())
        })
        .budget_ms(budget);
    }
}
