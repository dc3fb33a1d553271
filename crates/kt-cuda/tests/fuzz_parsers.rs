//! Bounded fuzzing of the parsers kt-cuda runs on untrusted text (a user's kernel file, an LLM's rewritten
//! kernel, a sidecar): any input ends in a value or an error, never a panic or a stack overflow. The budget per
//! target is KT_FUZZ_MS milliseconds (default 2000: seconds in CI, as long as you like locally).

use arbtest::arbitrary::Unstructured;

fn budget() -> u64 {
    std::env::var("KT_FUZZ_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Text from pieces of CUDA, with now and then one piece repeated thousands of times (deep nesting, long chains).
fn cuda_text(u: &mut Unstructured<'_>) -> arbtest::arbitrary::Result<String> {
    const PIECES: &[&str] = &[
        "__global__ void k(float *a, int n) ",
        "__device__ float f(float x) ",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "#if 1\n",
        "#else\n",
        "#endif\n",
        "#define M(x) (x)\n",
        "template <typename T> ",
        "namespace a ",
        "a[i] = ",
        "x + ",
        "n * ",
        "if (i < n) ",
        "else ",
        "for (int i = 0; i < n; ++i) ",
        ";",
        "\n",
        "\"",
        "'",
        "/*",
        "*/",
        "//",
        "extern \"C\" ",
        "struct S { float v; };",
        "return ",
        "threadIdx.x",
        "<<<1, 1>>>",
        "#include \"x.h\"\n",
        "\\\n",
        "\u{0}",
        "é",
    ];
    let mut text = String::new();
    while !u.is_empty() {
        let piece = *u.choose(PIECES)?;
        let times = if u.ratio(1, 16)? {
            u.int_in_range(100..=5000)?
        } else {
            1
        };
        for _ in 0..times {
            text.push_str(piece);
        }
    }
    Ok(text)
}

#[test]
fn any_cuda_text_parses_or_fails_cleanly() {
    arbtest::arbtest(|u| {
        let text = cuda_text(u)?;
        let _ = kt_cuda::parse_tolerant(&text);
        let _ = kt_cuda::parse(&text);
        Ok(())
    })
    .budget_ms(budget());
}

#[test]
fn any_sidecar_text_parses_or_fails_cleanly() {
    const PIECES: &[&str] = &[
        "[kernel]\n",
        "[args]\n",
        "n = ",
        "\"n / 4\"",
        "[",
        "]",
        "{",
        "}",
        "1",
        "1.5",
        ",",
        "\n",
        "a = ",
        "x.y = ",
        "tolerance = 1e-3\n",
        "'",
        "\"",
        "#",
        "=",
        "problem_size = [\"n\", 1, 1]\n",
    ];
    arbtest::arbtest(|u| {
        let mut text = String::new();
        while !u.is_empty() {
            let piece = *u.choose(PIECES)?;
            let times = if u.ratio(1, 16)? {
                u.int_in_range(100..=5000)?
            } else {
                1
            };
            text.push_str(&piece.repeat(times));
        }
        let _ = kt_cuda::Sidecar::from_toml(&text, std::path::Path::new("fuzz.toml"));
        Ok(())
    })
    .budget_ms(budget());
}
