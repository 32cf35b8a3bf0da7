//! Who is looking at the board. The server sets it around each page request
//! (a task-local, so no page's signature changes): the local board sees every
//! company; a signed-in person sees the companies they belong to, with their
//! role, and pages carry their session's CSRF token for the scripts' writes.

use paperclip_core::team::Role;

#[derive(Clone, Debug, Default)]
pub struct Viewer {
    /// `None`: every company (the local board). Otherwise company ids and
    /// the person's role in each.
    pub companies: Option<Vec<(String, Role)>>,
    pub name: Option<String>,
    pub csrf: Option<String>,
    /// The signed-in person's id; `None` for the local board.
    pub user_id: Option<String>,
    /// Whether the person administers the instance (founds companies).
    pub instance_admin: bool,
}

tokio::task_local! {
    static VIEWER: Viewer;
}

impl Viewer {
    pub fn allows(&self, company_id: &str) -> bool {
        match &self.companies {
            None => true,
            Some(list) => list.iter().any(|(id, _)| id == company_id),
        }
    }

    /// Whose inbox and dismissals the pages show.
    pub fn user_id(&self) -> &str {
        self.user_id
            .as_deref()
            .unwrap_or(paperclip_core::actor::LOCAL_BOARD_USER_ID)
    }

    pub fn role_in(&self, company_id: &str) -> Option<Role> {
        self.companies
            .as_ref()?
            .iter()
            .find(|(id, _)| id == company_id)
            .map(|(_, r)| *r)
    }
}

/// Runs `fut` (a page request) as seen by `viewer`.
pub async fn scope<F: std::future::Future>(viewer: Viewer, fut: F) -> F::Output {
    VIEWER.scope(viewer, fut).await
}

pub(crate) fn current() -> Viewer {
    VIEWER.try_with(Clone::clone).unwrap_or_default()
}
