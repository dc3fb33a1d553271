//! Compiles a copy of every prompt template under the workspace's `prompts/` into the crate, so an installed
//! `kt` binary works from any directory. Scanning the folder (instead of a hand-kept list of `include_str!`)
//! means a new template is picked up without touching Rust code.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let prompts = manifest_dir.join("../../prompts");
    println!("cargo:rerun-if-changed={}", prompts.display());

    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir(&prompts) {
        for entry in dir.flatten() {
            let path = entry.path();
            let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some(name) = file_name.strip_suffix(".md.j2") {
                let absolute = path.canonicalize().unwrap_or(path.clone());
                println!("cargo:rerun-if-changed={}", absolute.display());
                entries.push((name.to_string(), absolute));
            }
        }
    }
    entries.sort();

    let mut code =
        String::from("/// (name, template text) of every prompt compiled into this build.\n");
    code.push_str("pub(crate) static BUILTIN_PROMPTS: &[(&str, &str)] = &[\n");
    for (name, path) in &entries {
        let _ = writeln!(
            code,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()))
        .join("builtin_prompts.rs");
    if let Err(err) = std::fs::write(&out, code) {
        panic!("cannot write {}: {err}", out.display());
    }
}
