// `crate::Area` is area.rs's type, re-exported by lib.rs: the circle is area.rs <-> square.rs.
pub struct Square {
    pub side: f64,
}

impl Square {
    pub fn area(&self) -> crate::Area {
        crate::area::of(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::unit;
}
