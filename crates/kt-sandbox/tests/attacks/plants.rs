//! Cases that plant something where kt reads the generator's results: links, FIFOs and linked directories
//! in place of its arrays, a link as result.json.

use super::Case;
use super::checks::*;

/// Patches numpy.save so that the harness leaves `what` where an array should be (the harness's own checks
/// passed on the real arrays; only kt's reading of out/ stands between the plant and the run's tests).
macro_rules! plant {
    ($make:expr) => {
        concat!(
            "    import numpy\n",
            "    def _plant(path, a, **k):\n",
            "        ",
            $make,
            "\n",
            "    numpy.save = _plant\n"
        )
    };
}

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "plant a symbolic link to a root-only file as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.symlink(SECRET, path)"),
        },
        Case {
            name: "plant a FIFO as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.mkfifo(path)"),
        },
        Case {
            name: "plant a symbolic link to /dev/zero as its array",
            needs: None,
            check: refused_output,
            attack: plant!("os.symlink('/dev/zero', path)"),
        },
        Case {
            name: "plant a hard link to a host file as its array",
            needs: None,
            check: test_written_without_secret,
            attack: plant!("os.link(SECRET, path)"),
        },
        Case {
            name: "plant a linked args directory",
            needs: None,
            check: refused_output,
            attack: r#"
    import numpy
    def _plant(path, a, **k):
        d = os.path.dirname(path)
        if not os.path.islink(d):
            os.rename(d, d + ".real")
            os.symlink(os.path.basename(d) + ".real", d)
        numpy.lib.format.write_array(open(path, "wb"), a)
    numpy.save = _plant
"#,
        },
        Case {
            name: "plant a symbolic link as result.json",
            needs: None,
            check: none,
            attack: r#"
    import builtins
    real_replace = os.replace
    def _replace(src, dst):
        if dst.endswith("result.json"):
            os.symlink(SECRET, dst); return
        real_replace(src, dst)
    os.replace = _replace
"#,
        },
    ]
}
