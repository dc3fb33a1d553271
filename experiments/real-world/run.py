#!/usr/bin/env python3
"""The real-world benchmark (issue 33): kernels nobody here wrote, as they are in public repositories.

    python3 experiments/real-world/run.py prepare [--mirrors DIR]   # fetch: copy the kernels' files + headers
    python3 experiments/real-world/run.py check [--kt KT]           # CPU: inspect, NVRTC compile, nvcc compile
    python3 experiments/real-world/run.py run [--kt KT] [--out DIR] # GPU: inspect, tune, verify

manifest.toml pins every kernel to a repository, a commit and a path; sidecars/<id>.toml (ours) describes
its inputs and launch. The sources live in KT_REALWORLD_SRC (default: .realworld/ at the repository root,
git-ignored), as <repo>/<path>: `prepare` fills it with just the files the kernels need (each kernel's file
and the headers it includes, followed transitively), from local mirrors (--mirrors DIR holding bare git
mirrors as DIR/<owner>+<name>/repo, or plain clones as DIR/<owner>+<name>) or, without --mirrors, from a
`git clone` at the pinned commit. The folder is small enough to carry to a machine without a network.
Before `check` and `run`, each sidecar is copied beside its file as <stem>.<kernel>.toml (kt's lookup).

`check` prints, per kernel: kt inspect, the default configuration compiled as `kt tune` compiles it
(`kt tune --compile-only`: NVRTC, or nvcc where NVRTC fails), and the unit (`kt inspect --unit`) compiled by
nvcc -cubin; `run` prints, per kernel: inspect, `kt tune --test-size` (tuned and verified) and, where the
manifest names another kernel of the same file that computes the same thing, `kt verify` against it.
Both end with the totals and exit 1 if any kernel failed. No code of those repositories is ever committed.
"""
import argparse, json, os, pathlib, re, shutil, subprocess, sys, tempfile, time, tomllib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def manifest():
    return tomllib.loads((HERE / "manifest.toml").read_text())


def src_dir():
    return pathlib.Path(os.environ.get("KT_REALWORLD_SRC", ROOT / ".realworld"))


class Repo:
    """One pinned repository read from a bare mirror, a plain clone or a fresh clone."""

    def __init__(self, name, spec, mirrors):
        self.name, self.commit = name, spec["commit"]
        owner_name = spec["url"].rstrip("/").split("github.com/")[1]
        key = owner_name.replace("/", "+")
        if mirrors:
            base = pathlib.Path(mirrors) / key
            self.git_dir = base / "repo" if (base / "repo").is_dir() else base / ".git"
            if not self.git_dir.is_dir():
                sys.exit(f"{name}: no mirror at {base} (expected {base}/repo or a clone)")
        else:
            cache = pathlib.Path(os.environ.get("KT_REALWORLD_CLONES", pathlib.Path.home() / ".cache/kt/realworld"))
            dest = cache / key
            if not dest.is_dir():
                subprocess.run(["git", "clone", "--filter=blob:none", "--no-checkout", spec["url"], str(dest)], check=True)
            self.git_dir = dest / ".git"
        self._exists = {}

    def read(self, path):
        p = subprocess.run(["git", f"--git-dir={self.git_dir}", "show", f"{self.commit}:{path}"], capture_output=True)
        if p.returncode != 0:
            return None
        return p.stdout

    def exists(self, path):
        if path not in self._exists:
            p = subprocess.run(["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{self.commit}:{path}"], capture_output=True)
            self._exists[path] = p.returncode == 0
        return self._exists[path]


def norm(path):
    return os.path.normpath(path).replace("\\", "/")


def prepare(args):
    m = manifest()
    repos = {name: Repo(name, spec, args.mirrors) for name, spec in m["repos"].items()}
    out = pathlib.Path(args.out or src_dir())
    copied = {}
    for k in m["kernel"]:
        repo = repos[k["repo"]]
        pending = [k["path"]]
        while pending:
            path = pending.pop()
            if (k["repo"], path) in copied:
                continue
            data = repo.read(path)
            if data is None:
                sys.exit(f"{k['id']}: {path} is not in {k['repo']} at {repo.commit}")
            copied[(k["repo"], path)] = len(data)
            dest = out / k["repo"] / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            here = os.path.dirname(path)
            for _, name in INCLUDE.findall(data.decode("utf-8", "replace")):
                for d in [here, *k.get("include", [])]:
                    cand = norm(os.path.join(d, name))
                    if not cand.startswith("..") and repo.exists(cand):
                        pending.append(cand)
                        break
    total = sum(copied.values())
    print(f"{len(copied)} files, {total / 2**20:.1f} MiB in {out}")


def place_sidecars(m):
    src = src_dir()
    missing = []
    for k in m["kernel"]:
        f = src / k["repo"] / k["path"]
        if not f.is_file():
            missing.append(str(f))
            continue
        shutil.copy(HERE / "sidecars" / f"{k['id']}.toml", f.with_name(f"{f.stem}.{k['kernel']}.toml"))
    if missing:
        sys.exit(f"{len(missing)} kernel files missing (first: {missing[0]}): run `run.py prepare` first, or set KT_REALWORLD_SRC")


def run_cmd(cmd, timeout=600, env=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return "timeout", text(e.stdout), text(e.stderr) + f"\ntimed out after {timeout} s", time.time() - t0


def last_line(text, pattern=None):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    if pattern:
        hits = [l for l in lines if re.search(pattern, l)]
        if hits:
            return hits[-1]
    return lines[-1] if lines else ""


def kernel_args(k):
    src = src_dir() / k["repo"]
    file = src / k["path"]
    inc = []
    for d in k.get("include", []):
        inc += ["--include", str(src / d)]
    return file, inc


def inspect(kt, k):
    file, inc = kernel_args(k)
    rc, out, err, _ = run_cmd([kt, "inspect", str(file), "--kernel", k["kernel"], *inc])
    return rc == 0, (last_line(err, "error") if rc != 0 else last_line(out, "kernel"))


def check(args):
    m = manifest()
    place_sidecars(m)
    m["kernel"] = selected(m, args)
    nvcc = shutil.which("nvcc")
    totals = {"inspect": 0, "nvrtc": 0, "nvcc": 0}
    rows = []
    for k in m["kernel"]:
        file, inc = kernel_args(k)
        ok_i, what_i = inspect(args.kt, k)
        rc, out, err, _ = run_cmd([args.kt, "tune", str(file), "--kernel", k["kernel"], *inc, *k.get("args", []),
                                   "--test-size", "--compile-only", "--arch", args.arch])
        compiled = rc == 0 and re.search(r"with (NVRTC|nvcc)", out)
        by = compiled.group(1) if compiled else None
        ok_r = by == "NVRTC"
        what_r = last_line(out) if compiled else last_line(err, "error")
        ok_n, what_n = False, "no nvcc on this machine"
        if nvcc:
            rc, unit, err, _ = run_cmd([args.kt, "inspect", str(file), "--kernel", k["kernel"], *inc, "--unit"])
            if rc != 0:
                what_n = "no unit: " + last_line(err, "error")
            else:
                with tempfile.TemporaryDirectory() as d:
                    u = pathlib.Path(d) / "unit.cu"
                    u.write_text(unit)
                    incs = [f"-I{file.parent}"] + [f"-I{x}" for x in inc[1::2]]
                    rc, out_n, err_n, _ = run_cmd([nvcc, "-cubin", f"-arch={args.arch}", *incs, "-o", str(pathlib.Path(d) / "u.cubin"), str(u)])
                    ok_n = rc == 0
                    what_n = "ok" if ok_n else last_line(out_n + err_n, "error")
        totals["inspect"] += ok_i
        totals["nvrtc"] += ok_r
        totals["nvcc"] += ok_n
        status = "ok" if ok_i and compiled and ok_n else "FAIL"
        line = (f"{k['id']:<30} {status:<4} inspect {'ok' if ok_i else 'FAIL'} | kt compile "
                f"{by or 'FAIL'} | nvcc unit {'ok' if ok_n else 'FAIL'}")
        problems = [w for ok, w in [(ok_i, what_i), (compiled, what_r), (ok_n, what_n)] if not ok]
        if by == "nvcc":
            problems.append("NVRTC failed, nvcc compiled it")
        print(line + (f"  ({'; '.join(problems)[:300]})" if problems else ""), flush=True)
        rows.append(status == "ok")
    n = len(m["kernel"])
    print(f"total: {sum(rows)}/{n} kernels pass on the CPU; inspect {totals['inspect']}/{n}, "
          f"compiled as kt tune compiles (NVRTC) {totals['nvrtc']}/{n}, unit compiled by nvcc {totals['nvcc']}/{n}")
    return 0 if all(rows) else 1


def tune(kt, k, out_dir, time_limit, kernel_timeout=600):
    file, inc = kernel_args(k)
    rc, out, err, secs = run_cmd([kt, "tune", str(file), "--kernel", k["kernel"], *inc, *k.get("args", []),
                                  "--test-size", "--json", "--time-limit", str(time_limit), "-v"],
                                 timeout=kernel_timeout)
    (out_dir / f"{k['id']}.tune.json").write_text(out)
    (out_dir / f"{k['id']}.tune.err").write_text(err)
    try:
        j = json.loads(out)
        best = j.get("best") or {}
        cfg = " ".join(f"{a}={b}" for a, b in (best.get("config") or []))
        ms = (best.get("timing") or {}).get("median_ms")
        n = len(j.get("measurements") or [])
        ok = rc == 0 and bool(best)
        note = last_line(err, "not tunable as written") if "not tunable as written" in err else ""
        what = f"best {cfg} {ms:.4f} ms, {n} configs" + (f"; {note}" if note else "") if ok and ms else last_line(err, "error")
    except (ValueError, json.JSONDecodeError, TypeError):
        ok, what = False, last_line(err, r"error|FAIL")
    return ok, what, secs


def verify(kt, k, out_dir, kernel_timeout=600):
    file, inc = kernel_args(k)
    rc, out, err, secs = run_cmd([kt, "verify", str(file), str(file), "--reference-kernel", k["verify_against"],
                                  "--kernel", k["kernel"], *inc, *k.get("verify_args", [])], timeout=kernel_timeout)
    (out_dir / f"{k['id']}.verify.txt").write_text(out + err)
    ok = rc == 0 and re.search(r"all tests passed", out + err)
    return bool(ok), last_line(out + err, r"FAIL|wrong|written|modified|differ|error|passed"), secs


def selected(m, args):
    """The kernels of --only (ids) and of --shard K/N (every Nth from the Kth), in manifest order."""
    kernels = m["kernel"]
    if args.only:
        wanted = set(args.only.split(","))
        kernels = [k for k in kernels if k["id"] in wanted]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        kernels = kernels[i - 1::n]
    return kernels


def run(args):
    m = manifest()
    place_sidecars(m)
    m["kernel"] = selected(m, args)
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    passed = 0
    verified = 0
    with_reference = 0
    lines = []
    fallbacks = []
    for k in m["kernel"]:
        ok_i, what_i = inspect(args.kt, k)
        ok_t, what_t, secs = tune(args.kt, k, out_dir, args.time_limit, args.kernel_timeout)
        ok_v, what_v = True, ""
        if k.get("verify_against"):
            with_reference += 1
            ok_v, what_v, _ = verify(args.kt, k, out_dir, args.kernel_timeout)
            verified += ok_v
        ok = ok_i and ok_t and ok_v
        passed += ok
        parts = [f"inspect {'ok' if ok_i else 'FAIL: ' + what_i}", f"tune {'ok' if ok_t else 'FAIL'} ({secs:.0f} s): {what_t}"]
        if k.get("verify_against"):
            parts.append(f"verify vs {k['verify_against']} {'ok' if ok_v else 'FAIL'}: {what_v}")
        # kt warns once per run when NVRTC could not compile the kernel and nvcc did
        err = out_dir / f"{k['id']}.tune.err"
        if err.exists() and "compiled it with" in err.read_text(errors="replace"):
            fallbacks.append(k["id"])
            parts.append("nvcc fallback")
        line = f"{k['id']:<30} {'ok' if ok else 'FAIL':<4} " + " | ".join(parts)
        print(line, flush=True)
        lines.append(line)
    n = len(m["kernel"])
    total = (f"total: {passed}/{n} kernels pass ({100 * passed / n:.0f} %): inspected, tuned and verified; "
             f"{verified}/{with_reference} verified against another kernel of their file; "
             f"{len(fallbacks)} compiled by nvcc where NVRTC could not ({', '.join(fallbacks) or 'none'})")
    print(total)
    (out_dir / "real-world.txt").write_text("\n".join(lines + [total]) + "\n")
    return 0 if passed == n else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare", help="copy the kernels' files and their headers into KT_REALWORLD_SRC")
    p.add_argument("--mirrors", help="directory of mirrors (<owner>+<name>/repo bare, or clones); default: git clone")
    p.add_argument("--out", help="destination (default: KT_REALWORLD_SRC or .realworld/)")
    c = sub.add_parser("check", help="CPU: inspect, compile as kt tune does, compile the unit with nvcc")
    c.add_argument("--kt", default=os.environ.get("KT", "kt"))
    c.add_argument("--arch", default="sm_90")
    c.add_argument("--only", help="comma-separated kernel ids")
    c.add_argument("--shard", help="K/N: every Nth kernel from the Kth")
    r = sub.add_parser("run", help="GPU: inspect, tune and verify every kernel")
    r.add_argument("--kt", default=os.environ.get("KT", "kt"))
    r.add_argument("--out", default="/tmp/kt-real-world")
    r.add_argument("--time-limit", type=float, default=25, help="seconds of tuning per kernel (kt tune --time-limit)")
    r.add_argument("--only", help="comma-separated kernel ids")
    r.add_argument("--shard", help="K/N: every Nth kernel from the Kth (to split the run over calls)")
    r.add_argument("--kernel-timeout", type=float, default=600,
                   help="seconds after which one kernel's kt tune or kt verify is stopped and counted as failed")
    args = ap.parse_args()
    if args.mode == "prepare":
        prepare(args)
        return 0
    return check(args) if args.mode == "check" else run(args)


if __name__ == "__main__":
    sys.exit(main())
