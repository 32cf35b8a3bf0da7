//! Who is acting: the board (a user), an agent, or the system itself.

/// The user id the implicit board acts as in local trusted mode.
pub const LOCAL_BOARD_USER_ID: &str = "local-board";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorKind {
    User,
    Agent,
    System,
}

impl ActorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::User => "user",
            ActorKind::Agent => "agent",
            ActorKind::System => "system",
        }
    }
}

/// The authenticated caller of a mutation. Every activity row and every
/// authored entity (comment, document revision, issue) is stamped from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: String,
    /// The heartbeat run the request belongs to (`X-Paperclip-Run-Id`).
    pub run_id: Option<String>,
    /// The only company an agent may touch; `None` for the board and the system.
    pub company_id: Option<String>,
}

impl Actor {
    pub fn local_board() -> Actor {
        Actor {
            kind: ActorKind::User,
            id: LOCAL_BOARD_USER_ID.to_string(),
            run_id: None,
            company_id: None,
        }
    }

    pub fn agent(agent_id: &str, company_id: &str, run_id: Option<String>) -> Actor {
        Actor {
            kind: ActorKind::Agent,
            id: agent_id.to_string(),
            run_id,
            company_id: Some(company_id.to_string()),
        }
    }

    /// Paperclip itself (recovery, the scheduler): acts on any company.
    pub fn system() -> Actor {
        Actor {
            kind: ActorKind::System,
            id: "paperclip".to_string(),
            run_id: None,
            company_id: None,
        }
    }

    pub fn can_access_company(&self, company_id: &str) -> bool {
        match &self.company_id {
            Some(own) => own == company_id,
            None => true,
        }
    }

    pub fn is_board(&self) -> bool {
        self.kind == ActorKind::User
    }

    pub fn agent_id(&self) -> Option<&str> {
        (self.kind == ActorKind::Agent).then_some(self.id.as_str())
    }

    pub fn user_id(&self) -> Option<&str> {
        (self.kind == ActorKind::User).then_some(self.id.as_str())
    }
}

/// Who an activity entry written through `POST /api/companies/{id}/activity`
/// says acted (upstream's `actorType`; `plugin` is upstream's too).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ActivityActorType {
    Agent,
    User,
    System,
    Plugin,
}

impl ActivityActorType {
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityActorType::Agent => "agent",
            ActivityActorType::User => "user",
            ActivityActorType::System => "system",
            ActivityActorType::Plugin => "plugin",
        }
    }
}
