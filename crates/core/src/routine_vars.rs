//! A routine variable's value checked against its declared type, as upstream
//! checks it: a number, boolean, date or option that does not read as one
//! is refused (422) instead of being pasted into a task's title as given.
//! Values arrive as JSON from three places (the run request, a webhook's
//! payload, the declared default), so each type accepts the spellings those
//! senders use: `"3"` and `3`, `"yes"` and `true`.

use serde_json::Value;

use crate::routine::{RoutineVariable, VariableType};

/// The words a boolean variable accepts, trimmed and lower-cased.
const TRUE_WORDS: [&str; 5] = ["true", "1", "yes", "y", "on"];
const FALSE_WORDS: [&str; 5] = ["false", "0", "no", "n", "off"];

impl RoutineVariable {
    /// The value as it goes into the title and description, `None` when it
    /// is absent (null, or blank text), or why it does not fit the type.
    pub fn normalize(&self, raw: &Value) -> Result<Option<String>, String> {
        if raw.is_null() {
            return Ok(None);
        }
        let name = &self.name;
        let text = match raw {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let out = match self.kind {
            VariableType::Boolean => match raw {
                Value::Bool(b) => b.to_string(),
                Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                    (n.as_u64() == Some(1)).to_string()
                }
                Value::String(s) => {
                    let word = s.trim().to_ascii_lowercase();
                    if TRUE_WORDS.contains(&word.as_str()) {
                        "true".into()
                    } else if FALSE_WORDS.contains(&word.as_str()) {
                        "false".into()
                    } else {
                        return Err(format!("Variable \"{name}\" must be a boolean"));
                    }
                }
                _ => return Err(format!("Variable \"{name}\" must be a boolean")),
            },
            VariableType::Number => {
                let number = match raw {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) if !s.trim().is_empty() => s.trim().parse::<f64>().ok(),
                    _ => None,
                };
                match number.filter(|n| n.is_finite()) {
                    Some(n) => render_number(raw, n),
                    None => return Err(format!("Variable \"{name}\" must be a number")),
                }
            }
            VariableType::Date => {
                let Value::String(s) = raw else {
                    return Err(format!("Variable \"{name}\" must be a YYYY-MM-DD date"));
                };
                let day = s.trim();
                if !is_calendar_day(day) {
                    return Err(format!(
                        "Variable \"{name}\" must be a valid YYYY-MM-DD date"
                    ));
                }
                day.to_string()
            }
            VariableType::Select => {
                if !self.options.contains(&text) {
                    return Err(format!(
                        "Variable \"{name}\" must match one of: {}",
                        self.options.join(", ")
                    ));
                }
                text
            }
            VariableType::Text | VariableType::Textarea => text,
        };
        Ok((!out.trim().is_empty()).then_some(out))
    }

    /// A declaration that cannot work: a select with no options, or a
    /// default its own type refuses.
    pub fn check_definition(&self) -> Result<(), String> {
        if self.kind == VariableType::Select && self.options.is_empty() {
            return Err(format!(
                "Variable \"{}\" must define at least one option",
                self.name
            ));
        }
        if let Some(default) = &self.default_value {
            self.normalize(default)?;
        }
        Ok(())
    }
}

/// A whole number as digits (`3`, not `3.0`); anything else as given when
/// it came as JSON, else Rust's shortest form.
fn render_number(raw: &Value, n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return format!("{}", n as i64);
    }
    match raw {
        Value::Number(given) => given.to_string(),
        _ => n.to_string(),
    }
}

/// `YYYY-MM-DD` naming a real day (no 2026-02-30).
fn is_calendar_day(s: &str) -> bool {
    s.len() == 10
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[7] == b'-'
        && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn var(kind: VariableType, options: &[&str]) -> RoutineVariable {
        RoutineVariable {
            name: "v".into(),
            label: None,
            kind,
            default_value: None,
            required: true,
            options: options.iter().map(|o| o.to_string()).collect(),
        }
    }

    #[test]
    fn each_type_reads_its_spellings_and_refuses_the_rest() {
        let b = var(VariableType::Boolean, &[]);
        for (raw, want) in [
            (json!(true), "true"),
            (json!(0), "false"),
            (json!(" Yes "), "true"),
            (json!("off"), "false"),
        ] {
            assert_eq!(b.normalize(&raw).unwrap().as_deref(), Some(want), "{raw}");
        }
        for raw in [json!(2), json!("maybe"), json!([true])] {
            assert!(b.normalize(&raw).unwrap_err().contains("boolean"), "{raw}");
        }

        let n = var(VariableType::Number, &[]);
        for (raw, want) in [
            (json!(3), "3"),
            (json!("3"), "3"),
            (json!(" 2.5 "), "2.5"),
            (json!(1e3), "1000"),
            (json!(-7), "-7"),
        ] {
            assert_eq!(n.normalize(&raw).unwrap().as_deref(), Some(want), "{raw}");
        }
        for raw in [
            json!("three"),
            json!(""),
            json!("inf"),
            json!("NaN"),
            json!(true),
        ] {
            assert!(n.normalize(&raw).unwrap_err().contains("number"), "{raw}");
        }

        let d = var(VariableType::Date, &[]);
        assert_eq!(
            d.normalize(&json!("2026-12-05")).unwrap().as_deref(),
            Some("2026-12-05")
        );
        for raw in [
            json!("2026-02-30"),
            json!("2026-1-5"),
            json!(20261205),
            json!("tomorrow"),
        ] {
            assert!(
                d.normalize(&raw).unwrap_err().contains("YYYY-MM-DD"),
                "{raw}"
            );
        }

        let s = var(VariableType::Select, &["eu", "us"]);
        assert_eq!(s.normalize(&json!("eu")).unwrap().as_deref(), Some("eu"));
        assert!(s.normalize(&json!("asia")).unwrap_err().contains("eu, us"));

        let t = var(VariableType::Text, &[]);
        assert_eq!(t.normalize(&json!(42)).unwrap().as_deref(), Some("42"));
    }

    #[test]
    fn null_and_blank_are_absent_not_errors() {
        for kind in [
            VariableType::Text,
            VariableType::Number,
            VariableType::Select,
        ] {
            let v = var(kind, &["a"]);
            assert_eq!(v.normalize(&Value::Null).unwrap(), None);
        }
        assert_eq!(
            var(VariableType::Text, &[])
                .normalize(&json!("  "))
                .unwrap(),
            None
        );
        // A select's blank is no option, as upstream has it.
        assert!(var(VariableType::Select, &["a"])
            .normalize(&json!(""))
            .is_err());
    }

    #[test]
    fn a_definition_needs_options_and_a_default_of_its_type() {
        assert!(var(VariableType::Select, &[])
            .check_definition()
            .unwrap_err()
            .contains("at least one option"));
        let mut n = var(VariableType::Number, &[]);
        n.default_value = Some(json!("ten"));
        assert!(n.check_definition().is_err());
        n.default_value = Some(json!("10"));
        assert!(n.check_definition().is_ok());
    }
}
