//! Why warps wait: ncu's stall reasons, with the names a CUDA programmer uses for them.

use crate::metrics as m;
use serde::{Deserialize, Serialize};

/// One reason a warp could not issue an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallReason {
    LongScoreboard,
    ShortScoreboard,
    Barrier,
    Membar,
    MioThrottle,
    LgThrottle,
    TexThrottle,
    MathPipeThrottle,
    Wait,
    NotSelected,
    DispatchStall,
    Drain,
    ImcMiss,
    BranchResolving,
    NoInstruction,
    Sleeping,
    Misc,
}

impl StallReason {
    pub const ALL: [StallReason; 17] = [
        Self::LongScoreboard,
        Self::ShortScoreboard,
        Self::Barrier,
        Self::Membar,
        Self::MioThrottle,
        Self::LgThrottle,
        Self::TexThrottle,
        Self::MathPipeThrottle,
        Self::Wait,
        Self::NotSelected,
        Self::DispatchStall,
        Self::Drain,
        Self::ImcMiss,
        Self::BranchResolving,
        Self::NoInstruction,
        Self::Sleeping,
        Self::Misc,
    ];

    /// The ncu metric that measures it (cycles per issued instruction).
    pub fn metric(self) -> &'static str {
        match self {
            Self::LongScoreboard => m::STALL_LONG_SCOREBOARD,
            Self::ShortScoreboard => m::STALL_SHORT_SCOREBOARD,
            Self::Barrier => m::STALL_BARRIER,
            Self::Membar => m::STALL_MEMBAR,
            Self::MioThrottle => m::STALL_MIO_THROTTLE,
            Self::LgThrottle => m::STALL_LG_THROTTLE,
            Self::TexThrottle => m::STALL_TEX_THROTTLE,
            Self::MathPipeThrottle => m::STALL_MATH_PIPE_THROTTLE,
            Self::Wait => m::STALL_WAIT,
            Self::NotSelected => m::STALL_NOT_SELECTED,
            Self::DispatchStall => m::STALL_DISPATCH,
            Self::Drain => m::STALL_DRAIN,
            Self::ImcMiss => m::STALL_IMC_MISS,
            Self::BranchResolving => m::STALL_BRANCH_RESOLVING,
            Self::NoInstruction => m::STALL_NO_INSTRUCTION,
            Self::Sleeping => m::STALL_SLEEPING,
            Self::Misc => m::STALL_MISC,
        }
    }

    /// What the warp is waiting for, in plain words, with ncu's name in parentheses.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LongScoreboard => "waiting on global or local memory (long scoreboard)",
            Self::ShortScoreboard => {
                "waiting on shared memory or special math like sqrt/exp (short scoreboard)"
            }
            Self::Barrier => "waiting at a barrier (__syncthreads)",
            Self::Membar => "waiting on a memory fence (membar)",
            Self::MioThrottle => "shared-memory instruction queue full (MIO throttle)",
            Self::LgThrottle => "global/local memory instruction queue full (LG throttle)",
            Self::TexThrottle => "texture unit queue full (tex throttle)",
            Self::MathPipeThrottle => "arithmetic pipe busy (math pipe throttle)",
            Self::Wait => "fixed-latency dependency between instructions (wait)",
            Self::NotSelected => "ready but another warp issued (not selected)",
            Self::DispatchStall => "dispatch unit busy (dispatch stall)",
            Self::Drain => "draining stores at exit (drain)",
            Self::ImcMiss => "constant cache miss (IMC miss)",
            Self::BranchResolving => "resolving a branch target (branch resolving)",
            Self::NoInstruction => "instruction cache miss (no instruction)",
            Self::Sleeping => "sleeping (nanosleep or yield)",
            Self::Misc => "miscellaneous hardware reason (misc)",
        }
    }
}

/// How much one reason stalled warps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub reason: StallReason,
    /// Cycles a warp spent stalled on this reason per issued instruction.
    pub cycles_per_instruction: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_metric_in_the_fixed_set() {
        for r in StallReason::ALL {
            assert!(m::METRICS.contains(&r.metric()), "{r:?}");
            let others = StallReason::ALL.iter().filter(|o| o.metric() == r.metric());
            assert_eq!(others.count(), 1, "{r:?}");
        }
    }

    #[test]
    fn names_say_what_the_warp_waits_for() {
        assert!(StallReason::LongScoreboard.describe().contains("global"));
        assert!(StallReason::Barrier.describe().contains("__syncthreads"));
    }
}
