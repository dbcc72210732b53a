pub mod escape;
pub mod markdown;
pub mod units;
