//! What `kt tune` refuses before anything is compiled, the same for a dry run and a real one: a parameter
//! given twice or named nowhere in the kernel (a misspelling), a restriction written with `=` where `==` is
//! meant, and a space that its restrictions leave empty.

use anyhow::bail;
use kt_tuner::TunableParam;

/// Names a thread-block size: used by the launch, not the code.
const LAUNCH_NAMES: [&str; 3] = ["block_size_x", "block_size_y", "block_size_z"];

/// Each `--param` once.
pub(crate) fn no_duplicate_params(params: &[TunableParam]) -> anyhow::Result<()> {
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.name == p.name) {
            bail!(
                "--param {} is given twice: give each parameter once, with all its values (e.g. --param {}=16,32,64)",
                p.name,
                p.name
            );
        }
    }
    Ok(())
}

/// Each `--param` names something the kernel uses: a launch size, a template parameter, or a word of its code.
pub(crate) fn params_are_used(
    params: &[TunableParam],
    source: &str,
    templates: &[String],
    kernel: &str,
) -> anyhow::Result<()> {
    for p in params {
        let name = p.name.as_str();
        if LAUNCH_NAMES.contains(&name)
            || templates.iter().any(|t| t == name)
            || has_word(source, name)
        {
            continue;
        }
        bail!(
            "--param {name}: kernel `{kernel}` never uses `{name}` (a misspelling?); tunable names are the launch's \
             block_size_x/y/z, its template parameters ({}) and names its code uses",
            if templates.is_empty() {
                "none".to_string()
            } else {
                templates.join(", ")
            }
        );
    }
    Ok(())
}

/// `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// A restriction is a comparison: a lone `=` (`block_size_x = 16`) is refused with the `==` it means.
pub(crate) fn restrictions_compare(restrictions: &[String]) -> anyhow::Result<()> {
    for r in restrictions {
        let bytes = r.as_bytes();
        let lone = (0..bytes.len()).find(|&i| {
            bytes[i] == b'='
                && bytes.get(i + 1) != Some(&b'=')
                && !matches!(
                    i.checked_sub(1).map(|j| bytes[j]),
                    Some(b'=' | b'<' | b'>' | b'!')
                )
        });
        if let Some(i) = lone {
            bail!(
                "--restrict \"{r}\": a restriction is a condition, and `=` assigns; compare with `==` (e.g. --restrict \"{}=={}\")",
                &r[..i],
                &r[i + 1..]
            );
        }
    }
    Ok(())
}

/// A space its restrictions leave empty has nothing to tune.
pub(crate) fn space_not_empty(after: usize, combinations: usize) -> anyhow::Result<()> {
    if after == 0 {
        bail!(
            "no configuration is left: the restrictions (and at most 1024 threads per block) rule out all \
             {combinations} combinations of the parameters; loosen a --restrict or give other --param values"
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(list: &[&str]) -> Vec<TunableParam> {
        list.iter()
            .map(|p| TunableParam::parse(p).unwrap())
            .collect()
    }

    #[test]
    fn a_parameter_twice_or_unused_is_refused_and_a_used_one_passes() {
        let src = "__global__ void k(float *a) { for (int i = 0; i < TILE; i++) a[i] = 0; }";
        assert!(no_duplicate_params(&params(&["TILE=1,2", "TILE=4"])).is_err());
        no_duplicate_params(&params(&["TILE=1,2", "block_size_x=32"])).unwrap();
        params_are_used(&params(&["TILE=1,2", "block_size_x=32"]), src, &[], "k").unwrap();
        let err = params_are_used(&params(&["TILES=1"]), src, &[], "k")
            .unwrap_err()
            .to_string();
        assert!(err.contains("never uses `TILES`"), "{err}");
        params_are_used(&params(&["T=1"]), src, &["T".into()], "k").unwrap();
        assert!(!has_word("TILE_SIZE", "TILE"));
    }

    #[test]
    fn a_lone_equals_sign_is_refused_with_the_comparison_it_means() {
        let err = restrictions_compare(&["block_size_x = 16".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("block_size_x == 16"), "{err}");
        restrictions_compare(&[
            "block_size_x == 16".into(),
            "a <= b".into(),
            "a >= b and c != d".into(),
        ])
        .unwrap();
        assert!(
            space_not_empty(0, 12)
                .unwrap_err()
                .to_string()
                .contains("all 12 combinations")
        );
        space_not_empty(3, 12).unwrap();
    }
}
