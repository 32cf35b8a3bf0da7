//! Failure classes the UI can act on, read from what a CLI said when it
//! failed. The texts differ per CLI and version, so the rules are phrase
//! lists, checked most specific first; anything unmatched stays a plain
//! nonzero exit with the CLI's own last line.

use crate::ErrorCode;

const RULES: &[(ErrorCode, &[&str])] = &[
    // First: a refusal that names a model and tools is about the model's
    // kind, not its name or the request's size.
    (
        ErrorCode::ModelToolUseUnsupported,
        &[
            "does not support tools",
            "does not support tool use",
            "no endpoints found that support tool use",
        ],
    ),
    (
        ErrorCode::ContextWindowExceeded,
        &[
            "context window",
            "context length",
            "context_length_exceeded",
            "prompt is too long",
            "maximum context",
            "too many tokens",
            "exceeds the maximum number of tokens",
        ],
    ),
    (
        ErrorCode::RateLimited,
        &[
            "rate limit",
            "rate_limit",
            "usage limit",
            "too many requests",
            "status 429",
            "status: 429",
            "quota",
            "overloaded",
        ],
    ),
    (
        ErrorCode::AuthRequired,
        &[
            "api key",
            "api_key",
            "x-api-key",
            "authentication",
            "unauthorized",
            "status 401",
            "status: 401",
            "not logged in",
            "please run /login",
            "login required",
            "invalid bearer",
            "auth method",
            // gemini's last line after "you must specify the GEMINI_API_KEY ..."
            "update your environment and try again",
        ],
    ),
    (
        ErrorCode::ModelUnavailable,
        &[
            "model_not_found",
            "model not found",
            "unknown model",
            "invalid model",
            "model is not available",
            "model is not supported",
            "does not exist or you do not have access",
            "not_found_error",
            "issue with the selected model",
            "try pulling it first",
            "unknown provider",
            "is not found for api version",
        ],
    ),
];

/// The class of a failure message, if it names one.
pub fn classify(message: &str) -> Option<ErrorCode> {
    let text = message.to_ascii_lowercase();
    RULES
        .iter()
        .find(|(_, phrases)| phrases.iter().any(|p| text.contains(p)))
        .map(|(code, _)| *code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_failures_are_classified() {
        let cases = [
            ("API Error: 404 {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: claude-nope\"}}", ErrorCode::ModelUnavailable),
            ("There's an issue with the selected model (claude-x). It may not exist", ErrorCode::ModelUnavailable),
            ("unexpected status 404 Not Found: {\"error\":{\"code\":\"model_not_found\"}}", ErrorCode::ModelUnavailable),
            ("Invalid API key · Please run /login", ErrorCode::AuthRequired),
            ("401 Unauthorized", ErrorCode::AuthRequired),
            ("exceeded retry limit, last status: 429 Too Many Requests", ErrorCode::RateLimited),
            ("Claude AI usage limit reached|1760000000", ErrorCode::RateLimited),
            ("prompt is too long: 210000 tokens > 200000 maximum", ErrorCode::ContextWindowExceeded),
            ("Your input exceeds the context window of this model", ErrorCode::ContextWindowExceeded),
        ];
        for (text, code) in cases {
            assert_eq!(classify(text), Some(code), "{text}");
        }
    }

    #[test]
    fn other_failures_are_not() {
        assert_eq!(classify("error: could not write file"), None);
        assert_eq!(classify(""), None);
    }
}
