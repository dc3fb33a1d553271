//! A crate whose files go round a circle: area.rs uses shapes/square.rs, which uses area.rs.
pub mod area;
pub mod shapes;
pub use area::Area;
