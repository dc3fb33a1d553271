//! How a launch is timed and its outputs judged: samples and their statistics (`measure`, `sampling`),
//! which configurations stop being sampled once they lost (`racing`, its record `race_evidence`),
//! poisoned outputs compared within a tolerance (`verify`, its `report`, `sum_floor` for long sums, `one_sided` for an
//! allowance of wrong elements, `total` for outputs compared by their sum), guard bytes around
//! every array (`guard`), the check after many launches (`late_check`) and the fastest time physics allows
//! (`floor`). The worker runs these on the GPU; the session reads what they report.

pub mod floor;
pub mod guard;
pub mod late_check;
pub mod measure;
pub mod one_sided;
pub mod race_evidence;
pub mod racing;
pub mod report;
pub mod sampling;
pub mod sum_floor;
pub mod total;
pub mod verify;
