//! Anthropic's list prices, for pricing Claude Code's turns while the run
//! goes: the CLI only prices the whole run in its final `result` line, which
//! a run stopped at its budget never prints.
//!
//! Figures are USD per million tokens from Anthropic's public pricing page
//! (platform.claude.com, "Model pricing"), standard tier, 5-minute cache
//! writes. Models whose rates vary by prompt length or were not confirmed
//! there are left out: their tokens are counted and their cost is unknown.

/// One model family: (id prefix, input, 5m cache write, cache read, output).
type Rate = (&'static str, f64, f64, f64, f64);

const RATES: &[Rate] = &[
    ("claude-fable-5-1", 10.0, 12.5, 0.25, 50.0),
    ("claude-fable-5", 10.0, 12.5, 1.0, 50.0),
    ("claude-opus-5", 5.0, 6.25, 0.5, 25.0),
    ("claude-opus-4-8", 5.0, 6.25, 0.5, 25.0),
    ("claude-opus-4-7", 5.0, 6.25, 0.5, 25.0),
    ("claude-opus-4-6", 5.0, 6.25, 0.5, 25.0),
    ("claude-opus-4-5", 5.0, 6.25, 0.5, 25.0),
    ("claude-opus-4-1", 15.0, 18.75, 1.5, 75.0),
    ("claude-opus-4-0", 15.0, 18.75, 1.5, 75.0),
    ("claude-opus-4", 15.0, 18.75, 1.5, 75.0),
    ("claude-sonnet-4-6", 3.0, 3.75, 0.3, 15.0),
    ("claude-sonnet-4-5", 3.0, 3.75, 0.3, 15.0),
    ("claude-sonnet-4-0", 3.0, 3.75, 0.3, 15.0),
    ("claude-sonnet-4", 3.0, 3.75, 0.3, 15.0),
    ("claude-3-7-sonnet", 3.0, 3.75, 0.3, 15.0),
    ("claude-haiku-4-5", 1.0, 1.25, 0.1, 5.0),
    ("claude-3-5-haiku", 0.8, 1.0, 0.08, 4.0),
    ("claude-3-haiku", 0.25, 0.3, 0.03, 1.25),
];

/// One request's tokens as the Messages API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MessageTokens {
    pub input: u64,
    pub cache_write: u64,
    pub cache_read: u64,
    pub output: u64,
}

/// The list price of `tokens` on `model`, or `None` for a model not in the
/// table. The longest prefix wins, and only when what follows it is a date,
/// a context-size tag or a provider suffix, so an unknown newer version
/// (`claude-opus-4-9`) is not priced as its older sibling (`claude-opus-4`).
pub fn anthropic(model: &str, tokens: MessageTokens) -> Option<f64> {
    // Cloud ids carry a vendor prefix (`us.anthropic.claude-...`).
    let id = &model[model.find("claude-")?..];
    let (_, input, write, read, output) = RATES
        .iter()
        .filter(|(prefix, ..)| id.strip_prefix(prefix).is_some_and(suffix_is_not_a_version))
        .max_by_key(|(prefix, ..)| prefix.len())?;
    let m = 1_000_000.0;
    Some(
        tokens.input as f64 * input / m
            + tokens.cache_write as f64 * write / m
            + tokens.cache_read as f64 * read / m
            + tokens.output as f64 * output / m,
    )
}

fn suffix_is_not_a_version(rest: &str) -> bool {
    if rest.is_empty() || rest.starts_with('[') || rest.starts_with('@') {
        return true;
    }
    let Some(tail) = rest.strip_prefix('-') else {
        return false;
    };
    let segment = tail.split(['-', '[', '@', ':']).next().unwrap_or("");
    segment == "latest"
        || segment == "v1"
        || segment.len() == 8 && segment.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MILLION_EACH: MessageTokens = MessageTokens {
        input: 1_000_000,
        cache_write: 1_000_000,
        cache_read: 1_000_000,
        output: 1_000_000,
    };

    #[test]
    fn each_kind_of_token_has_its_rate() {
        assert_eq!(
            anthropic("claude-sonnet-4-5", MILLION_EACH),
            Some(3.0 + 3.75 + 0.3 + 15.0)
        );
        let input_only = MessageTokens {
            input: 60_000,
            ..MessageTokens::default()
        };
        let cost = anthropic("claude-sonnet-4-5", input_only).unwrap();
        assert!((cost - 0.18).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn the_longest_prefix_wins_and_dated_or_tagged_ids_match() {
        let opus_45 = Some(5.0 + 6.25 + 0.5 + 25.0);
        let opus_4 = Some(15.0 + 18.75 + 1.5 + 75.0);
        assert_eq!(anthropic("claude-opus-4-5-20251101", MILLION_EACH), opus_45);
        assert_eq!(anthropic("claude-opus-4-20250514", MILLION_EACH), opus_4);
        assert_eq!(anthropic("claude-opus-4-1", MILLION_EACH), opus_4);
        assert_eq!(
            anthropic("claude-sonnet-4-6[1m]", MILLION_EACH),
            Some(3.0 + 3.75 + 0.3 + 15.0)
        );
        assert_eq!(
            anthropic("us.anthropic.claude-haiku-4-5-20251001-v1:0", MILLION_EACH),
            Some(1.0 + 1.25 + 0.1 + 5.0)
        );
    }

    #[test]
    fn unknown_models_and_unknown_versions_are_unpriced() {
        assert_eq!(anthropic("claude-opus-4-9", MILLION_EACH), None);
        assert_eq!(anthropic("claude-sonnet-5-5", MILLION_EACH), None);
        assert_eq!(anthropic("gpt-5", MILLION_EACH), None);
        assert_eq!(anthropic("mock-model", MILLION_EACH), None);
    }
}
