//! The profiler line: which tool kt's profiles will be taken with (CUPTI in the tuner's worker, else Nsight
//! Compute), or that runs will take none. Profiles are optional, so their absence is not a failed check.

use super::Check;
use kt_pipeline::stage3::profiling::profiler_choice::{PROFILER_ENV, Profiler, cupti_library};

pub fn probe() -> Check {
    let found = match cupti_library() {
        Some(lib) => Ok(Profiler::Cupti(lib)),
        None => kt_profile::ncu_availability()
            .map(Profiler::Ncu)
            .map_err(|_| "neither CUPTI (libcupti) nor Nsight Compute (ncu) was found".to_string()),
    };
    Check::ok("profiler", describe(found))
}

fn describe(found: Result<Profiler, String>) -> String {
    match found {
        Ok(Profiler::Cupti(lib)) => format!(
            "CUPTI, in the tuner's worker ({}); {PROFILER_ENV}=ncu uses Nsight Compute instead",
            lib.display()
        ),
        Ok(Profiler::Ncu(ncu)) => format!("Nsight Compute ({})", ncu.path().display()),
        Err(why) => format!(
            "none: runs take no profiles ({why}); install the CUDA toolkit (CUPTI, Nsight Compute) and set \
             CUDA_HOME to it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_profiler_is_named_with_where_it_was_found() {
        let cupti = describe(Ok(Profiler::Cupti("/cuda/lib64/libcupti.so.13".into())));
        assert!(cupti.starts_with("CUPTI") && cupti.contains("/cuda/lib64/libcupti.so.13"));
        let ncu = describe(Ok(Profiler::Ncu(kt_profile::NcuPath(
            "/cuda/bin/ncu".into(),
        ))));
        assert_eq!(ncu, "Nsight Compute (/cuda/bin/ncu)");
        let none = describe(Err("neither was found".into()));
        assert!(none.starts_with("none: runs take no profiles (neither was found)"));
    }
}
