use serde_json::Value;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in the terms the API reports it. The server maps each
/// variant to one status code; the store never speaks HTTP itself.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404: the entity does not exist, or not in the caller's company.
    #[error("{0}")]
    NotFound(String),
    /// 403: the caller may see the entity but not do this to it.
    #[error("{0}")]
    Forbidden(String),
    /// 409: the entity is in a state that conflicts with the request.
    #[error("{message}")]
    Conflict {
        message: String,
        details: Option<Value>,
    },
    /// 422: the request is well-formed but breaks a rule.
    #[error("{0}")]
    Rule(String),
    /// 400: a field has a value the store cannot accept.
    #[error("{message}")]
    Invalid { message: String, path: Vec<String> },
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

impl Error {
    pub fn not_found(what: &str) -> Error {
        Error::NotFound(format!("{what} not found"))
    }

    pub fn conflict(message: impl Into<String>, details: Option<Value>) -> Error {
        Error::Conflict {
            message: message.into(),
            details,
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Error {
        Error::Forbidden(message.into())
    }

    pub fn rule(message: impl Into<String>) -> Error {
        Error::Rule(message.into())
    }

    pub fn too_big(violation: paperclip_core::limits::Violation) -> Error {
        let path = violation.path.iter().map(|p| match p {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        Error::Invalid {
            message: violation.message,
            path: path.collect(),
        }
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Error {
        Error::Invalid {
            message: message.into(),
            path: vec![field.to_string()],
        }
    }

    /// Whether a database error is a unique-constraint violation, which the
    /// callers turn into a retry (prefixes, url keys) or a 409.
    pub fn is_unique_violation(&self) -> bool {
        match self {
            Error::Database(sqlx::Error::Database(db)) => {
                db.is_unique_violation()
                    || db.message().contains("UNIQUE constraint failed")
                    || db.code().as_deref() == Some("23505")
            }
            _ => false,
        }
    }
}

impl From<paperclip_core::limits::Violation> for Error {
    fn from(violation: paperclip_core::limits::Violation) -> Error {
        Error::too_big(violation)
    }
}
