//! The generator's system-call filter (seccomp, classic BPF), built by the parent and installed by the child last
//! before `exec` (`confine/mod.rs`). It refuses, with EPERM, only what a numpy program never needs and what reaches
//! past every namespace:
//! - `socket(AF_UNIX, …)`: a pathname Unix socket anywhere the program can see (an ssh ControlMaster socket, an
//!   agent, a desktop bus) would connect, network namespace or not, and a read-only mount does not stop it;
//! - `add_key`, `request_key`, `keyctl`: the kernel keyring is per uid and outlives the run (as root the sandbox
//!   uid's keyring would keep what one run stored for the next run of that uid; as a user it is the user's own);
//! - `io_uring_setup`: io_uring performs socket and file operations without these system calls.
//!
//! System calls of another architecture (the 32-bit entry on x86-64, x32) are refused as a whole.

/// `struct seccomp_data` offsets.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
/// Low 32 bits of `args[0]` (little-endian).
const ARG0_OFFSET: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// x32 system calls carry this bit in their number on x86-64.
const X32_BIT: u32 = 0x4000_0000;

const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const RET_EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;

/// Refused whatever their arguments.
const DENIED: [libc::c_long; 4] = [
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_io_uring_setup,
];

/// Whether kt knows this architecture's audit number (elsewhere no filter is installed and `kt doctor` says so).
pub(crate) fn supported() -> bool {
    AUDIT_ARCH != 0
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The filter program.
pub(crate) fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = |offset| stmt(BPF_LD | BPF_W | BPF_ABS, offset);
    let ret = |value| stmt(BPF_RET | BPF_K, value);
    let mut p = vec![
        load(ARCH_OFFSET),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0),
        ret(RET_EPERM),
        load(NR_OFFSET),
        jump(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1),
        ret(RET_EPERM),
    ];
    for nr in DENIED {
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr as u32, 0, 1));
        p.push(ret(RET_EPERM));
    }
    // socket(AF_UNIX, …): any other family (the namespace has no network anyway) and socketpair stay allowed
    p.push(jump(
        BPF_JMP | BPF_JEQ | BPF_K,
        libc::SYS_socket as u32,
        0,
        3,
    ));
    p.push(load(ARG0_OFFSET));
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_UNIX as u32, 0, 1));
    p.push(ret(RET_EPERM));
    p.push(ret(RET_ALLOW));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter of the instructions the program uses, to check its verdicts without installing it.
    fn verdict(program: &[libc::sock_filter], arch: u32, nr: u32, arg0: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = program[pc];
            let code = u32::from(i.code);
            if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                acc = match i.k {
                    ARCH_OFFSET => arch,
                    NR_OFFSET => nr,
                    ARG0_OFFSET => arg0,
                    other => panic!("unexpected load at {other}"),
                };
                pc += 1;
            } else if code == libc::BPF_RET | libc::BPF_K {
                return i.k;
            } else {
                let taken = if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K {
                    acc == i.k
                } else if code == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K {
                    acc >= i.k
                } else {
                    panic!("unexpected instruction {code:#x}")
                };
                pc += 1 + usize::from(if taken { i.jt } else { i.jf });
            }
        }
    }

    #[test]
    fn unix_sockets_keyrings_io_uring_and_foreign_architectures_are_refused_and_the_rest_allowed() {
        let p = program();
        let socket = libc::SYS_socket as u32;
        assert_eq!(
            verdict(&p, AUDIT_ARCH, socket, libc::AF_UNIX as u32),
            RET_EPERM
        );
        assert_eq!(
            verdict(&p, AUDIT_ARCH, socket, libc::AF_INET as u32),
            RET_ALLOW
        );
        for nr in DENIED {
            assert_eq!(verdict(&p, AUDIT_ARCH, nr as u32, 0), RET_EPERM);
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_mmap,
            libc::SYS_socketpair,
            libc::SYS_clone,
        ] {
            assert_eq!(
                verdict(&p, AUDIT_ARCH, nr as u32, libc::AF_UNIX as u32),
                RET_ALLOW
            );
        }
        assert_eq!(verdict(&p, 0x4000_0003, 3, 0), RET_EPERM, "i386 entry");
        assert_eq!(verdict(&p, AUDIT_ARCH, X32_BIT | 41, 1), RET_EPERM, "x32");
        assert!(p.len() < 64);
    }
}
