//! Per-run credentials: an HS256 JWT bound to agent, company and run, given to
//! the agent as `PAPERCLIP_API_KEY`. The server refuses it as soon as its run
//! is no longer running; the expiry is only a backstop for that check, so it
//! must never fall inside a run that is still going.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use paperclip_adapters::RunLimits;
use serde::{Deserialize, Serialize};

/// Marks tokens of this kind, so other JWTs signed with the key are not mistaken for them.
const KIND: &str = "paperclip.run";

/// The expiry of a run whose adapter sets no timeout (a CLI may work for hours).
pub const CEILING_SECS: i64 = 7 * 24 * 3600;

/// Seconds a run token lives for a run with these limits.
pub fn ttl_secs(limits: &RunLimits) -> i64 {
    let Some(timeout) = limits.timeout else {
        return CEILING_SECS;
    };
    // A refused resume is retried once fresh within the same run, so a run
    // can take two invocations; the margin covers draining and recording.
    let one = (timeout + limits.grace).as_secs_f64().ceil() as i64;
    // An async run's token must outlive the wait for its callback, which
    // authenticates with it.
    let callback = limits.callback.map_or(0, |c| c.as_secs_f64().ceil() as i64);
    (2 * one + callback + 300).min(CEILING_SECS)
}

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

    #[test]
    fn ttl_outlives_the_adapter_timeout_or_takes_the_ceiling() {
        use std::time::Duration;
        let none = RunLimits::default();
        assert_eq!(ttl_secs(&none), CEILING_SECS);
        let long = RunLimits {
            timeout: Some(Duration::from_secs_f64(1800.5)),
            grace: Duration::from_secs(20),
            callback: None,
        };
        assert!(ttl_secs(&long) as f64 >= 1800.5 + 20.0);
        let huge = RunLimits {
            timeout: Some(Duration::from_secs(30 * 24 * 3600)),
            grace: Duration::ZERO,
            callback: None,
        };
        assert_eq!(ttl_secs(&huge), CEILING_SECS);
    }
}
