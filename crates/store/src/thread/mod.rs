//! What is said on a task: comments, documents, attachments, work products,
//! mentions and the interaction cards agents put to the board.

pub mod attachments;
pub mod comments;
pub mod documents;
pub mod interactions;
pub mod mentions;
pub mod provenance;
pub mod uploads;
pub mod work_products;
