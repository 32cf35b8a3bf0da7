//! A project's codebase declared by URL: checked, then cloned into the data
//! dir, where its tasks' worktrees are made from. Only the transports a
//! board would give are accepted (`ext::` would run a command), and the
//! URL kept for people to read has its credentials cut out.

use std::path::Path;

use axum::http::StatusCode;

use crate::error::{ApiError, ApiResult};

const SCHEMES: [&str; 5] = ["https://", "http://", "ssh://", "git://", "file://"];

/// Clones `url` to `dest`; the clone's path, or a 422 saying why not.
pub(crate) async fn clone(url: &str, dest: &Path) -> ApiResult<String> {
    check(url)?;
    match paperclip_runtime::workspace::clone_repository(url, dest).await {
        Ok(path) => Ok(path.display().to_string()),
        Err(e) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "repoUrl {} could not be cloned: {}",
                without_credentials(url),
                redact(&e.to_string(), url)
            ),
        )),
    }
}

fn check(url: &str) -> ApiResult<()> {
    let scp_like = !url.contains("://")
        && !url.starts_with('-')
        && url
            .split_once(':')
            .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/') && host != "ext");
    if SCHEMES.iter().any(|s| url.starts_with(s)) || scp_like {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!(
            "repoUrl must be an https://, http://, ssh://, git:// or file:// URL \
             (or user@host:path), not {:?}",
            without_credentials(url)
        ),
    ))
}

/// `https://user:token@host/x.git` as `https://host/x.git`.
pub(crate) fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if path.is_empty() && !rest.contains('/') {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    }
}

/// git's message with the URL as given replaced by the one without
/// credentials.
fn redact(message: &str, url: &str) -> String {
    message.replace(url, &without_credentials(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_cut_and_odd_transports_refused() {
        assert_eq!(
            without_credentials("https://me:secret@example.com/a/b.git"),
            "https://example.com/a/b.git"
        );
        assert_eq!(
            without_credentials("file:///srv/x.git"),
            "file:///srv/x.git"
        );
        assert_eq!(
            without_credentials("git@github.com:a/b.git"),
            "git@github.com:a/b.git"
        );
        assert!(check("https://example.com/x.git").is_ok());
        assert!(check("git@github.com:a/b.git").is_ok());
        assert!(check("ext::sh -c touch% /tmp/pwned").is_err());
        assert!(check("--upload-pack=evil").is_err());
        assert!(check("/local/path").is_err());
    }
}
