//! Company packages in and out: the plan of an import (its dry run) and the
//! import itself, in one transaction. Export reads through the tables'
//! public reads; the package format is `paperclip_core::package`.

mod apply;
mod apply_work;
mod plan;
mod read;

pub use apply::{apply, Done, Imported};
pub use plan::{plan, Collision, ItemPlan, Options, Plan, Target};
pub use read::{snapshot, Snapshot, MAX_TASKS};
