//! Naming rules: issue prefixes and url keys.

/// The prefix a company's issue identifiers start with: the first three
/// letters of its name, upper-cased ("Acme Notes" -> "ACM"). Digits are kept
/// when the name has them; a name with nothing usable gets "CMP".
pub fn base_issue_prefix(name: &str) -> String {
    let prefix: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(3)
        .collect::<String>()
        .to_ascii_uppercase();
    if prefix.is_empty() {
        "CMP".to_string()
    } else {
        prefix
    }
}

/// The `n`-th candidate for a prefix that must be unique per instance: the
/// base first, then the base with a letter suffix (SCE, SCEA, SCEB, ... SCEZ,
/// SCEAA, ...), as upstream does for a second "Scenario Labs".
pub fn issue_prefix_candidate(base: &str, n: usize) -> String {
    if n == 0 {
        return base.to_string();
    }
    let mut suffix = Vec::new();
    let mut k = n;
    while k > 0 {
        k -= 1;
        suffix.push(b'A' + (k % 26) as u8);
        k /= 26;
    }
    suffix.reverse();
    format!("{base}{}", String::from_utf8(suffix).expect("ascii"))
}

/// A url-safe key from a display name: lower-case ASCII letters and digits,
/// other runs collapsed to one dash ("Chief of Staff" -> "chief-of-staff").
pub fn url_key(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !key.is_empty() {
                key.push('-');
            }
            dash = false;
            key.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    if key.is_empty() {
        "agent".to_string()
    } else {
        key
    }
}

/// The `n`-th candidate for a url key unique within a company: `ceo`, `ceo-2`, ...
pub fn url_key_candidate(base: &str, n: usize) -> String {
    if n == 0 {
        base.to_string()
    } else {
        format!("{base}-{}", n + 1)
    }
}

/// `@cto`, `@chief-of-staff`: lower-cased words after an `@` that starts a word.
pub fn mentioned_tokens(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = body.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '@');
        if *c == '@' && starts_word {
            let token: String = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '-' || **c == '_')
                .collect();
            let token = token.trim_end_matches(['-', '_']).to_lowercase();
            if !token.is_empty() && !out.contains(&token) {
                out.push(token);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_follow_upstream() {
        assert_eq!(base_issue_prefix("Acme Notes"), "ACM");
        assert_eq!(base_issue_prefix("Scenario Labs"), "SCE");
        assert_eq!(base_issue_prefix("x"), "X");
        assert_eq!(base_issue_prefix("  !! "), "CMP");
        assert_eq!(issue_prefix_candidate("SCE", 0), "SCE");
        assert_eq!(issue_prefix_candidate("SCE", 1), "SCEA");
        assert_eq!(issue_prefix_candidate("SCE", 26), "SCEZ");
        assert_eq!(issue_prefix_candidate("SCE", 27), "SCEAA");
    }

    #[test]
    fn url_keys_are_slugs() {
        assert_eq!(url_key("CEO"), "ceo");
        assert_eq!(url_key("Chief of  Staff!"), "chief-of-staff");
        assert_eq!(url_key("--"), "agent");
        assert_eq!(url_key_candidate("ceo", 1), "ceo-2");
    }

    #[test]
    fn mentions_are_words_after_at() {
        assert_eq!(
            super::mentioned_tokens("@CTO please ask @chief-of-staff."),
            ["cto", "chief-of-staff"]
        );
        assert!(super::mentioned_tokens("mail me at a@b.com").is_empty());
        assert_eq!(super::mentioned_tokens("(@qa) and @qa"), ["qa"]);
    }
}
