//! Template parameters from the program itself: the values a file's own host code instantiates a kernel
//! with (`reduce4<T, 256, true><<<…>>>`, `MatrixMulCUDA<32><<<…>>>`) become the values kt uses for a
//! template parameter that has no default and that the user neither tunes (`--param`) nor fixes
//! (`--template`): several numbers are the space to tune, one value is the default. Arguments that are
//! not literals (`T` of an enclosing host template) say nothing and are skipped.

use std::collections::BTreeMap;

use crate::model::space::TunableParam;

/// What the instantiations give: parameters to tune, fixed values, and a line each for the user.
#[derive(Debug, Default, PartialEq)]
pub struct FromInstances {
    pub tuned: Vec<TunableParam>,
    pub fixed: BTreeMap<String, String>,
    pub lines: Vec<String>,
}

/// Built-in types a launch may instantiate a type parameter with.
const TYPES: &[&str] = &[
    "float",
    "double",
    "int",
    "unsigned",
    "unsigned int",
    "long",
    "long long",
    "unsigned long",
    "unsigned long long",
    "short",
    "unsigned short",
    "char",
    "signed char",
    "unsigned char",
    "bool",
    "half",
    "__half",
    "__nv_bfloat16",
    "nv_bfloat16",
    "int64_t",
    "uint64_t",
    "int32_t",
    "uint32_t",
    "size_t",
];

/// A literal a launch can pass: a number (with its suffix), `true`/`false`, a built-in type.
fn literal(v: &str) -> bool {
    let number = v
        .trim_end_matches(['u', 'U', 'l', 'L'])
        .parse::<i64>()
        .is_ok();
    number || v == "true" || v == "false" || TYPES.contains(&v)
}

/// A literal's value: a number with its suffix, `true` as 1, `false` as 0.
pub(crate) fn as_number(v: &str) -> Option<i64> {
    match v {
        "true" => Some(1),
        "false" => Some(0),
        _ => v.trim_end_matches(['u', 'U', 'l', 'L']).parse().ok(),
    }
}

/// `params`: the kernel's template parameters (name, default); `instances`: the argument lists of its
/// launches; `tuned`/`given`: what the user asked for, which always wins.
pub fn from_instances(
    kernel: &str,
    params: &[(String, Option<String>)],
    instances: &[Vec<String>],
    tuned: &[TunableParam],
    given: &BTreeMap<String, String>,
) -> FromInstances {
    let mut out = FromInstances::default();
    for (i, (name, default)) in params.iter().enumerate() {
        if default.is_some() || given.contains_key(name) || tuned.iter().any(|p| &p.name == name) {
            continue;
        }
        let mut values: Vec<&str> = Vec::new();
        for args in instances {
            if let Some(v) = args.get(i).map(String::as_str)
                && literal(v)
                && !values.contains(&v)
            {
                values.push(v);
            }
        }
        let numbers: Option<Vec<i64>> = values.iter().map(|v| as_number(v)).collect();
        match (values.as_slice(), numbers) {
            ([], _) => {}
            ([one], _) => {
                out.fixed.insert(name.clone(), one.to_string());
                out.lines.push(format!(
                    "template parameter `{name}` of `{kernel}` = {one}: the value the file's own launch instantiates (--template {name}=… or --param {name}=… to choose)"
                ));
            }
            (several, Some(mut numbers))
                if values.iter().all(|v| *v != "true" && *v != "false") =>
            {
                numbers.sort_unstable();
                out.tuned
                    .push(TunableParam::new(name.clone(), numbers.clone()));
                out.lines.push(format!(
                    "template parameter `{name}` of `{kernel}` tuned over {}: the values the file's own launches instantiate (--param {name}=… or --template {name}=… to choose)",
                    several.join(", ")
                ));
            }
            (several, _) => {
                out.fixed.insert(name.clone(), several[0].to_string());
                out.lines.push(format!(
                    "template parameter `{name}` of `{kernel}` = {}: the first of the values the file's own launches instantiate ({}; --template {name}=… to choose)",
                    several[0],
                    several.join(", ")
                ));
            }
        }
    }
    out
}

/// One value per template parameter for a single run (`kt verify`): as [`from_instances`], with a parameter
/// the launches instantiate several ways taking its `preferred` value when that is one of them (the block
/// size it is tied to), else the first value launched (in source order).
pub fn single_from_instances(
    kernel: &str,
    params: &[(String, Option<String>)],
    instances: &[Vec<String>],
    tuned: &[TunableParam],
    given: &BTreeMap<String, String>,
    preferred: &BTreeMap<String, i64>,
) -> FromInstances {
    let several = from_instances(kernel, params, instances, tuned, given);
    let mut out = FromInstances {
        tuned: Vec::new(),
        fixed: several.fixed,
        lines: several.lines,
    };
    for t in several.tuned {
        let Some(i) = params.iter().position(|(n, _)| *n == t.name) else {
            continue;
        };
        let launched: Vec<&String> = instances
            .iter()
            .filter_map(|args| args.get(i))
            .filter(|v| literal(v))
            .collect();
        let wanted = preferred.get(&t.name).copied();
        let (value, why) = match launched
            .iter()
            .find(|v| as_number(v) == wanted && wanted.is_some())
        {
            Some(v) => (*v, "the value of the default launch's block"),
            None => match launched.first() {
                Some(v) => (*v, "the first value the file's own launches instantiate"),
                None => continue,
            },
        };
        if let Some(line) = out
            .lines
            .iter_mut()
            .find(|l| l.contains(&format!("`{}`", t.name)))
        {
            *line = format!(
                "template parameter `{}` of `{kernel}` = {value}: {why} (--template {}=… to choose)",
                t.name, t.name
            );
        }
        out.fixed.insert(t.name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(names: &[&str]) -> Vec<(String, Option<String>)> {
        names.iter().map(|n| (n.to_string(), None)).collect()
    }

    fn list(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn several_numbers_are_a_space_one_value_a_default_and_host_template_names_nothing() {
        let instances = vec![
            list(&["T", "512", "true"]),
            list(&["T", "256", "true"]),
            list(&["T", "128", "true"]),
        ];
        let f = from_instances(
            "reduce6",
            &params(&["T", "blockSize", "nIsPow2"]),
            &instances,
            &[],
            &BTreeMap::new(),
        );
        assert_eq!(
            f.tuned,
            vec![TunableParam::new("blockSize", [128, 256, 512])]
        );
        assert_eq!(f.fixed.get("nIsPow2").map(String::as_str), Some("true"));
        assert!(!f.fixed.contains_key("T"));
        assert_eq!(f.lines.len(), 2);
        assert!(
            f.lines
                .iter()
                .any(|l| l.contains("tuned over 512, 256, 128")),
            "{:?}",
            f.lines
        );
    }

    #[test]
    fn a_single_run_takes_the_first_value_launched() {
        let instances = vec![list(&["T", "512", "true"]), list(&["T", "256", "false"])];
        let f = single_from_instances(
            "reduce6",
            &params(&["T", "blockSize", "nIsPow2"]),
            &instances,
            &[],
            &BTreeMap::new(),
            &BTreeMap::new(),
        );
        assert!(f.tuned.is_empty());
        assert_eq!(f.fixed.get("blockSize").map(String::as_str), Some("512"));
        assert_eq!(f.fixed.get("nIsPow2").map(String::as_str), Some("true"));
        assert!(
            f.lines
                .iter()
                .any(|l| l.contains("`blockSize` of `reduce6` = 512: the first value")),
            "{:?}",
            f.lines
        );
        let preferred = BTreeMap::from([("blockSize".to_string(), 256)]);
        let f = single_from_instances(
            "reduce6",
            &params(&["T", "blockSize", "nIsPow2"]),
            &instances,
            &[],
            &BTreeMap::new(),
            &preferred,
        );
        assert_eq!(f.fixed.get("blockSize").map(String::as_str), Some("256"));
        assert!(f.lines.iter().any(|l| l.contains("default launch's block")));
    }

    #[test]
    fn the_users_choice_and_a_default_win_over_the_launches() {
        let instances = vec![list(&["float", "16"]), list(&["float", "32"])];
        let given: BTreeMap<String, String> = [("T".to_string(), "double".to_string())].into();
        let tuned = vec![TunableParam::new("BLOCK", [8])];
        let f = from_instances("k", &params(&["T", "BLOCK"]), &instances, &tuned, &given);
        assert_eq!(f, FromInstances::default());
        let with_default = vec![("T".to_string(), Some("float".to_string()))];
        let f = from_instances("k", &with_default, &instances, &[], &BTreeMap::new());
        assert_eq!(f, FromInstances::default());
        // a type instantiated once is the default
        let f = from_instances(
            "k",
            &params(&["T", "BLOCK"]),
            &instances,
            &[],
            &BTreeMap::new(),
        );
        assert_eq!(f.fixed.get("T").map(String::as_str), Some("float"));
        assert_eq!(f.tuned, vec![TunableParam::new("BLOCK", [16, 32])]);
    }
}
