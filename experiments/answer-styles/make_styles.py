#!/usr/bin/env python3
"""Writes the answer-style files <letter>-<style>.toml beside this script: `python3 make_styles.py`.

Each file answers the first `stage3.apply` question of the autonomous matmul demo (make the block size tunable)
with a correct kernel, in one of the styles real models write (issue 14), plus the answers to the questions
that follow within the same `apply` node (`stage3.restrictions`; `stage3.code_parameters` for the code-first
style). The kernels and prose are written here once so that the JSON escaping is right; the .toml files are
what kt's scripted provider reads, and are meant to be read as they are.
"""
import json
import pathlib

out = pathlib.Path(__file__).resolve().parent

RESTRICT = '{"restrictions": ["block_size_x * block_size_y <= 1024"]}'


def j(code, params, expl, **extra):
    """A KernelRewrite as models print it: one line per member, one line per parameter."""
    members = [f'  "code": {json.dumps(code)}']
    ps = ",\n".join("    " + json.dumps({"name": n, "values": v}) for n, v in params)
    members.append('  "parameters": [\n' + ps + "\n  ]")
    for k, v in extra.items():
        members.append(f"  {json.dumps(k)}: {json.dumps(v)}")
    members.append(f'  "explanation": {json.dumps(expl)}')
    return "{\n" + ",\n".join(members) + "\n}"


def toml_text(s):
    """A TOML multi-line literal string, kept byte for byte (TOML drops the newline right after the quotes)."""
    assert "'''" not in s
    return "'''\n" + s + "'''"


def write(name, header, answers):
    header += "\n\nWritten by make_styles.py (edit it, not this file)."
    lines = ["# " + l if l else "#" for l in header.strip().splitlines()]
    body = "\n".join(lines) + "\n"
    for node, text in answers:
        body += f'\n[[answers]]\nnode = "{node}"\ntext = {toml_text(text)}\n'
    (out / name).write_text(body)

COMMON = """Answer to the first `stage3.apply` question of the autonomous matmul demo (step 1: make the block size
tunable), written for experiments/answer-styles/run.sh (`kt debug node RUN apply --llm scripted:THIS`).
One answer per question: if kt cannot use the answer, its retry finds the script empty and the step is
dropped, so the run's table shows what kt made of this very answer."""

PARAMS_A = [("block_size_x", [16, 32, 64]), ("block_size_y", [2, 4, 8, 16])]
PARAMS_B = [("block_size_x", [16, 32, 64]), ("block_size_y", [4, 8, 16])]

# --- kernels (each correct for any size: every thread outside C returns before touching memory) ---
def k_blockdim(summary):
    """The kernel reading blockDim, as the original does; `summary` is its first comment line."""
    return f"""\
// {summary}
// C = A * B for row-major matrices: A is A_height x A_width, B is A_width x B_width.
// One thread per element of C. The launch block is (block_size_x, block_size_y); the kernel reads blockDim,
// so it is correct for every block shape and only the launch changes.
extern "C" __global__ void matrixMultiply(const float* A, const float* B, float* C,
                                          int A_width, int A_height, int B_width)
{{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= A_height || col >= B_width) {{
        return;
    }}
    float acc = 0.0f;
    for (int k = 0; k < A_width; ++k) {{
        acc += A[row * A_width + k] * B[k * B_width + col];
    }}
    C[row * B_width + col] = acc;
}}
"""


def k_const(summary, linkage='extern "C" ', ptr="const float*", header=""):
    """The kernel indexing with the tunable block sizes as compile-time constants instead of blockDim; `summary`
    is its first comment line."""
    return f"""\
{header}// {summary}
// Tunable thread block: block_size_x columns by block_size_y rows of C per block (kt defines both).
{linkage}__global__ void matrixMultiply({ptr} A, {ptr} B, float* C,
                               int A_width, int A_height, int B_width)
{{
    int col = blockIdx.x * block_size_x + threadIdx.x;
    int row = blockIdx.y * block_size_y + threadIdx.y;
    if (row < A_height && col < B_width) {{
        const float* a_row = A + (size_t)row * A_width;
        float sum = 0.0f;
        for (int k = 0; k < A_width; ++k) {{
            sum += a_row[k] * B[(size_t)k * B_width + col];
        }}
        C[(size_t)row * B_width + col] = sum;
    }}
}}
"""

ORIGINAL = """\
extern "C" __global__ void matrixMultiply(const float* A, const float* B, float* C,
                                          int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float sum = 0.0f;
        for (int k = 0; k < A_width; ++k) {
            sum += A[row * A_width + k] * B[k * B_width + col];
        }
        C[row * B_width + col] = sum;
    }
}
"""

styles = {}

# a. prose + ```json fence
styles["a-json-fence"] = ("a. Baseline: a sentence of prose, the JSON in a ```json fence, a closing remark.", [
 ("stage3.apply", "Sure. The kernel already derives its indices from blockDim, so making the block size tunable only needs the\nlaunch to change; I kept the indexing and added an early exit for threads outside C.\n\n```json\n"
  + j(k_blockdim("matrixMultiply, step 1: the thread-block shape becomes a tuning parameter."), PARAMS_A, "The kernel reads blockDim, so the block shape is now a tuning knob. Threads outside C return early.", grid_divisors={"x": ["block_size_x"], "y": ["block_size_y"]})
  + "\n```\n\nThe grid stays ceil(B_width / block_size_x) x ceil(A_height / block_size_y).\n"),
 ("stage3.restrictions", RESTRICT)])

# b. trailing commas
b_code = json.dumps(k_const("Block-size-tunable matrix multiply (one output element per thread)."))
styles["b-trailing-comma"] = ("b. Bare JSON with trailing commas after the last array element and the last member.", [
 ("stage3.apply", "{\n  \"code\": " + b_code + ",\n  \"parameters\": [\n    {\"name\": \"block_size_x\", \"values\": [16, 32, 64,]},\n    {\"name\": \"block_size_y\", \"values\": [4, 8, 16,]},\n  ],\n  \"grid_divisors\": {\"x\": [\"block_size_x\"], \"y\": [\"block_size_y\"],},\n  \"explanation\": \"Indices now use the tunable block sizes block_size_x and block_size_y instead of blockDim.\",\n}\n"),
 ("stage3.restrictions", RESTRICT)])

# c. raw newlines inside the code string (quotes escaped, newlines not)
c_code = k_const("Naive matmul with a compile-time block shape.").replace('"', '\\"')
styles["c-raw-newlines"] = ("c. JSON whose `code` string holds raw newlines (quotes escaped, line breaks not), as many models write it.", [
 ("stage3.apply", "```json\n{\n  \"code\": \"" + c_code + "\",\n  \"parameters\": [\n    {\"name\": \"block_size_x\", \"values\": [16, 32, 64]},\n    {\"name\": \"block_size_y\", \"values\": [4, 8, 16]}\n  ],\n  \"explanation\": \"Row and column come from the tunable block sizes; each thread still computes one element.\"\n}\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# d. parameter values as strings
d = j(k_const("Same computation as before; only the block dimensions are now parameters."), [(n, [str(x) for x in v]) for n, v in PARAMS_B], "Same algorithm; block_size_x and block_size_y replace the fixed 16x16 block.")
styles["d-string-values"] = ("d. Parameter values given as strings (\"16\") instead of numbers.", [
 ("stage3.apply", "Here is the updated kernel:\n\n```json\n" + d + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# e. code-first: ```cuda block, parameters in prose, no JSON; then the follow-up question's answer
styles["e-code-first"] = ("e. Code first: a ```cuda block and the parameters in prose, no JSON at all. kt should take the code\nand ask for the parameters in one follow-up question (`stage3.code_parameters`), answered below.", [
 ("stage3.apply", "To make the block size tunable, the kernel indexes with two compile-time constants, `block_size_x` and\n`block_size_y`, which the tuner defines for each configuration:\n\n```cuda\n"
  + k_const("matrixMultiply with a tunable block (block_size_x x block_size_y threads).", linkage="") + "```\n\nTunable parameters:\n- `block_size_x` (threads per block along the columns of C): 16, 32 or 64\n- `block_size_y` (threads per block along the rows of C): 4, 8 or 16\n\nThe grid is ceil(B_width / block_size_x) by ceil(A_height / block_size_y), as before.\n"),
 ("stage3.code_parameters", "```json\n{\"parameters\": [{\"name\": \"block_size_x\", \"values\": [16, 32, 64]}, {\"name\": \"block_size_y\", \"values\": [4, 8, 16]}], \"grid_divisors\": {\"x\": [\"block_size_x\"], \"y\": [\"block_size_y\"]}, \"dynamic_shared_memory\": null}\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# f. the original kernel in a ```cuda block, then the ```json answer
styles["f-original-then-json"] = ("f. The original kernel quoted in a ```cuda block first, then the answer in a ```json fence.", [
 ("stage3.apply", "Your current kernel is:\n\n```cuda\n" + ORIGINAL + "```\n\nIt already reads blockDim, so the new version keeps that and lets the tuner pick the block shape:\n\n```json\n"
  + j(k_blockdim("Unchanged arithmetic; what is tuned is the launch block."), PARAMS_B, "Only the launch block changes; the kernel reads blockDim.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# g. ```json answer whose code holds ``` fences
styles["g-fences-in-code"] = ("g. A ```json answer whose `code` value is itself wrapped in a ```cuda fence.", [
 ("stage3.apply", "```json\n" + j("```cuda\n" + k_const("Version 2 of matrixMultiply: block size as a compile-time knob.") + "```", PARAMS_B, "Block sizes are compile-time constants now; the grid divides by them as before.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# h. host launcher in the code
HOST = k_const("Kernel plus a host-side launcher for it.", header="#include <cuda_runtime.h>\n\n") + """
// Host wrapper: launches the kernel on device pointers the caller allocated, with the tuned block shape.
void launch_matmul(const float* dA, const float* dB, float* dC,
                   int A_width, int A_height, int B_width, cudaStream_t stream)
{
    dim3 block(block_size_x, block_size_y);
    dim3 grid((B_width + block_size_x - 1) / block_size_x, (A_height + block_size_y - 1) / block_size_y);
    matrixMultiply<<<grid, block, 0, stream>>>(dA, dB, dC, A_width, A_height, B_width);
}
"""
styles["h-host-launcher"] = ("h. The code carries a host launcher (`launch_matmul` with `<<<...>>>` on caller-allocated pointers) and\n`#include <cuda_runtime.h>`.", [
 ("stage3.apply", "Below is the kernel with a tunable block shape, plus a small launcher so it is clear how the grid is formed.\n\n```json\n"
  + j(HOST, PARAMS_B, "The kernel indexes with block_size_x/block_size_y; launch_matmul shows the matching launch.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# i. <<<...>>> only in a comment
COMMENTED = k_const("One thread computes one C element; see below for the launch.").replace("// Tunable thread block", "// Launch: matrixMultiply<<<dim3((B_width + block_size_x - 1) / block_size_x,\n//                               (A_height + block_size_y - 1) / block_size_y),\n//                          dim3(block_size_x, block_size_y)>>>(A, B, C, A_width, A_height, B_width);\n// Tunable thread block")
styles["i-launch-in-comment"] = ("i. The launch `<<<...>>>` appears only in a comment of the code.", [
 ("stage3.apply", "```json\n" + j(COMMENTED, PARAMS_B, "Block sizes are tunable; the comment shows the launch kt performs.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# j. plain __global__ (no extern "C"), non-const pointers like the suite's kernels
styles["j-no-extern-c"] = ("j. Code without `extern \"C\"`: a plain `__global__` kernel (C++ linkage) with non-const pointers.", [
 ("stage3.apply", "```json\n" + j(k_const("C++ linkage, same signature otherwise.", linkage="", ptr="float*"), PARAMS_B, "Indexing uses the tunable block sizes.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

# k. <think> block before the answer
styles["k-think-block"] = ("k. A `<think>` block (with a draft in a fence and braces in it) before a bare JSON answer.", [
 ("stage3.apply", "<think>\nThe step asks for a tunable block size. The kernel computes col and row from blockDim, so {block_size_x,\nblock_size_y} only need to reach the launch. A draft:\n```cuda\n__global__ void matrixMultiply(...) { /* same body */ }\n```\nBut the tuner defines block_size_x and block_size_y as macros anyway, so I could use them directly; that lets\nthe compiler fold the multiplications. Values: x in [16, 32, 64], y in [4, 8, 16]; 64 * 16 = 1024 is the most.\n</think>\n\n"
  + j(k_const("Block dimensions come from the tuner as macros."), PARAMS_B, "Indices use the tunable block sizes as compile-time constants.") + "\n"),
 ("stage3.restrictions", RESTRICT)])

# l. #ifndef default guards, __restrict__, __launch_bounds__
GUARDED = """\
#ifndef block_size_x
#define block_size_x 16
#endif
#ifndef block_size_y
#define block_size_y 16
#endif

// One thread per element of C; the block shape comes from the two tunable sizes (defaults above for a plain
// build, kt's own definitions when tuning).
extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
matrixMultiply(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int A_width, int A_height, int B_width)
{
    const int col = blockIdx.x * block_size_x + threadIdx.x;
    const int row = blockIdx.y * block_size_y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float sum = 0.0f;
        for (int k = 0; k < A_width; ++k) {
            sum += A[(size_t)row * A_width + k] * B[(size_t)k * B_width + col];
        }
        C[(size_t)row * B_width + col] = sum;
    }
}
"""
styles["l-ifndef-restrict"] = ("l. `#ifndef` default guards for the parameters, `__restrict__` pointers and `__launch_bounds__`.", [
 ("stage3.apply", "```json\n" + j(GUARDED, PARAMS_B, "Block sizes are tunable (with defaults for a stand-alone build); __restrict__ lets loads go through the read-only path.") + "\n```\n"),
 ("stage3.restrictions", RESTRICT)])

for name, (desc, answers) in styles.items():
    write(name + ".toml", desc + "\n\n" + COMMON, answers)
print(f"wrote {len(styles)} style files to {out}")
