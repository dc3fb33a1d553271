use crate::shapes::Square;

pub struct Area(pub f64);

pub fn of(s: &Square) -> Area {
    Area(s.side * s.side)
}
