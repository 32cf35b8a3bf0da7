//! Decisions (upstream's): what an agent's run asks the board to choose,
//! with the effects each option has on issues, their execution and the
//! origin agent's continuation.

pub mod create;
pub mod decide;
pub mod effects;
pub mod read;

pub use create::{create, create_bundle, Origin};
pub use decide::{cancel, decide, dismiss};
pub use read::{get, list, open_for_board, outcome, stats, ListFilter};
