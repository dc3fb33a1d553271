// A string that names "crate::area::of" and a comment that says crate::area::of are not uses.
pub struct Square {
    pub side: f64,
}

impl Square {
    pub fn side_squared(&self) -> f64 {
        let _why = "crate::area::of";
        self.side * self.side
    }
}

#[cfg(test)]
mod tests {
    use crate::area::of;
}
