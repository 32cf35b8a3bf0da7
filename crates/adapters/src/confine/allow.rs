//! `networkAllowlist` entries: exact host names (or IP literals), each
//! optionally with a port. No wildcards and no schemes, as the agent-runs
//! spec says: an entry the board cannot read at a glance is an entry that
//! lets more through than they meant.

use serde::{Deserialize, Serialize};

/// One allowed destination. `port: None` allows every port of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Lower case, without a trailing dot; an IPv6 literal without brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl Entry {
    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`; `Err` says why not.
    pub fn parse(text: &str) -> Result<Entry, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("must not be empty".into());
        }
        if text.contains('*') {
            return Err("wildcards are not supported: list each host name exactly".into());
        }
        if text.contains("://") || text.contains('/') {
            return Err("must be a host name with an optional port (e.g. api.anthropic.com or api.example.com:8443), not a URL".into());
        }
        let (host, port) = split_host_port(text)?;
        let host = normalize(host);
        if !valid_host(&host) {
            return Err(format!("{host:?} is not a valid host name or IP address"));
        }
        Ok(Entry { host, port })
    }

    /// Whether a request to `host:port` may pass.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.host == normalize(host) && self.port.is_none_or(|p| p == port)
    }

    /// A loopback destination: reachable inside the sandbox at the same
    /// address (mirrored), since the sandbox has a loopback of its own.
    pub fn is_loopback(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "::1") || self.host.starts_with("127.")
    }

    /// `host:port` (or `host`) as people write it.
    pub fn display(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }
    }
}

/// Whether any entry allows `host:port`.
pub fn allowed(entries: &[Entry], host: &str, port: u16) -> bool {
    entries.iter().any(|e| e.allows(host, port))
}

/// The host and port of a URL (`http://h:p/...`, `https://h/...`), with the
/// scheme's default port; `None` for anything else.
pub fn url_entry(url: &str) -> Option<Entry> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_host_port(authority).ok()?;
    let host = normalize(host);
    valid_host(&host).then(|| Entry {
        host,
        port: Some(port.unwrap_or(default)),
    })
}

/// Splits `host[:port]` / `[v6][:port]`. A bare IPv6 literal (several
/// colons, no brackets) is a host without a port.
pub fn split_host_port(text: &str) -> Result<(&str, Option<u16>), String> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "an IPv6 address needs its closing ]".to_string())?;
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(parse_port(port)?))),
                None => Err("unexpected text after the IPv6 address".into()),
            },
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, port) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, Some(parse_port(port)?)))
        }
        _ => Ok((text, None)),
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(port),
        _ => Err(format!("{text:?} is not a port (1-65535)")),
    }
}

fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn valid_host(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    if host.contains(':') {
        return host.parse::<std::net::Ipv6Addr>().is_ok();
    }
    host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Entry {
        Entry::parse(text).unwrap()
    }

    #[test]
    fn exact_host_without_port_allows_every_port_of_that_host_only() {
        let e = entry("API.Anthropic.com.");
        assert_eq!(e.host, "api.anthropic.com");
        assert!(e.allows("api.anthropic.com", 443));
        assert!(e.allows("API.ANTHROPIC.COM", 8443));
        assert!(!e.allows("anthropic.com", 443));
        assert!(!e.allows("evil-api.anthropic.com", 443));
        assert!(!e.allows("api.anthropic.com.evil.example", 443));
    }

    #[test]
    fn a_port_narrows_the_entry_to_that_port() {
        let e = entry("127.0.0.1:4100");
        assert!(e.allows("127.0.0.1", 4100));
        assert!(!e.allows("127.0.0.1", 4101));
        assert!(!e.allows("localhost", 4100));
        assert!(e.is_loopback());
        let v6 = entry("[::1]:80");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(80)));
        assert!(v6.allows("::1", 80) && v6.is_loopback());
        assert_eq!(v6.display(), "[::1]:80");
    }

    #[test]
    fn wildcards_urls_and_junk_are_refused_with_a_reason() {
        for bad in [
            "*.anthropic.com",
            "*",
            "https://api.openai.com",
            "api.openai.com/v1",
            "",
            "host:0",
            "host:99999",
            "host:abc",
            "bad host",
            "-bad.example",
            "[::1",
        ] {
            assert!(Entry::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(Entry::parse("*.x.com").unwrap_err().contains("wildcards"));
        assert!(Entry::parse("https://x.com")
            .unwrap_err()
            .contains("not a URL"));
    }

    #[test]
    fn urls_give_their_host_and_effective_port() {
        assert_eq!(
            url_entry("http://127.0.0.1:3100"),
            Some(entry("127.0.0.1:3100"))
        );
        assert_eq!(
            url_entry("https://api.openai.com/v1"),
            Some(entry("api.openai.com:443"))
        );
        assert_eq!(
            url_entry("http://user:pw@git.example/x.git"),
            Some(entry("git.example:80"))
        );
        assert_eq!(url_entry("git@github.com:a/b.git"), None);
        assert!(allowed(
            &[entry("a.example"), entry("b.example:1")],
            "b.example",
            1
        ));
        assert!(!allowed(
            &[entry("a.example"), entry("b.example:1")],
            "b.example",
            2
        ));
    }
}
