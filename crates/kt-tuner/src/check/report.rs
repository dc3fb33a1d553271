//! The report of comparing one output with its expected values, element by element (`verify.rs`) or by its
//! total (`total.rs`), and how it reads: [`OutputReport::describe`] is the line a user acts on.

use serde::{Deserialize, Serialize};

/// JSON has no NaN or infinity (serde_json writes `null` and cannot read it back as f64): a wrong value is
/// often exactly that, so these fields travel as a number or as the string "NaN" / "inf" / "-inf".
pub(crate) mod lossless_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Num(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Num(v) => Ok(v),
            Repr::Text(t) => match t.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(serde::de::Error::custom(format!("not a number: {other}"))),
            },
        }
    }
}

/// What comparing one output found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputReport {
    pub name: String,
    pub elements: u64,
    pub mismatches: u64,
    /// Wrong elements (never-written ones aside) where the kernel's value is above the expected one.
    #[serde(default)]
    pub mismatches_above: u64,
    /// Elements still holding the poison after the run: the kernel never wrote them.
    pub never_written: u64,
    #[serde(with = "lossless_f64")]
    pub max_abs_error: f64,
    #[serde(with = "lossless_f64")]
    pub max_rel_error: f64,
    /// First mismatching element index, with the values there.
    pub first_mismatch: Option<Mismatch>,
    /// Mismatches tolerated by `max_mismatch_fraction` (never-written elements are never tolerated).
    #[serde(default)]
    pub allowed_mismatches: u64,
    /// The raised absolute tolerance of an output whose elements are long sums, when it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_floor: Option<crate::check::sum_floor::SumFloor>,
    /// The totals, for an output compared by its total instead of element by element (`total.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<Totals>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: u64,
    #[serde(with = "lossless_f64")]
    pub expected: f64,
    #[serde(with = "lossless_f64")]
    pub got: f64,
    pub never_written: bool,
}

impl OutputReport {
    pub fn passed(&self) -> bool {
        self.mismatches <= self.allowed_mismatches
            && self.never_written == 0
            && self.one_sided_beyond_chance().is_none()
    }

    /// One line a user can act on: "output C: 12 of 4096 elements wrong (3 never written); first at index
    /// 4097: expected 1.25, got NaN (never written); max abs error 0.5, max rel error 0.4".
    pub fn describe(&self) -> String {
        let floor = self
            .sum_floor
            .map(|f| format!("; {}", f.describe()))
            .unwrap_or_default();
        if let Some(t) = &self.totals {
            return describe_totals(self, t, &floor);
        }
        if self.mismatches == 0 {
            return format!(
                "output {}: all {} elements match (max abs error {:.3e}, max rel error {:.3e}{floor})",
                self.name, self.elements, self.max_abs_error, self.max_rel_error
            );
        }
        let mut s = format!(
            "output {}: {} of {} elements wrong",
            self.name, self.mismatches, self.elements
        );
        if self.never_written > 0 {
            s.push_str(&format!(" ({} never written)", self.never_written));
        }
        if self.mismatches <= self.allowed_mismatches && self.never_written == 0 {
            match self.one_sided_beyond_chance() {
                Some(side) => s.push_str(&format!(
                    " (within the allowance of {}, but {side}: a systematic error, not scattered \
                     rounding differences)",
                    self.allowed_mismatches
                )),
                None => s.push_str(&format!(
                    " (within the allowance of {})",
                    self.allowed_mismatches
                )),
            }
        }
        if let Some(m) = &self.first_mismatch {
            s.push_str(&format!(
                "; first at index {}: expected {}, got {}",
                m.index,
                m.expected,
                if m.never_written {
                    "poison (never written)".to_string()
                } else {
                    m.got.to_string()
                }
            ));
        }
        s.push_str(&format!(
            "; max abs error {:.3e}, max rel error {:.3e}{floor}",
            self.max_abs_error, self.max_rel_error
        ));
        s
    }
}

/// The totals an output was compared by, in its [`OutputReport`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    #[serde(with = "lossless_f64")]
    pub expected: f64,
    #[serde(with = "lossless_f64")]
    pub got: f64,
    /// The largest |got − expected| that passes: atol + rtol · Σ|expected| (0 for integers).
    #[serde(with = "lossless_f64")]
    pub allowed: f64,
}

/// [`OutputReport::describe`] for an output compared by its total: "output cross_term (compared by its
/// total): total 1234.5 expected, 1234.5000001 got (abs error 1.000e-7, allowed 1.235e-5)". `floor` is the
/// sum floor's note ("; tolerance raised …") or empty.
fn describe_totals(r: &OutputReport, t: &Totals, floor: &str) -> String {
    let head = format!("output {} (compared by its total)", r.name);
    if r.never_written > 0 {
        return format!(
            "{head}: nothing written, all {} elements still poison; total {} expected",
            r.elements, t.expected
        );
    }
    let got = if t.got.is_nan() {
        "NaN (an element is NaN)".to_string()
    } else {
        t.got.to_string()
    };
    let verdict = if r.passed() { "within" } else { "allowed" };
    format!(
        "{head}: total {} expected, {got} got (abs error {:.3e}, {verdict} {:.3e}{floor})",
        t.expected, r.max_abs_error, t.allowed
    )
}
