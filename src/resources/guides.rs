//! Working guides: short task guides for a model, with action names spelled as the active
//! surface accepts them.
//!
//! Guides are Markdown templates in `src/resources/guides/`; `{{domain.action}}` placeholders
//! are replaced by the caller's naming function (`container.get` on dynamic,
//! `arcane_container` (action `get`) on meta, `arcane_container_get` on individual). An action the
//! server does not serve (read-only mode, exclusions) is named with a note that it is not
//! available, so a guide never suggests a call that would be refused without saying so.

/// One guide: its URI slug, title, one-line description and template.
#[derive(Debug, Clone, Copy)]
pub struct Guide {
    pub slug: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    template: &'static str,
}

/// Every guide, served as `arcane://guides/<slug>`.
pub const GUIDES: &[Guide] = &[
    Guide {
        slug: "deploy-project",
        title: "Deploy or update a compose project",
        description: "Find, change, pull, deploy and check a compose project.",
        template: include_str!("guides/deploy-project.md"),
    },
    Guide {
        slug: "investigate-container",
        title: "Investigate a failing container",
        description: "State, configuration, logs, resource usage and a look inside.",
        template: include_str!("guides/investigate-container.md"),
    },
    Guide {
        slug: "clean-up-disk",
        title: "Clean up disk space",
        description: "Measure, then prune images, volumes and networks safely.",
        template: include_str!("guides/clean-up-disk.md"),
    },
    Guide {
        slug: "roll-back-swarm-service",
        title: "Roll back a swarm service",
        description: "Diagnose a bad swarm service update and roll it back.",
        template: include_str!("guides/roll-back-swarm-service.md"),
    },
];

impl Guide {
    /// The action IDs the guide mentions, in order of first mention.
    pub fn actions(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        let mut rest = self.template;
        while let Some(start) = rest.find("{{") {
            let Some(end) = rest[start..].find("}}") else {
                break;
            };
            let id = &rest[start + 2..start + end];
            if !out.contains(&id) {
                out.push(id);
            }
            rest = &rest[start + end + 2..];
        }
        out
    }

    /// The guide's text, each `{{id}}` replaced by `name(id)`, or by the ID with
    /// "(not available here)" when `name` returns `None`.
    pub fn render(&self, name: &dyn Fn(&str) -> Option<String>) -> String {
        let mut out = String::with_capacity(self.template.len() + 256);
        let mut rest = self.template;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let Some(end) = rest[start..].find("}}") else {
                out.push_str(&rest[start..]);
                return out;
            };
            let id = &rest[start + 2..start + end];
            match name(id) {
                Some(n) => out.push_str(&n),
                None => {
                    out.push('`');
                    out.push_str(id);
                    out.push_str("` (not available here)");
                }
            }
            rest = &rest[start + end + 2..];
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_withdrawn_actions_flagged() {
        let g = GUIDES.iter().find(|g| g.slug == "clean-up-disk").unwrap();
        let text = g.render(&|id| (id != "system.prune").then(|| format!("`{id}`")));
        assert!(!text.contains("{{"));
        assert!(text.contains("`image.prune`"));
        assert!(text.contains("`system.prune` (not available here)"));
    }
}
