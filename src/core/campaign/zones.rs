//! The time zones of projects: where `${day}`, `${month}`, `${year}` and
//! `${week}` roll over. A campaign's own `timeZone` wins; else its
//! project's, as the service is configured; else UTC.

use std::collections::HashMap;

use chrono_tz::Tz;

/// The time zone of each project, with a default for the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeZones {
    /// The zone of projects not listed.
    pub default: Tz,
    /// Per-project zones.
    pub projects: HashMap<String, Tz>,
}

impl Default for TimeZones {
    fn default() -> Self {
        TimeZones {
            default: Tz::UTC,
            projects: HashMap::new(),
        }
    }
}

impl TimeZones {
    /// The zone of `project`.
    pub fn of(&self, project: &str) -> Tz {
        self.projects.get(project).copied().unwrap_or(self.default)
    }

    /// Parses `project=Zone,project=Zone` (the server's
    /// `ACCORD_PROJECT_TIME_ZONES`); whitespace around items is ignored.
    pub fn parse_projects(list: &str) -> Result<HashMap<String, Tz>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                let (project, zone) = item
                    .split_once('=')
                    .ok_or_else(|| format!("{item:?} is not project=Zone"))?;
                Ok((project.trim().to_owned(), parse_zone(zone.trim())?))
            })
            .collect()
    }
}

/// Parses an IANA time zone name (`Europe/Berlin`, `UTC`).
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("{name:?} is not an IANA time zone name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_lists() {
        let p = TimeZones::parse_projects(" shop=Europe/Berlin, demo=Asia/Bangkok ,").unwrap();
        let zones = TimeZones {
            default: Tz::UTC,
            projects: p,
        };
        assert_eq!(zones.of("shop"), Tz::Europe__Berlin);
        assert_eq!(zones.of("demo"), Tz::Asia__Bangkok);
        assert_eq!(zones.of("other"), Tz::UTC);
        assert!(TimeZones::parse_projects("shop").is_err());
        assert!(TimeZones::parse_projects("shop=Mars/Olympus").is_err());
    }
}
