//! What a tuner must know to pass a parameter: its element type with typedefs followed (`typedef
//! __nv_bfloat16 floatX;` → `bfloat16`), and for a struct or vector type passed by value (`float3`, the
//! thesis's `Matrix`), its layout under the CUDA ABI (64-bit: pointers and `long` are 8 bytes; a struct's
//! alignment is its largest field's, raised by `__align__(n)` / `alignas(n)`; its size is padded to it).

use std::collections::HashMap;

use tree_sitter::Node;

use crate::error::CudaError;
use crate::kernel::{Kernel, KernelParam, StructField, StructLayout};
use crate::preprocess::Prepared;
use crate::scope::FileScope;

/// Typedef chains and nested structs deeper than this are not followed.
const MAX_DEPTH: usize = 16;

impl Kernel {
    /// Every by-value parameter that is not a scalar must have a layout kt computed; otherwise an error that
    /// says which parameter, what is missing and how to supply it.
    pub fn check_by_value_params(&self) -> Result<(), CudaError> {
        match self.params.iter().find(|p| p.layout_problem.is_some()) {
            None => Ok(()),
            Some(p) => Err(CudaError::ByValueParam {
                kernel: self.name.clone(),
                param: p.name.clone(),
                type_text: p.type_text.clone(),
                reason: p.layout_problem.clone().unwrap_or_default(),
            }),
        }
    }
}

/// (C spelling, size, numpy-style name) of the scalar types kt knows.
const SCALARS: &[(&str, u64, &str)] = &[
    ("char", 1, "int8"),
    ("signed char", 1, "int8"),
    ("unsigned char", 1, "uint8"),
    ("bool", 1, "uint8"),
    ("int8_t", 1, "int8"),
    ("uint8_t", 1, "uint8"),
    ("short", 2, "int16"),
    ("short int", 2, "int16"),
    ("unsigned short", 2, "uint16"),
    ("unsigned short int", 2, "uint16"),
    ("int16_t", 2, "int16"),
    ("uint16_t", 2, "uint16"),
    ("int", 4, "int32"),
    ("signed", 4, "int32"),
    ("signed int", 4, "int32"),
    ("unsigned", 4, "uint32"),
    ("unsigned int", 4, "uint32"),
    ("uint", 4, "uint32"),
    ("int32_t", 4, "int32"),
    ("uint32_t", 4, "uint32"),
    ("long", 8, "int64"),
    ("long int", 8, "int64"),
    ("unsigned long", 8, "uint64"),
    ("unsigned long int", 8, "uint64"),
    ("long long", 8, "int64"),
    ("long long int", 8, "int64"),
    ("unsigned long long", 8, "uint64"),
    ("unsigned long long int", 8, "uint64"),
    ("int64_t", 8, "int64"),
    ("uint64_t", 8, "uint64"),
    ("size_t", 8, "uint64"),
    ("ptrdiff_t", 8, "int64"),
    ("float", 4, "float32"),
    ("double", 8, "float64"),
    ("half", 2, "float16"),
    ("__half", 2, "float16"),
    ("__nv_bfloat16", 2, "bfloat16"),
    ("nv_bfloat16", 2, "bfloat16"),
];

/// CUDA's vector types' element spellings: `float3` is three `float`s.
const VECTOR_BASES: &[(&str, &str)] = &[
    ("char", "char"),
    ("uchar", "unsigned char"),
    ("short", "short"),
    ("ushort", "unsigned short"),
    ("int", "int"),
    ("uint", "unsigned int"),
    ("long", "long"),
    ("ulong", "unsigned long"),
    ("longlong", "long long"),
    ("ulonglong", "unsigned long long"),
    ("float", "float"),
    ("double", "double"),
];

fn scalar(name: &str) -> Option<(u64, &'static str)> {
    SCALARS
        .iter()
        .find(|(c, _, _)| *c == name)
        .map(|&(_, size, dtype)| (size, dtype))
}

/// A CUDA vector type (`float3`, `int2`, `half2`, `__nv_bfloat162`): its lane type's C name and lane count.
fn vector(name: &str) -> Option<(&'static str, u64)> {
    match name {
        "half2" | "__half2" => return Some(("half", 2)),
        "__nv_bfloat162" | "nv_bfloat162" => return Some(("__nv_bfloat16", 2)),
        _ => {}
    }
    let lanes = name.chars().last()?.to_digit(10)?;
    if !(1..=4).contains(&lanes) {
        return None;
    }
    let base = &name[..name.len() - 1];
    VECTOR_BASES
        .iter()
        .find(|(short, _)| *short == base)
        .map(|&(_, c)| (c, u64::from(lanes)))
}

/// Size, alignment and dtype of a scalar or vector type; `None` for anything else.
fn builtin_layout(name: &str) -> Option<(u64, u64, String)> {
    if let Some((size, dtype)) = scalar(name) {
        return Some((size, size, dtype.to_string()));
    }
    let (lane, lanes) = vector(name)?;
    let (lane_size, lane_dtype) = scalar(lane)?;
    // lanes 2 and 4 are aligned to their whole size (at most 16), 1 and 3 to one lane
    let align = match lanes {
        2 | 4 => (lane_size * lanes).min(16),
        _ => lane_size,
    };
    Some((lane_size * lanes, align, format!("{lane_dtype}x{lanes}")))
}

/// The numpy-style dtype of a scalar or vector type (`float32`, `float32x4`); `None` for anything else.
pub(crate) fn dtype_of(resolved: &str) -> Option<String> {
    builtin_layout(resolved).map(|(_, _, dtype)| dtype)
}

/// Removes `const`/`volatile`/`struct`/`class` words and collapses whitespace.
fn plain_type(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "struct" | "class" | "typename"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A type name with typedefs and `using` aliases followed to the end of the chain.
pub(crate) fn resolve_type(typedefs: &HashMap<String, String>, name: &str) -> String {
    let mut current = plain_type(name);
    for _ in 0..MAX_DEPTH {
        match typedefs.get(&current) {
            Some(next) if plain_type(next) != current => current = plain_type(next),
            _ => break,
        }
    }
    current
}

/// Fills `base_type` (typedefs followed), `dtype` and, for by-value structs and vectors, `layout` or
/// `layout_problem` of every parameter of `kernel`.
pub(crate) fn resolve_params(prepared: &Prepared, scope: &FileScope, kernel: &mut Kernel) {
    let template_names: Vec<String> = kernel
        .template_params
        .iter()
        .map(|t| t.name.clone())
        .collect();
    for p in &mut kernel.params {
        resolve_param(prepared, scope, &template_names, p);
    }
}

fn resolve_param(
    prepared: &Prepared,
    scope: &FileScope,
    template_names: &[String],
    p: &mut KernelParam,
) {
    if p.base_type.is_empty() || template_names.contains(&p.base_type) {
        return;
    }
    let resolved = resolve_type(&scope.typedefs, &p.base_type);
    let by_value = !p.is_pointer();
    match builtin_layout(&resolved) {
        Some((size, align, dtype)) => {
            if by_value && vector(&resolved).is_some() {
                p.layout = Some(vector_layout(&resolved, size, align));
            }
            p.dtype = Some(dtype);
        }
        None if by_value => match struct_layout(prepared, scope, &resolved, 0) {
            Ok(layout) => p.layout = Some(layout),
            Err(reason) => p.layout_problem = Some(reason),
        },
        None => {}
    }
    // only a followed typedef changes what was written (`struct Particle` stays as it is)
    if resolved != plain_type(&p.base_type) {
        p.base_type = resolved;
    }
}

fn vector_layout(name: &str, size: u64, align: u64) -> StructLayout {
    let (lane, lanes) = vector(name).unwrap_or(("float", 1));
    let (lane_size, dtype) = scalar(lane).unwrap_or((4, "float32"));
    let fields = ["x", "y", "z", "w"]
        .iter()
        .take(usize::try_from(lanes).unwrap_or(4))
        .enumerate()
        .map(|(i, f)| StructField {
            name: (*f).to_string(),
            type_text: lane.to_string(),
            offset: lane_size * i as u64,
            size: lane_size,
            align: lane_size,
            count: 1,
            dtype: Some(dtype.to_string()),
            pointer: false,
            nested: None,
        })
        .collect();
    StructLayout {
        type_name: name.to_string(),
        size,
        align,
        fields,
    }
}

fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align.max(1)) * align.max(1)
}

/// The layout of a struct defined in the file (or a followed header).
fn struct_layout(
    prepared: &Prepared,
    scope: &FileScope,
    name: &str,
    depth: usize,
) -> Result<StructLayout, String> {
    let text = &prepared.text;
    let Some(node) = scope.structs.get(name) else {
        return Err(format!(
            "struct `{name}` is not defined in the file or in a header kt followed; define it there, or pass the \
             directory of its header with --include DIR (or describe the argument in the kernel's sidecar)"
        ));
    };
    if depth > MAX_DEPTH {
        return Err(format!("struct `{name}` nests too deeply"));
    }
    let body = node
        .child_by_field_name("body")
        .ok_or_else(|| format!("struct `{name}` has no body"))?;
    let mut fields: Vec<StructField> = Vec::new();
    let mut offset = 0;
    let mut align = explicit_alignment(prepared, *node).unwrap_or(1);
    let mut cursor = body.walk();
    for member in body.named_children(&mut cursor) {
        match member.kind() {
            "field_declaration" => {}
            "comment" | "access_specifier" => continue,
            // methods and constructors do not change the layout of a plain struct
            "function_definition" | "declaration" | "template_declaration" => continue,
            other => {
                return Err(format!(
                    "struct `{name}` has a member kt cannot lay out ({other})"
                ));
            }
        }
        let is_static = (0..member.child_count())
            .filter_map(|i| member.child(i))
            .any(|c| c.kind() == "storage_class_specifier" && &text[c.byte_range()] == "static");
        if is_static {
            continue;
        }
        let type_text = member
            .child_by_field_name("type")
            .map(|t| plain_type(&text[t.byte_range()]))
            .ok_or_else(|| format!("a field of struct `{name}` has no type"))?;
        let mut dc = member.walk();
        for declarator in member.children_by_field_name("declarator", &mut dc) {
            let field = field_layout(prepared, scope, name, &type_text, declarator, depth)?;
            offset = round_up(offset, field.align);
            align = align.max(field.align);
            fields.push(StructField { offset, ..field });
            offset += fields.last().map_or(0, |f| f.size);
        }
    }
    Ok(StructLayout {
        type_name: name.to_string(),
        size: round_up(offset, align),
        align,
        fields,
    })
}

fn field_layout(
    prepared: &Prepared,
    scope: &FileScope,
    struct_name: &str,
    type_text: &str,
    declarator: Node,
    depth: usize,
) -> Result<StructField, String> {
    let text = &prepared.text;
    let mut pointer = false;
    let mut count = 1u64;
    let mut node = Some(declarator);
    let mut field_name = String::new();
    while let Some(current) = node {
        match current.kind() {
            "pointer_declarator" => pointer = true,
            "array_declarator" => {
                let size = current
                    .child_by_field_name("size")
                    .map(|s| text[s.byte_range()].to_string())
                    .unwrap_or_default();
                count *= array_length(prepared, &size).ok_or_else(|| {
                    format!("the array size `{size}` of a field of struct `{struct_name}` is not a number kt can read")
                })?;
            }
            "field_identifier" | "identifier" => {
                field_name = text[current.byte_range()].to_string()
            }
            "bitfield_clause" => {
                return Err(format!(
                    "struct `{struct_name}` has bit-fields, which kt cannot lay out"
                ));
            }
            _ => {}
        }
        node = current.child_by_field_name("declarator");
    }
    if declarator.parent().is_some_and(|p| {
        let mut c = p.walk();
        p.children(&mut c).any(|x| x.kind() == "bitfield_clause")
    }) {
        return Err(format!(
            "struct `{struct_name}` has bit-fields, which kt cannot lay out"
        ));
    }
    if pointer {
        return Ok(StructField {
            name: field_name,
            type_text: format!("{type_text} *"),
            offset: 0,
            size: 8 * count,
            align: 8,
            count,
            dtype: None,
            pointer: true,
            nested: None,
        });
    }
    let resolved = resolve_type(&scope.typedefs, type_text);
    let (size, align, dtype, nested) = match builtin_layout(&resolved) {
        Some((size, align, dtype)) => (size, align, Some(dtype), None),
        None => {
            let inner = struct_layout(prepared, scope, &resolved, depth + 1)
                .map_err(|e| format!("field `{field_name}` of struct `{struct_name}`: {e}"))?;
            (inner.size, inner.align, None, Some(Box::new(inner)))
        }
    };
    Ok(StructField {
        name: field_name,
        type_text: type_text.to_string(),
        offset: 0,
        size: size * count,
        align,
        count,
        dtype,
        pointer: false,
        nested,
    })
}

/// A literal array length, or an object-like macro whose body is one.
fn array_length(prepared: &Prepared, size: &str) -> Option<u64> {
    let literal = |s: &str| {
        s.trim()
            .trim_end_matches(['u', 'U', 'l', 'L'])
            .parse::<u64>()
            .ok()
    };
    literal(size).or_else(|| {
        prepared
            .defines
            .iter()
            .find(|d| d.name == size.trim() && !d.function_like)
            .and_then(|d| literal(d.body.trim_matches(|c| c == '(' || c == ')')))
    })
}

/// `alignas(n)` (kt's spelling of `__align__(n)`) on a struct definition.
fn explicit_alignment(prepared: &Prepared, node: Node) -> Option<u64> {
    let text = &prepared.text;
    let body_start = node.child_by_field_name("body")?.start_byte();
    let head = &text[node.start_byte()..body_start];
    let at = head.find("alignas")?;
    let inner = head[at + "alignas".len()..]
        .trim_start()
        .strip_prefix('(')?
        .split(')')
        .next()?;
    array_length(prepared, inner)
}

#[cfg(test)]
mod tests {
    use crate::parse;

    #[test]
    fn a_struct_by_value_gets_its_abi_layout() {
        let src = "typedef struct { int width; int height; int stride; float *elements; } Matrix;\n\
                   __global__ void matMul(Matrix A, Matrix B, Matrix C) {}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        let layout = k.params[0].layout.clone().expect("Matrix has a layout");
        let fields: Vec<(&str, u64, u64, bool)> = layout
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.offset, f.size, f.pointer))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("width", 0, 4, false),
                ("height", 4, 4, false),
                ("stride", 8, 4, false),
                ("elements", 16, 8, true)
            ]
        );
        assert_eq!((layout.size, layout.align), (24, 8));
        assert!(k.check_by_value_params().is_ok());
    }

    #[test]
    fn align_raises_a_structs_alignment_and_pads_its_size() {
        let src = "struct __align__(8) Pair { float a; int b; };\nstruct alignas(16) Wide { float a; };\n\
                   __global__ void k(Pair p, Wide w, float3 v, int2 q, half2 h) {}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        let sa = |i: usize| {
            let l = k.params[i].layout.as_ref().unwrap();
            (l.size, l.align)
        };
        assert_eq!(sa(0), (8, 8));
        assert_eq!(sa(1), (16, 16));
        assert_eq!(sa(2), (12, 4));
        assert_eq!(sa(3), (8, 8));
        assert_eq!(sa(4), (4, 4));
        assert_eq!(k.params[2].dtype.as_deref(), Some("float32x3"));
        assert_eq!(k.params[4].dtype.as_deref(), Some("float16x2"));
    }

    #[test]
    fn an_undefined_struct_is_a_clear_error_naming_what_to_do() {
        let k = parse("__global__ void k(Params p, float *x) {}\n")
            .unwrap()
            .kernels()[0]
            .clone();
        let err = k.check_by_value_params().unwrap_err().to_string();
        assert!(err.contains("parameter `p` of kernel `k`"), "{err}");
        assert!(err.contains("struct `Params` is not defined"), "{err}");
        assert!(err.contains("--include DIR"), "{err}");
    }

    #[test]
    fn half_and_bfloat16_typedefs_resolve_to_their_element_type() {
        let src = "typedef __nv_bfloat16 floatX;\nusing hx = __half;\ntypedef floatX alias2;\n\
                   __global__ void k(floatX *a, const hx *b, alias2 *c, nv_bfloat16 *d, half *e, __nv_bfloat162 *f, float *g) {}\n";
        let k = parse(src).unwrap().kernels()[0].clone();
        let dtypes: Vec<Option<&str>> = k.params.iter().map(|p| p.dtype.as_deref()).collect();
        assert_eq!(
            dtypes,
            vec![
                Some("bfloat16"),
                Some("float16"),
                Some("bfloat16"),
                Some("bfloat16"),
                Some("float16"),
                Some("bfloat16x2"),
                Some("float32")
            ]
        );
        assert_eq!(k.params[0].base_type, "__nv_bfloat16");
        assert_eq!(k.params[0].type_text, "floatX *");
    }
}
