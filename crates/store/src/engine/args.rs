//! What a statement binds and which column it reads, the same on both
//! engines and on the SQLite writer's raw statements: the types every other
//! engine module shares, so none of them needs the query layer.

use std::borrow::Cow;

use paperclip_core::agent::{AgentRole, AgentStatus};
use paperclip_core::company::CompanyStatus;
use paperclip_core::company_secret::{SecretProvider, SecretStatus};
use paperclip_core::goal::{GoalLevel, GoalStatus};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::project::ProjectStatus;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::ColumnIndex;

/// A bound value. Text borrows where the caller's value outlives the query.
#[derive(Debug, Clone)]
pub enum Arg<'q> {
    Text(Option<Cow<'q, str>>),
    Int(Option<i64>),
    Bool(bool),
    Real(Option<f64>),
}

macro_rules! arg_from {
    ($($t:ty => |$v:ident| $e:expr;)*) => {
        $(impl<'q> From<$t> for Arg<'q> {
            fn from($v: $t) -> Arg<'q> {
                $e
            }
        })*
    };
}

arg_from! {
    &'q str => |v| Arg::Text(Some(Cow::Borrowed(v)));
    &'q String => |v| Arg::Text(Some(Cow::Borrowed(v.as_str())));
    String => |v| Arg::Text(Some(Cow::Owned(v)));
    Cow<'q, str> => |v| Arg::Text(Some(v));
    Option<&'q str> => |v| Arg::Text(v.map(Cow::Borrowed));
    Option<String> => |v| Arg::Text(v.map(Cow::Owned));
    &'q Option<String> => |v| Arg::Text(v.as_deref().map(Cow::Borrowed));
    Option<&'q String> => |v| Arg::Text(v.map(|s| Cow::Borrowed(s.as_str())));
    i64 => |v| Arg::Int(Some(v));
    &'q i64 => |v| Arg::Int(Some(*v));
    i32 => |v| Arg::Int(Some(i64::from(v)));
    Option<i64> => |v| Arg::Int(v);
    bool => |v| Arg::Bool(v);
    f64 => |v| Arg::Real(Some(v));
    Option<f64> => |v| Arg::Real(v);
}

/// Statuses, roles and levels are stored as their API text.
macro_rules! arg_from_stored {
    ($($t:ty),*) => {
        $(impl<'q> From<$t> for Arg<'q> {
            fn from(v: $t) -> Arg<'q> {
                Arg::Text(Some(Cow::Borrowed(v.as_str())))
            }
        }
        impl<'q> From<&$t> for Arg<'q> {
            fn from(v: &$t) -> Arg<'q> {
                Arg::Text(Some(Cow::Borrowed(v.as_str())))
            }
        })*
    };
}

arg_from_stored!(
    IssueStatus,
    IssuePriority,
    AgentStatus,
    AgentRole,
    CompanyStatus,
    ProjectStatus,
    GoalLevel,
    GoalStatus,
    RunStatus,
    SecretStatus,
    SecretProvider
);

/// A column position or name, valid on both engines' rows and on a raw
/// SQLite statement (see [`crate::engine::raw`]).
pub trait ColIdx: ColumnIndex<SqliteRow> + ColumnIndex<PgRow> + Copy + std::fmt::Debug {
    /// The position, finding a name with `find`.
    fn position(self, find: impl Fn(&str) -> Option<usize>) -> sqlx::Result<usize>;
}

impl ColIdx for usize {
    fn position(self, _: impl Fn(&str) -> Option<usize>) -> sqlx::Result<usize> {
        Ok(self)
    }
}

impl ColIdx for &str {
    fn position(self, find: impl Fn(&str) -> Option<usize>) -> sqlx::Result<usize> {
        find(self).ok_or_else(|| sqlx::Error::ColumnNotFound(self.to_string()))
    }
}
