//! Per-run credentials: an HS256 JWT bound to agent, company and run, given to
//! the agent as `PAPERCLIP_API_KEY`. It expires shortly after the run's own
//! timeout, and the server also refuses it once the run is no longer running.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Marks tokens of this kind, so other JWTs signed with the key are not mistaken for them.
const KIND: &str = "paperclip.run";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunClaims {
    /// The agent id.
    pub sub: String,
    pub company_id: String,
    pub run_id: String,
    pub kind: String,
    pub iat: i64,
    pub exp: i64,
}

#[derive(Clone)]
pub struct RunTokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl RunTokens {
    pub fn new(secret: &[u8]) -> RunTokens {
        RunTokens {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
        }
    }

    pub fn mint(&self, agent_id: &str, company_id: &str, run_id: &str, ttl_secs: i64) -> String {
        let now = chrono::Utc::now().timestamp();
        let claims = RunClaims {
            sub: agent_id.to_string(),
            company_id: company_id.to_string(),
            run_id: run_id.to_string(),
            kind: KIND.to_string(),
            iat: now,
            exp: now + ttl_secs.max(60),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing cannot fail")
    }

    /// The claims of a valid, unexpired run token; `None` for anything else.
    pub fn verify(&self, token: &str) -> Option<RunClaims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        let data = decode::<RunClaims>(token, &self.decoding, &validation).ok()?;
        (data.claims.kind == KIND).then_some(data.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_tampering() {
        let tokens = RunTokens::new(b"0123456789abcdef0123456789abcdef");
        let t = tokens.mint("agent-1", "company-1", "run-1", 600);
        let claims = tokens.verify(&t).unwrap();
        assert_eq!(
            (claims.sub.as_str(), claims.run_id.as_str()),
            ("agent-1", "run-1")
        );
        let other = RunTokens::new(b"another secret of thirty-two by");
        assert!(
            other.verify(&t).is_none(),
            "a token signed with another key is refused"
        );
        let mut forged = t.clone();
        forged.pop();
        assert!(tokens.verify(&forged).is_none());
    }
}
